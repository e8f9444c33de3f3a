"""Where a run display's events come from: a live run, or a stored one.

A display connects to its source and feeds every event to its `RunView`; it never asks
which kind of source it has. A live source also has work to run (the run itself) and takes
the operator's commands; a stored run has no work, and refuses commands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol

from icae_tui.display.view import RunView
from icae_tui.domain.events import Event

Deliver = Callable[[Event], None]


class RunSource(Protocol):
    run_id: str
    label: str  # what a display says before the run has started

    def connect(self, deliver: Deliver) -> None:
        """Call `deliver` with each event, in order (now, or as they happen)."""

    def job(self) -> Coroutine[Any, Any, Any] | None:
        """The work that produces the events (a live run's `execute()`), or None."""

    def answer(self, question_id: int, text: str) -> bool:
        """The operator's answer to a waiting question; False if nothing waits for it."""

    def set_responder(self, mode: str) -> bool | None:
        """Switch who answers; False if refused."""

    def now(self, view: RunView) -> float:
        """The time for the run's clock."""


class LiveRun(Protocol):
    """What a live source needs of a Run (`icae_tui.run.Run`, or a test double)."""

    run_id: str
    leftovers_removed: list[str]  # set by execute(): what its final sweep removed

    def subscribe(self, callback: Deliver) -> None: ...
    async def execute(self) -> Any: ...
    def answer(self, question_id: int, text: str) -> bool: ...
    def set_responder(self, mode: str) -> bool | None: ...


class LiveSource:
    """A run being executed: its events as they are published; the operator's commands."""

    def __init__(self, run: LiveRun, *, clock: Callable[[], float] = time.time) -> None:
        self.run = run
        self.run_id = run.run_id
        self.label = f"run {run.run_id} · starting…"
        self.clock = clock

    def connect(self, deliver: Deliver) -> None:
        self.run.subscribe(deliver)

    def job(self) -> Coroutine[Any, Any, Any]:
        return self.run.execute()

    def answer(self, question_id: int, text: str) -> bool:
        return self.run.answer(question_id, text)

    def set_responder(self, mode: str) -> bool | None:
        return self.run.set_responder(mode)

    def now(self, view: RunView) -> float:
        return self.clock()

    def removed_leftovers(self) -> list[str] | None:
        """Once the run's work is over: the containers its final sweep still found and
        removed (a cleanup bug if any); None when the run does not say."""
        removed = getattr(self.run, "leftovers_removed", None)
        return list(removed) if removed is not None else None


class ReplaySource:
    """A stored run: its events, delivered at once. Its clock is the events' timestamps."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.events = list(events)
        self.run_id = next((ev.run_id for ev in self.events if ev.run_id), "")
        self.label = f"run {self.run_id}" if self.run_id else "no run"

    def connect(self, deliver: Deliver) -> None:
        for ev in self.events:
            deliver(ev)

    def job(self) -> None:
        return None

    def answer(self, question_id: int, text: str) -> bool:
        return False

    def set_responder(self, mode: str) -> bool:
        return False

    def now(self, view: RunView) -> float:
        return view.last_ts if view.last_ts is not None else 0.0
