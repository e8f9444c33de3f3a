"""The deliveries that runs started from the console keep (the case detail re-runs cases on
them and opens shells in them: display/handle.py), discarded through their run's handle when
their run's screen leaves the screen stack, or when the app quits. A crash leaves them to
the reaper (they carry this process as their owner)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from textual.app import App
from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from icae_tui.display.handle import KeptDelivery, RunHandle

DISCARD_GROUP = "icae-discard-delivery"


class KeptDeliveries:
    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.tracked: list[tuple[Screen[Any], RunHandle]] = []  # runs that may keep one
        self.discarded: list[KeptDelivery] = []  # in the order their discard started
        self._subscribed = False

    def track(self, screen: Screen[Any], handle: RunHandle) -> None:
        """Discard what `handle`'s run keeps once `screen` is gone."""
        if not self._subscribed:
            self.app.screen_change_signal.subscribe(self.app, self._screens_changed)
            self._subscribed = True
        self.tracked.append((screen, handle))

    def _screens_changed(self, _screen: Screen[Any]) -> None:
        for screen, handle in list(self.tracked):
            if screen not in self.app.screen_stack:
                self.tracked.remove((screen, handle))
                self.discard(handle)

    def discard(self, handle: RunHandle) -> Worker[None] | None:
        """Remove the delivery `handle`'s run kept, in a worker (None: it keeps none, or it is
        already going)."""
        kept = handle.kept
        job = handle.discard()
        if kept is None or job is None:
            return None
        self.discarded.append(kept)
        return self.app.run_worker(
            job, name=f"discard {kept.label}", group=DISCARD_GROUP, exit_on_error=False
        )

    def pending(self) -> list[Worker[Any]]:
        return [
            w
            for w in self.app.workers
            if w.group == DISCARD_GROUP and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
        ]

    async def discard_all(self, timeout_s: float) -> None:
        """On quitting: every kept delivery goes; waits for the removals up to `timeout_s`."""
        for _screen, handle in self.tracked:
            self.discard(handle)
        self.tracked.clear()

        async def settle(worker: Worker[Any]) -> None:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()

        pending = self.pending()
        if pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(settle(w) for w in pending)), timeout_s)
