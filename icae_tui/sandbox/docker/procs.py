"""Processes of a local box as this host sees them: one named for good (pid and start time),
and whether it is doomed — gone, exiting, or with a SIGKILL already on its way (between a
`kill -9` and the target's exit /proc still shows it running)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icae_tui.sandbox.docker.hostview import process_start, process_state

_SIGKILL_BIT = 1 << (9 - 1)  # signal 9 in /proc/<pid>/status's pending masks


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
        if process_start(self.pid) != self.start or process_state(self.pid) in ("Z", "X", ""):
            return True
        return kill_pending(self.pid)


def kill_pending(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in ("SigPnd", "ShdPnd") and int(value.strip() or "0", 16) & _SIGKILL_BIT:
            return True
    return False


def children(pid: int) -> list[int]:
    """The direct children of `pid` (its main thread's), oldest first by pid order."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]
