"""Processes of a local box as this host sees them: one named for good (pid and start time),
and whether it is doomed — gone, exiting, or with a fatal signal already on its way (between
a `kill -9` and the target's exit /proc still shows it running).

A case's `timeout` signals its whole process group and exits as soon as its own child has:
the rest of the group may still be on its way out when the host looks. `let_dying_end`
waits for those, so what is alive after it was left running, never merely killed late."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from icae_tui.sandbox.docker.hostview import HostView, process_start, process_state

_SIGKILL_BIT = 1 << (9 - 1)  # signal 9 in /proc/<pid>/status's pending masks
# Signals whose default action is not to end the process: CHLD, CONT, STOP, TSTP, TTIN, TTOU,
# URG, WINCH. Every other one (1-64), pending, not blocked, ignored or caught, is fatal.
_HARMLESS = (17, 18, 19, 20, 21, 22, 23, 28)
_FATAL_BY_DEFAULT = ((1 << 64) - 1) & ~sum(1 << (s - 1) for s in _HARMLESS)
_PF_EXITING, _PF_SIGNALED = 0x4, 0x400  # task flags (/proc/<pid>/stat, field 9)
_GONE = ("Z", "X", "")
DYING_PATIENCE_S = 3.0  # past it, a process still exiting counts as alive
RUNNING_GRACE_S = 0.05  # a killed process seen running may be between dequeuing and exiting


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int  # clock ticks since boot: with the pid, one process for good

    @classmethod
    def of(cls, pid: int) -> Proc | None:
        start = process_start(pid)
        return cls(pid, start) if start is not None else None

    def doomed(self) -> bool:
        """Gone (or its pid reused), a zombie, or killed and not yet exited."""
        if process_start(self.pid) != self.start or process_state(self.pid) in _GONE:
            return True
        return kill_pending(self.pid)


def _masks(pid: int) -> dict[str, int]:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    masks = {}
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"):
            masks[name] = int(value.strip() or "0", 16)
    return masks


def kill_pending(pid: int) -> bool:
    m = _masks(pid)
    return bool((m.get("SigPnd", 0) | m.get("ShdPnd", 0)) & _SIGKILL_BIT)


def _flags(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return int(fields[6])
    except (OSError, IndexError, ValueError):
        return 0


def dying(pid: int) -> bool:
    """Gone, a zombie, exiting (the kernel has begun its exit), or with a signal pending
    that will end it (SIGKILL, or one it neither blocks, ignores nor catches whose default
    is to end it): nothing it does can save it now."""
    if process_state(pid) in _GONE or _flags(pid) & (_PF_EXITING | _PF_SIGNALED):
        return True
    m = _masks(pid)
    pending = m.get("SigPnd", 0) | m.get("ShdPnd", 0)
    if pending & _SIGKILL_BIT:
        return True
    spared = m.get("SigBlk", 0) | m.get("SigIgn", 0) | m.get("SigCgt", 0)
    return bool(pending & ~spared & _FATAL_BY_DEFAULT)


async def let_dying_end(
    view: HostView, base: set[int], *, patience_s: float = DYING_PATIENCE_S
) -> None:
    """Wait, at most `patience_s`, while the box's processes beyond `base` that are not yet
    zombies are all dying: they were killed (by the case's `timeout`, by their own group)
    and are only slow to exit on a loaded machine. Returns at once when one of them is
    alive and well (it was left running: waiting would change nothing), or after
    RUNNING_GRACE_S when every such one is running (it may be a killed one that has taken
    its signal and not yet marked itself exiting)."""
    start = time.monotonic()
    delay = 0.002
    while True:
        procs = view.procs()
        if procs is None:
            return
        live = [p for p in procs - base if process_state(p) not in _GONE]
        if not live:
            return
        well = [p for p in live if not dying(p)]
        elapsed = time.monotonic() - start
        if well and (elapsed >= RUNNING_GRACE_S or any(process_state(p) != "R" for p in well)):
            return
        if elapsed >= patience_s:
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


def children(pid: int) -> list[int]:
    """The direct children of `pid` (its main thread's), oldest first by pid order."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]
