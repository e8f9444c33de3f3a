"""What the host calls dying (`sandbox/docker/procs.py`) and the clock rule of a command's
result (`sandbox/capture.py`), on this host's own processes, with no engine.

A process with a fatal signal pending (stopped, so it stays pending) is dying, and the wait
for the dying lasts until it is gone; one that blocks the signal, or a process merely
asleep, is not, and nothing waits for it. A command timed out when the host's clock says
so, never because it exited 124."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from icae_tui.sandbox.capture import Capture, exec_result
from icae_tui.sandbox.docker.hostview import process_state
from icae_tui.sandbox.docker.procs import dying, let_dying_end
from tests.polling import eventually

SLEEPER = "import signal, sys, time\n{block}print('ready', flush=True)\ntime.sleep(120)\n"
BLOCK_TERM = "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"


class View:
    """What `let_dying_end` asks of a HostView: the box's processes (here: those listed
    that still exist)."""

    def __init__(self, pids: set[int]) -> None:
        self.pids = pids

    def procs(self) -> set[int]:
        return {p for p in self.pids if process_state(p) != ""}


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _sleeper(started: list[subprocess.Popen[str]], *, block_term: bool = False) -> int:
    code = SLEEPER.format(block=BLOCK_TERM if block_term else "")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    started.append(p)
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    return p.pid


def _pending(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("ShdPnd:"):
            return int(line.split()[1], 16)
    return 0


async def _stopped_with_term(pid: int) -> None:
    """SIGSTOP, then SIGTERM: stopped, the SIGTERM stays pending (and shows)."""
    os.kill(pid, signal.SIGSTOP)
    await eventually(lambda: process_state(pid) == "T", what="the process to stop")
    os.kill(pid, signal.SIGTERM)
    await eventually(lambda: _pending(pid) & (1 << (signal.SIGTERM - 1)), what="a pending TERM")


async def test_a_fatal_signal_pending_is_dying_and_waited_for_until_it_is_gone(spawn):
    pid = _sleeper(spawn)
    assert not dying(pid)  # asleep and well
    await _stopped_with_term(pid)
    assert dying(pid)
    waiting = asyncio.ensure_future(let_dying_end(View({pid}), set(), patience_s=60))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert not waiting.done()
    os.kill(pid, signal.SIGCONT)  # it takes its SIGTERM and ends
    await waiting
    assert process_state(pid) in ("Z", "X", "")  # ended (our child: a zombie until reaped)


async def test_a_blocked_signal_is_not_dying_and_nothing_waits_for_it(spawn):
    pid = _sleeper(spawn, block_term=True)
    await _stopped_with_term(pid)
    assert not dying(pid)
    await let_dying_end(View({pid}), set(), patience_s=60)  # type: ignore[arg-type]
    assert spawn[0].poll() is None  # it returned while the process lives


async def test_a_process_asleep_is_left_running_at_once(spawn):
    pid = _sleeper(spawn)
    await let_dying_end(View({pid}), set(), patience_s=60)  # type: ignore[arg-type]
    assert spawn[0].poll() is None and not dying(pid)


def _result(exit_code: int | None, duration: float, **kw: bool) -> bool:
    flags = {"watchdog_fired": False, "overflowed": False, **kw}
    res = exec_result(Capture(10), Capture(10), exit_code, duration, timeout_s=10, **flags)
    return res.timed_out


@pytest.mark.parametrize(
    ("exit_code", "duration", "flags", "timed_out"),
    [
        (124, 0.05, {}, False),  # an exit code like any other
        (137, 0.05, {}, False),
        (124, 10.02, {}, True),  # `timeout` fired
        (137, 12.01, {}, True),  # and had to SIGKILL
        (0, 14.1, {}, True),  # its end held past the limit by what `timeout` cannot see
        (0, 9.9, {}, False),
        (None, 18.0, {"watchdog_fired": True}, True),
        (None, 11.0, {"overflowed": True}, False),  # the output cap decides
    ],
)
def test_timed_out_is_told_by_the_hosts_clock(exit_code, duration, flags, timed_out):
    assert _result(exit_code, duration, **flags) is timed_out
