"""The case supervisor (`sandbox/assets/icae-super.c`) stopped by its case, as a program on
this host with no engine: every SIGCONT it got (the only way a stopped supervisor runs
again) is reported in a 'C' frame before the case's exit status, once; a case that did not
stop it gets none. (Its host side, on the real engine: tests/integration/test_case_clock.py.)"""

from __future__ import annotations

import os
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from icae_tui.sandbox.docker.keepalive import ASSETS, compile_static

HEAD = struct.Struct("<cI")


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    blob = compile_static(ASSETS / "icae-super.c")
    if blob is None:
        pytest.skip("no gcc with a static libc here: the pools run cases by exec")
    path = tmp_path_factory.mktemp("super") / "super"
    path.write_bytes(blob)
    path.chmod(0o755)
    return path


@pytest.fixture
def supervisor(binary: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert _frame(proc)[0] == b"H"
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def _frame(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    assert proc.stdout is not None
    kind, size = HEAD.unpack(proc.stdout.read(HEAD.size))
    return kind, proc.stdout.read(size)


def _kinds(proc: subprocess.Popen[bytes], script: str) -> list[bytes]:
    """The frame kinds of one case (`bash -c script`), output frames left out, up to its
    exit status."""
    assert proc.stdin is not None
    argv = ["bash", "-c", script]
    body = struct.pack("<II", len(argv), 0) + b"".join(p.encode() + b"\0" for p in ["/", *argv])
    proc.stdin.write(HEAD.pack(b"R", len(body)) + body)
    proc.stdin.flush()
    kinds = []
    while True:
        kind, _ = _frame(proc)
        if kind not in (b"O", b"E"):
            kinds.append(kind)
        if kind in (b"X", b"F"):
            return kinds


# The case's parent is the supervisor. `stopped`: wait until the kernel shows it stopped.
STOP_THEN_CONTINUE = "kill -STOP $PPID; kill -CONT $PPID; echo done"
STOPPED_THEN_CONTINUE = """kill -STOP $PPID
until [ "$(cut -d' ' -f3 /proc/$PPID/stat)" = T ]; do :; done
kill -CONT $PPID"""


@pytest.mark.parametrize("script", [STOP_THEN_CONTINUE, STOPPED_THEN_CONTINUE])
def test_a_stop_is_reported_once_before_the_exit_status(supervisor, script):
    assert _kinds(supervisor, script) == [b"C", b"X"]
    assert _kinds(supervisor, "echo next") == [b"X"]  # told once: the next case is clean


def test_a_stop_and_continue_between_cases_is_told_with_the_next_one(supervisor, tmp_path):
    """A case's leftover may stop and continue the supervisor after its exit was reported
    (here once told to, through a FIFO, and it says when it has, through another)."""
    go, done = tmp_path / "go", tmp_path / "done"
    os.mkfifo(go)
    os.mkfifo(done)
    leftover = (
        f"(read _ < {go}; kill -STOP $PPID; kill -CONT $PPID; echo > {done}) >/dev/null 2>&1 &"
    )
    assert _kinds(supervisor, leftover) == [b"X"]
    go.write_text("\n")
    done.read_text()
    assert _kinds(supervisor, "echo next") == [b"C", b"X"]


def test_a_case_that_leaves_it_alone_gets_no_report(supervisor):
    assert _kinds(supervisor, "echo ok; exit 3") == [b"X"]
