"""Links planted in the delivery image never make the host read, write or delete host files.

The delivery image is a commit of the agent's container: its layers hold whatever links the
agent made. The evaluator reads those layers (and the container's tmpfs work directory) on
the host, as root. Each case here replaces a planted link by a real directory and writes
files below it, at paths that — followed through the link on the host — name host files
made by the test. The case's report must name what the case wrote, whatever the host holds
there, and the host files must stay as they were.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from icae_tui.domain.task import Case
from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.docker import hostview
from tests.integration.tool_images import (
    TOOL,
    build_tool_images,
    command_task,
    evaluate,
    remove_tool_images,
)

pytestmark = pytest.mark.docker

TOOL_SCRIPT = "#!/bin/bash\necho ok\n"
HUGE = 20 * 1024**3  # sparse: costs no disk, but hashing it whole takes tens of seconds


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _scripts(host: Path, work: Path) -> dict[str, str]:
    """What each image holds besides the tool: the oracle the same directories, no links; the
    delivery links planted where a case will write."""
    return {
        "oracle": "mkdir -p /opt/plant /data",
        "delivery": " && ".join(
            [
                "mkdir -p /opt/plant",
                "ln -s / /opt/plant/abs",  # absolute, to the root
                "ln -s " + "../" * 14 + ".. /opt/plant/rel",  # relative, climbing past it
                f"ln -s {shlex.quote(str(host))} /opt/plant/hugedir",  # to a host folder
                f"rm -rf /data && ln -s {shlex.quote(str(work))} /data",  # the work directory
            ]
        ),
    }


@pytest.fixture(scope="module")
def host_files(tmp_path_factory) -> tuple[Path, Path]:
    host = tmp_path_factory.mktemp("hostside")
    (host / "same.txt").write_text("S\n")  # what the case writes there too
    (host / "differs.txt").write_text("host\n")
    with open(host / "huge.bin", "wb") as f:
        f.truncate(HUGE)
    work = tmp_path_factory.mktemp("hostwork")
    (work / "keep-me").write_text("host file\n")
    return host, work


@pytest.fixture(scope="module")
def planted_images(host_files) -> Iterator[Sides]:
    files = {role: {TOOL: TOOL_SCRIPT} for role in ("oracle", "delivery")}
    sides = asyncio.run(build_tool_images("links", files, _scripts(*host_files)))
    yield sides
    asyncio.run(remove_tool_images(sides))


class _HashSpy:
    """Stands in for `hashlib` in hostview: counts hashes started on the event loop's thread."""

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.calls = 0
        self.on_loop = 0

    def sha256(self, *args: bytes) -> hashlib._Hash:
        self.calls += 1
        if threading.get_ident() == self.loop_thread:
            self.on_loop += 1
        return hashlib.sha256(*args)


def _writes(link: str, host: Path) -> str:
    """Replace the link by a directory and write, below it, where the host has files."""
    d = f"/opt/plant/{link}{host}"
    return (
        f"rm -f /opt/plant/{link}; mkdir -p {d}; printf 'S\\n' > {d}/same.txt; "
        f"printf 'case\\n' > {d}/differs.txt; printf 'new\\n' > {d}/absent.txt; echo ok"
    )


async def test_planted_links_are_never_followed_on_the_host(
    planted_images, host_files, monkeypatch
):
    host, work = host_files
    spy = _HashSpy()
    monkeypatch.setattr(hostview, "hashlib", spy)
    cases = [
        Case(command=_writes("abs", host), pattern="absolute"),
        Case(command=_writes("rel", host), pattern="relative"),
        Case(
            command="rm -f /opt/plant/hugedir; mkdir -p /opt/plant/hugedir; "
            "echo x > /opt/plant/hugedir/huge.bin; echo ok",
            pattern="huge",
        ),
        Case(
            command="cat fixture.txt; echo more > out.txt; ls",
            files={"fixture.txt": "fixture\n"},
            pattern="workdir",
        ),
    ]
    task = command_task("links", cases, timeout_s=20)
    started = time.monotonic()
    results = await evaluate(task, planted_images, run_id="test-links", concurrency=1)
    print(f"\n4 cases with planted links: {time.monotonic() - started:.1f} s")

    for case_id, link in (("hidden/h#0", "abs"), ("hidden/h#1", "rel")):
        changes = {c.path: c for c in results[case_id].delivery.changes}
        d = f"/opt/plant/{link}{host}"
        # added, with the case's content: not left out (same as the host file), not
        # `modified` (a host file exists there), whatever the host holds
        for name, text in (("same.txt", "S\n"), ("differs.txt", "case\n"), ("absent.txt", "new\n")):
            change = changes.get(f"{d}/{name}")
            assert change is not None, (case_id, name, sorted(changes))
            assert (change.change, change.sha256) == ("added", _sha(text)), (case_id, change)

    huge = {c.path: c for c in results["hidden/h#2"].delivery.changes}
    change = huge["/opt/plant/hugedir/huge.bin"]
    assert (change.change, change.sha256, change.size) == ("added", _sha("x\n"), 2)

    # the work directory is a link to a host folder in the delivery image: the fixture went
    # into the container's tmpfs (the case read it) and the host folder was never touched
    workdir = results["hidden/h#3"]
    assert workdir.delivery.stdout == "fixture\nfixture.txt\nout.txt\n", workdir.delivery
    assert workdir.verdict == "accepted", workdir.reason
    assert sorted(os.listdir(work)) == ["keep-me"]
    assert (work / "keep-me").read_text() == "host file\n"
    assert (host / "same.txt").read_text() == "S\n" and (
        host / "differs.txt"
    ).read_text() == "host\n"
    assert os.stat(host / "huge.bin").st_size == HUGE

    # every hash ran off the event loop: a slow walk never stalls the console
    assert spy.calls > 0
    assert spy.on_loop == 0, f"{spy.on_loop} of {spy.calls} hashes ran on the event loop"
