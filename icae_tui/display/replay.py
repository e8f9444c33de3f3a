"""Replaying a stored run through the same panes, at its own pace: at the original speed,
faster, paused and stepped one event at a time, or moved to any point of its timeline.

`PacedReplay` is a run source (see `sources.RunSource`) whose job delivers the stored
events with the gaps between their timestamps (divided by the speed; an idle gap longer
than `max_gap_s` is shortened to it, so a demo does not sit through a slow build). Moving
back is a reset followed by the events up to the new point, delivered at once: a display
rebuilds its `RunView` from them. Nothing here knows about Textual; the waits go through
an injectable `sleep`, so tests need no clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from icae_tui.display.feed import Deliver
from icae_tui.display.view import RunView
from icae_tui.domain.events import Event

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
Sleep = Callable[[float], Awaitable[Any]]


async def _first(*waits: Awaitable[Any]) -> int:
    """Wait for the first of `waits` to finish; its index. The others are cancelled."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        return next(i for i, t in enumerate(tasks) if t in done)
    finally:
        for task in tasks:
            task.cancel()


class PacedReplay:
    def __init__(
        self,
        events: Iterable[Event],
        *,
        speed: float = 1.0,
        max_gap_s: float = 2.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.events = list(events)
        self.run_id = next((ev.run_id for ev in self.events if ev.run_id), "")
        self.label = f"replay of run {self.run_id}" if self.run_id else "no run"
        self.speed = speed
        self.max_gap_s = max_gap_s
        self.position = 0  # events delivered so far
        self._sleep = sleep
        self._deliver: Deliver | None = None
        self._reset: Callable[[], None] | None = None
        self._running = asyncio.Event()
        self._running.set()
        self._moved = asyncio.Event()  # a seek or a step: the pending wait is over

    # --- the source protocol ---------------------------------------------------------

    def connect(self, deliver: Deliver, reset: Callable[[], None] | None = None) -> None:
        """`reset` is called before the events up to a point are delivered again (a seek
        backwards): the display starts over with a fresh view."""
        self._deliver, self._reset = deliver, reset

    async def job(self) -> None:
        while not self.finished:
            self._moved.clear()
            if self.paused:  # until resumed, or moved to the end by a step or a seek
                await _first(self._running.wait(), self._moved.wait())
                continue
            gap = self._gap(self.position)
            if gap > 0:
                slept = await _first(self._sleep(gap), self._moved.wait()) == 0
                if not slept:
                    continue  # moved or paused meanwhile: wait from the new state
            if not self.paused and not self.finished:
                self._emit_next()

    def answer(self, question_id: int, text: str) -> bool:
        return False

    def set_responder(self, mode: str) -> bool:
        return False

    def now(self, view: RunView) -> float:
        return view.last_ts if view.last_ts is not None else 0.0

    # --- controls ----------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def finished(self) -> bool:
        return self.position >= len(self.events)

    def pause(self) -> None:
        self._running.clear()
        self._moved.set()  # a wait under way ends: nothing more until resumed

    def resume(self) -> None:
        self._running.set()

    def toggle(self) -> bool:
        """Pause or resume; True when it now plays."""
        if self.paused:
            self.resume()
        else:
            self.pause()
        return not self.paused

    def faster(self) -> float:
        self.speed = next((s for s in SPEEDS if s > self.speed), self.speed)
        return self.speed

    def slower(self) -> float:
        self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), self.speed)
        return self.speed

    def step(self) -> bool:
        """Deliver the next event now (pausing first); False at the end."""
        self.pause()
        if self.finished:
            return False
        self._emit_next()
        self._moved.set()
        return True

    def seek(self, position: int) -> None:
        """Move to `position` (0 … len): forward delivers the events in between at once;
        backward resets the display and delivers the events up to it."""
        position = max(0, min(position, len(self.events)))
        if position < self.position:
            if self._reset is not None:
                self._reset()
            self.position = 0
        while self.position < position:
            self._emit_next()
        self._moved.set()

    def seek_time(self, fraction: float) -> None:
        """Move to a point of the run's timeline, as a fraction of its duration."""
        if not self.events:
            return
        start, end = self.events[0].ts, self.events[-1].ts
        target = start + max(0.0, min(1.0, fraction)) * (end - start)
        self.seek(next((i for i, ev in enumerate(self.events) if ev.ts > target), len(self.events)))

    # --- the timeline --------------------------------------------------------------------

    @property
    def duration_s(self) -> float:
        return self.events[-1].ts - self.events[0].ts if self.events else 0.0

    @property
    def elapsed_s(self) -> float:
        if not self.events or self.position == 0:
            return 0.0
        return self.events[self.position - 1].ts - self.events[0].ts

    def _gap(self, i: int) -> float:
        if i == 0 or self.speed <= 0:
            return 0.0
        raw = self.events[i].ts - self.events[i - 1].ts
        return min(max(raw, 0.0), self.max_gap_s) / self.speed

    def _emit_next(self) -> None:
        ev = self.events[self.position]
        self.position += 1
        if self._deliver is not None:
            self._deliver(ev)
