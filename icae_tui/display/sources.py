"""Where a run display's events come from: a live run, or a stored one.

A display connects to its source and feeds every event to its `RunView`; it never asks
which kind of source it has: the source's `handle()` (`handle.py`) says what the run can do.
A live source also has work to run (the run itself) and takes the operator's commands
(answers, the responder, pausing the agent); a stored run has no work, and refuses commands.
Either gives the events seen so far (`recorded`), for an export. A run that something else
executes (a batch's: `AttachedSource`) is live too, but its work is not the display's: the
display is given what the run stored so far, then follows it, and takes its commands.

A live run keeps its own record of them (a `Run`'s `RunLog`, within the run's bound,
icae_tui/store/bounds.py): the source hands that out and keeps no second list, which would grow
with every event of an unbounded trace. Only a run without a log (a test double) has its
events kept by the source.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol

from icae_tui.display.feed import Deliver, Feed
from icae_tui.display.handle import Keep, RunHandle, RunKind
from icae_tui.display.view import RunView
from icae_tui.domain.events import Event, RunFinished, RunStarted
from icae_tui.domain.task import Task


class RunSource(Feed, Protocol):
    def handle(self) -> RunHandle:
        """What the run can do, and the way to do it (the same handle each time)."""


def first_start(events: Iterable[Event]) -> RunStarted | None:
    """A stored run's start: it names the task whose cases a case detail shows."""
    return next((ev for ev in events if isinstance(ev, RunStarted)), None)


class RunRecord(Protocol):
    """What a run keeps of its events (`icae_tui.runs.log.RunLog`)."""

    @property
    def events(self) -> list[Event]:
        """The events published so far, in order (a copy)."""


class LiveRun(Protocol):
    """What a live source needs of a Run (`icae_tui.runs.run.Run`, or a test double; a run may
    also have a `log`, a `RunRecord`)."""

    run_id: str
    leftovers_removed: list[str]  # set by execute(): what its final sweep removed

    def subscribe(self, callback: Deliver) -> None: ...
    async def execute(self) -> Any: ...
    def answer(self, question_id: int, text: str) -> bool: ...
    def set_responder(self, mode: str) -> bool | None: ...
    async def pause(self) -> bool: ...
    async def resume(self) -> bool: ...


class LiveSource:
    """A run being executed: its events as they are published; the operator's commands."""

    def __init__(
        self,
        run: LiveRun,
        *,
        clock: Callable[[], float] = time.time,
        task: Task | None = None,
        keep: Keep | None = None,
    ) -> None:
        """`task`: the run's own (its cases, for the case detail); `keep`: how the run's
        outcome keeps its delivery (`icae_tui/runs/kept.py`; None: it keeps none)."""
        self.run = run
        self.run_id = run.run_id
        self.label = f"run {run.run_id} · starting…"
        self.clock = clock
        self._handle = RunHandle(
            self, RunKind.LIVE, task=task, keep=keep, leftovers=self.removed_leftovers
        )
        log = getattr(run, "log", None)
        self.log: RunRecord | None = log if hasattr(log, "events") else None
        # what the run delivered, kept here only when the run keeps no record of its own
        self.events: list[Event] = []

    def connect(self, deliver: Deliver) -> None:
        if self.log is not None:
            self.run.subscribe(deliver)
            return

        def delivered(ev: Event) -> None:
            self.events.append(ev)
            deliver(ev)

        self.run.subscribe(delivered)

    def job(self) -> Coroutine[Any, Any, Any]:
        return self.run.execute()

    def answer(self, question_id: int, text: str) -> bool:
        return self.run.answer(question_id, text)

    def set_responder(self, mode: str) -> bool | None:
        return self.run.set_responder(mode)

    async def pause_agent(self) -> bool:
        return bool(await self.run.pause())

    async def resume_agent(self) -> bool:
        return bool(await self.run.resume())

    def recorded(self) -> list[Event]:
        return self.log.events if self.log is not None else list(self.events)

    def now(self, view: RunView) -> float:
        return self.clock()

    def handle(self) -> RunHandle:
        return self._handle

    def removed_leftovers(self) -> list[str] | None:
        """Once the run's work is over: the containers its final sweep still found and
        removed (a cleanup bug if any); None when the run does not say."""
        removed = getattr(self.run, "leftovers_removed", None)
        return list(removed) if removed is not None else None


class AttachedSource(LiveSource):
    """A live run that something else executes (a batch's run): a display attached to it has
    no work to run (`job()` is None), is given the events the run stored before it came, then
    each new one, and operates the run like its own — answers, the responder, pausing the
    agent; `cancel` cancels that run alone (None: it cannot be cancelled from here). Leaving
    the display leaves the run going."""

    def __init__(
        self,
        run: LiveRun,
        *,
        clock: Callable[[], float] = time.time,
        task: Task | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(run, clock=clock, task=task)
        self.label = f"run {run.run_id} · attached…"
        self.over = False  # its RunFinished is in: the work is done with
        self._handle = RunHandle(
            self, RunKind.LIVE, task=task, leftovers=self.removed_leftovers,
            elsewhere=lambda: not self.over, cancel=cancel,
        )  # fmt: skip
        if self.log is not None:
            self.over = any(isinstance(ev, RunFinished) for ev in self.log.events)

    def connect(self, deliver: Deliver) -> None:
        """What the run stored so far, then what it publishes: on the one loop, nothing can be
        published between the two, so no event comes twice nor goes missing."""

        def delivered(ev: Event) -> None:
            if isinstance(ev, RunFinished):
                self.over = True
            deliver(ev)

        for ev in self.log.events if self.log is not None else ():
            delivered(ev)
        super().connect(delivered)

    def job(self) -> None:  # type: ignore[override]  # its work is the batch's
        return None


class ReplaySource:
    """A stored run: its events, delivered at once. Its clock is the events' timestamps."""

    def __init__(
        self, events: Iterable[Event] = (), *, catalog: Mapping[str, Task] | None = None
    ) -> None:
        """`catalog`: the tasks a case detail takes the run's cases from."""
        self.events = list(events)
        self.run_id = next((ev.run_id for ev in self.events if ev.run_id), "")
        self.label = f"run {self.run_id}" if self.run_id else "no run"
        self._handle = RunHandle(
            self, RunKind.REPLAY, catalog=catalog, started=first_start(self.events)
        )

    def connect(self, deliver: Deliver) -> None:
        for ev in self.events:
            deliver(ev)

    def job(self) -> None:
        return None

    def answer(self, question_id: int, text: str) -> bool:
        return False

    def set_responder(self, mode: str) -> bool:
        return False

    async def pause_agent(self) -> bool:
        return False

    async def resume_agent(self) -> bool:
        return False

    def recorded(self) -> list[Event]:
        return list(self.events)

    def now(self, view: RunView) -> float:
        return view.last_ts if view.last_ts is not None else 0.0

    def handle(self) -> RunHandle:
        return self._handle
