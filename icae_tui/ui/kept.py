"""The deliveries that runs started from the console keep (`RunConfig.keep_delivery`: the
case detail re-runs cases on them and opens shells in them), discarded when their run's
screen leaves the screen stack, or when the app quits. A crash leaves them to the reaper
(they carry this process as their owner)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from textual.app import App
from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from icae_tui.evaluation import rerun as rerun_core
from icae_tui.evaluation.differential import Sides

DISCARD_GROUP = "icae-discard-delivery"


def kept_sides(screen: Screen[Any]) -> Sides | None:
    """The images a run screen's run kept, once it has completed (`RunOutcome.sides`)."""
    sides = getattr(getattr(screen, "outcome", None), "sides", None)
    return sides if isinstance(sides, Sides) else None


class KeptDeliveries:
    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.screens: list[Screen[Any]] = []  # run screens whose delivery may be kept
        self.discarded: list[Sides] = []  # in the order their discard started
        self._subscribed = False

    def track(self, screen: Screen[Any]) -> None:
        """Discard what `screen`'s run keeps once the screen is gone."""
        if not self._subscribed:
            self.app.screen_change_signal.subscribe(self.app, self._screens_changed)
            self._subscribed = True
        self.screens.append(screen)

    def _screens_changed(self, _screen: Screen[Any]) -> None:
        for screen in list(self.screens):
            if screen not in self.app.screen_stack:
                self.screens.remove(screen)
                self.discard(screen)

    def discard(self, screen: Screen[Any]) -> Worker[None] | None:
        """Remove the delivery `screen`'s run kept, in a worker (None: it kept none)."""
        sides = kept_sides(screen)
        if sides is None or sides in self.discarded:
            return None
        self.discarded.append(sides)
        return self.app.run_worker(
            rerun_core.discard_delivery(sides),
            name=f"discard {sides.delivery_image}",
            group=DISCARD_GROUP,
            exit_on_error=False,
        )

    def pending(self) -> list[Worker[Any]]:
        return [
            w
            for w in self.app.workers
            if w.group == DISCARD_GROUP and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
        ]

    async def discard_all(self, timeout_s: float) -> None:
        """On quitting: every kept delivery goes; waits for the removals up to `timeout_s`."""
        for screen in self.screens:
            self.discard(screen)
        self.screens.clear()

        async def settle(worker: Worker[Any]) -> None:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()

        pending = self.pending()
        if pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(settle(w) for w in pending)), timeout_s)
