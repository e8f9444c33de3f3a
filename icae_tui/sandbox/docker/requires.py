"""Declared dependencies (`[oracle] requires`, `[fuzz] requires`) installed at image build.

A requirement is `pip:NAME[SPEC]` or `npm:NAME[@RANGE]` (domain/task.py REQUIREMENT). The pip
ones go into one `pip install` (one resolver run sees them all, so their versions agree),
the npm ones into one `npm install --global`. Each line runs in a build container that
reaches the registry (the engine's bridge network, that build only), with the host's CA
bundle so a TLS-inspecting egress proxy is trusted as on the host; the bundle is removed
again before the image is committed. Every value is shell-quoted though the pattern already
keeps quotes and `;` out: the pattern may widen, the quoting stays.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from icae_tui.domain.task import Ecosystem
from icae_tui.errors import ImageBuildError
from icae_tui.sandbox.base import ExecResult, ProgressFn

if TYPE_CHECKING:
    from icae_tui.sandbox.docker.containers import Container

HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# At the root, not in /tmp: a tar entry for /tmp would reset its mode to 0755, and apt on
# trixie (its signature check runs as _apt) then cannot write there. Removed before the commit.
BUILD_CA = "/icae-build-ca.crt"
CA_VARS = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
           "npm_config_cafile")  # fmt: skip
INSTALL_TIMEOUT_S = 1800.0
PIP_INSTALL = ("python3 -m pip install --no-cache-dir --disable-pip-version-check "
               "--break-system-packages")  # fmt: skip
NPM_INSTALL = "npm install --global --no-fund --no-audit"
_PREFIX = {"pip": Ecosystem.PYPI, "npm": Ecosystem.NPM}


@dataclass(frozen=True)
class Client:
    """What installs one ecosystem's requirements in an image."""

    name: str
    install: str  # the command, before the quoted requirements
    debian: str  # the Debian package that brings it (the runtime layer's `[image] packages`)
    probe: str  # exits 0 when the image has it


CLIENTS = {
    Ecosystem.PYPI: Client("pip", PIP_INSTALL, "python3-pip", "python3 -m pip --version"),
    Ecosystem.NPM: Client("npm", NPM_INSTALL, "npm", "npm --version"),
}


@dataclass(frozen=True)
class InstallStep:
    ecosystem: Ecosystem
    requires: tuple[str, ...]  # as the task wrote them, `pip:`/`npm:` included

    @property
    def line(self) -> str:
        specs = (r.split(":", 1)[1] for r in self.requires)
        return f"{CLIENTS[self.ecosystem].install} " + " ".join(shlex.quote(s) for s in specs)


def ecosystem_of(requirement: str) -> Ecosystem:
    prefix = requirement.split(":", 1)[0]
    if prefix not in _PREFIX:
        raise ValueError(f"not a requirement: {requirement!r} (pip:NAME or npm:NAME)")
    return _PREFIX[prefix]


def install_steps(requires: list[str] | tuple[str, ...]) -> list[InstallStep]:
    """One step per ecosystem (pip first), each requirement once, in the task's order."""
    by: dict[Ecosystem, list[str]] = {}
    for requirement in dict.fromkeys(requires):
        by.setdefault(ecosystem_of(requirement), []).append(requirement)
    return [InstallStep(e, tuple(by[e])) for e in (Ecosystem.PYPI, Ecosystem.NPM) if e in by]


def debian_clients(requires: list[str] | tuple[str, ...]) -> list[str]:
    """The Debian packages that bring the clients these requirements need."""
    return [CLIENTS[step.ecosystem].debian for step in install_steps(requires)]


def clients_probe(requires: list[str] | tuple[str, ...]) -> str:
    """A shell line that exits 0 when an image has every client these requirements need."""
    return " && ".join(CLIENTS[step.ecosystem].probe for step in install_steps(requires)) or "true"


async def registry_exec(
    c: Container, line: str, *, timeout_s: float = INSTALL_TIMEOUT_S
) -> ExecResult:
    """`line` in a build container that reaches a registry, trusting the host's CA bundle."""
    env: dict[str, str] = {}
    if HOST_CA_BUNDLE.is_file():  # a TLS-inspecting egress proxy is trusted as on the host
        await c.put_files({BUILD_CA: HOST_CA_BUNDLE.read_bytes()})
        env = dict.fromkeys(CA_VARS, BUILD_CA)
    try:
        return await c.exec(line, timeout_s=timeout_s, env=env)
    finally:
        if env:
            await c.exec(f"rm -f {BUILD_CA}", timeout_s=60)


def name_of(requirement: str) -> str:
    """The package's name: `pip:PyYAML>=6` → PyYAML, `npm:@types/node@^20` → @types/node."""
    spec = requirement.split(":", 1)[1]
    if ecosystem_of(requirement) is Ecosystem.NPM:
        scope, rest = ("@", spec[1:]) if spec.startswith("@") else ("", spec)
        return scope + rest.split("@", 1)[0]
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
    return match.group(0) if match else spec


def blamed(step: InstallStep, output: str) -> list[str]:
    """The step's requirements its client's error lines name (pip's `No matching
    distribution found for NAME`, npm's `404 'NAME@*' is not in this registry`)."""
    errors = "\n".join(line for line in output.splitlines()
                       if "ERROR" in line or "ERR!" in line or "error" in line)  # fmt: skip
    return [r for r in step.requires if re.search(
        rf"(?<![\w.@/-]){re.escape(name_of(r))}(?![\w.-])", errors, re.IGNORECASE)]  # fmt: skip


def _tail(res: ExecResult) -> str:
    raw = (res.stderr_tail or res.stderr or res.stdout_tail or res.stdout)[-2000:]
    return raw.decode("utf-8", errors="replace").strip()


async def install_requires(
    c: Container, requires: list[str] | tuple[str, ...], progress: ProgressFn, what: str,
    *, field: str,
) -> None:  # fmt: skip
    """Install `requires` (the task's `field`, e.g. `[oracle] requires`) into the build
    container `c`; ImageBuildError naming the requirements when a step fails."""
    for step in install_steps(requires):
        client = CLIENTS[step.ecosystem]
        named = ", ".join(step.requires)
        probe = await c.exec(client.probe, timeout_s=120)
        if probe.exit_code != 0:
            raise ImageBuildError(f"{what}: {field} {named}: the image has no {client.name} "
                                  f"(add {client.debian} to [image] packages)")  # fmt: skip
        progress(f"{what}: $ {step.line}")
        res = await registry_exec(c, step.line)
        if res.exit_code != 0:
            why = "timed out" if res.timed_out else f"exited {res.exit_code}"
            tail = _tail(res)
            culprits = blamed(step, tail)
            if culprits and len(culprits) < len(step.requires):
                named = f"{', '.join(culprits)} (of {named})"
            raise ImageBuildError(f"{what}: installing {field} {named}: `{step.line}` {why} "
                                  "(does it exist, and is the registry reachable from the "
                                  f"engine's bridge network?):\n{tail}")  # fmt: skip
