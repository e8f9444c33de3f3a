"""Pausing the agent: the operator stops it to look, then lets it go on.

A host-driven agent (scripted, the model agent) stops at its next step: `AgentSession.step`
waits at the gate, so a command or model call under way finishes first. A CLI agent runs
inside its container, so the run freezes the container itself (the engine's cgroup freezer)
and thaws it on resume. Paused time does not count against the agent's wall-clock limit.
"""

from __future__ import annotations

import asyncio


class PauseGate:
    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self.waiting = asyncio.Event()  # set while the agent waits at the gate
        self.paused_total_s = 0.0  # over the run, for the time limit
        self._since: float | None = None

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    def close(self) -> bool:
        """Pause; False when already paused."""
        if self.paused:
            return False
        self._open.clear()
        self._since = asyncio.get_running_loop().time()
        return True

    def open(self) -> float | None:
        """Resume; how long it was paused, or None when it was not."""
        if not self.paused or self._since is None:
            return None
        paused_for = asyncio.get_running_loop().time() - self._since
        self.paused_total_s += paused_for
        self._since = None
        self._open.set()
        return paused_for

    async def wait(self) -> None:
        if self._open.is_set():
            return
        self.waiting.set()
        try:
            await self._open.wait()
        finally:
            self.waiting.clear()
