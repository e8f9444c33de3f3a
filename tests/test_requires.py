"""Declared dependencies → install lines (sandbox/docker/requires.py), without an engine: the
pip/npm split, the quoting, the clients an image needs, and what a failed install names (a
fake build container answers as one would)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

import pytest

from icae_tui.domain.task import Ecosystem, FuzzSpec, OracleSpec
from icae_tui.errors import ImageBuildError
from icae_tui.sandbox.base import ExecResult
from icae_tui.sandbox.docker import requires as req
from icae_tui.sandbox.docker.fuzz import fuzz_image_name
from icae_tui.sandbox.docker.requires import (
    InstallStep,
    blamed,
    clients_probe,
    debian_clients,
    install_requires,
    install_steps,
    name_of,
)

PIP = "python3 -m pip install --no-cache-dir --disable-pip-version-check --break-system-packages"
NPM = "npm install --global --no-fund --no-audit"


def test_pip_and_npm_requirements_go_to_one_call_each_pip_first_in_the_tasks_order():
    steps = install_steps(["npm:minimist@^1.2", "pip:PyYAML>=6", "npm:@types/node@>=18 <21",
                           "pip:click==8.1.7", "pip:PyYAML>=6"])  # fmt: skip
    assert [(s.ecosystem, s.requires) for s in steps] == [
        (Ecosystem.PYPI, ("pip:PyYAML>=6", "pip:click==8.1.7")),
        (Ecosystem.NPM, ("npm:minimist@^1.2", "npm:@types/node@>=18 <21")),
    ]
    assert steps[0].line == f"{PIP} 'PyYAML>=6' click==8.1.7"
    assert steps[1].line == f"{NPM} 'minimist@^1.2' '@types/node@>=18 <21'"
    assert install_steps([]) == []


def test_every_value_is_quoted_whatever_got_past_the_pattern():
    (step,) = install_steps(["pip:x;touch /pwned", "pip:$(id)", "pip:a'b"])
    assert shlex.split(step.line)[-3:] == ["x;touch /pwned", "$(id)", "a'b"]  # one word each
    assert step.line.endswith(" 'x;touch /pwned' '$(id)' 'a'\"'\"'b'")


def test_the_task_format_takes_the_requirements_these_lines_are_made_of():
    good = ["pip:PyYAML", "pip:requests[socks]>=2.31,<3", "npm:minimist@^1.2.8",
            "npm:@types/node@20", "npm:typescript"]  # fmt: skip
    assert OracleSpec(entry="x", requires=good).requires == good
    for bad in ("PyYAML", "pip:x;rm", "npm:Bad", "gem:rails", "pip:a b"):
        with pytest.raises(ValueError, match="not a requirement"):
            FuzzSpec(requires=[bad])


def test_the_clients_an_image_needs_and_how_to_tell_it_has_them():
    assert debian_clients(["npm:a", "pip:b"]) == ["python3-pip", "npm"]
    assert debian_clients(["pip:b"]) == ["python3-pip"] and debian_clients([]) == []
    assert clients_probe(["npm:a", "pip:b"]) == "python3 -m pip --version && npm --version"
    assert clients_probe([]) == "true"


def test_names_and_what_a_clients_error_lines_name():
    assert [name_of(r) for r in ("pip:PyYAML>=6", "pip:x[a]==1", "npm:@types/node@^20",
                                 "npm:minimist")] == ["PyYAML", "x", "@types/node", "minimist"]  # fmt: skip
    step = InstallStep(Ecosystem.PYPI, ("pip:six", "pip:nosuchthing>=1", "pip:PyYAML"))
    pip_says = ("Collecting six\nERROR: Could not find a version that satisfies the requirement "
                "nosuchthing>=1 (from versions: none)\nERROR: No matching distribution found "
                "for nosuchthing>=1")  # fmt: skip
    assert blamed(step, pip_says) == ["pip:nosuchthing>=1"]
    npm = InstallStep(Ecosystem.NPM, ("npm:left-pad", "npm:nope-nope"))
    npm_says = "npm ERR! code E404\nnpm ERR! 404  'nope-nope@*' is not in this registry."
    assert blamed(npm, npm_says) == ["npm:nope-nope"]


def test_a_fuzz_image_is_named_by_its_base_and_requirements_in_any_order():
    a = fuzz_image_name("sha256:1", ["pip:b", "pip:a"])
    assert a == fuzz_image_name("sha256:1", ["pip:a", "pip:b", "pip:a"])
    assert a.startswith("icae-fuzz:") and a != fuzz_image_name("sha256:2", ["pip:a", "pip:b"])


@dataclass
class FakeBuild:
    """A build container: each exec's command is kept; `answers` maps a command's start to
    its (exit code, stderr)."""

    answers: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)

    async def exec(self, command: str, *, timeout_s: float, env: dict[str, str] | None = None):
        self.calls.append((command, env or {}))
        code, err = next((v for k, v in self.answers.items() if command.startswith(k)), (0, b""))
        return ExecResult(code, b"", err, stderr_tail=err)

    async def put_files(self, files: dict[str, bytes]) -> None:
        self.files |= files


async def test_the_install_runs_with_the_hosts_ca_bundle_and_removes_it(tmp_path, monkeypatch):
    bundle = tmp_path / "ca.crt"
    bundle.write_bytes(b"---CA---")
    monkeypatch.setattr(req, "HOST_CA_BUNDLE", bundle)
    box = FakeBuild()
    seen: list[str] = []
    await install_requires(box, ["pip:six", "npm:minimist"], seen.append, "img",
                           field="[oracle] requires")  # fmt: skip
    commands = [c for c, _ in box.calls]
    assert commands == ["python3 -m pip --version", f"{PIP} six", f"rm -f {req.BUILD_CA}",
                        "npm --version", f"{NPM} minimist", f"rm -f {req.BUILD_CA}"]  # fmt: skip
    assert box.files == {req.BUILD_CA: b"---CA---"}
    env = dict(box.calls)[f"{PIP} six"]
    assert env["PIP_CERT"] == env["npm_config_cafile"] == req.BUILD_CA
    assert seen == [f"img: $ {PIP} six", f"img: $ {NPM} minimist"]


async def test_an_image_without_the_client_is_told_which_package_brings_it(monkeypatch, tmp_path):
    monkeypatch.setattr(req, "HOST_CA_BUNDLE", tmp_path / "none")
    box = FakeBuild({"python3 -m pip --version": (1, b"No module named pip")})
    with pytest.raises(ImageBuildError) as err:
        await install_requires(box, ["pip:six"], lambda _m: None, "icae-oracle-t:1",
                               field="[oracle] requires")  # fmt: skip
    assert str(err.value) == ("icae-oracle-t:1: [oracle] requires pip:six: the image has no pip "
                              "(add python3-pip to [image] packages)")  # fmt: skip


async def test_a_failed_install_names_the_requirement_its_client_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(req, "HOST_CA_BUNDLE", tmp_path / "none")
    refused = b"ERROR: No matching distribution found for nosuchthing"
    box = FakeBuild({PIP: (1, refused)})
    with pytest.raises(ImageBuildError) as err:
        await install_requires(box, ["pip:six", "pip:nosuchthing"], lambda _m: None, "img",
                               field="[fuzz] requires")  # fmt: skip
    message = str(err.value)
    assert message.startswith("img: installing [fuzz] requires pip:nosuchthing (of pip:six, "
                              f"pip:nosuchthing): `{PIP} six nosuchthing` exited 1")  # fmt: skip
    assert message.endswith(refused.decode())
