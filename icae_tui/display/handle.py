"""What the console may do with one run: its handle.

A run source (`sources.py`) gives a display its events; its handle (`source.handle()`) says
what the run can do, as typed capabilities, and does it: a live run takes answers, a switch
of responder, a pause of its agent and a cancel while its work goes on; once it has completed
and kept its delivery (`RunConfig.keep_delivery`), a case can be re-run on it, as it was or
edited, a shell opened in the delivery or the oracle, and the delivery discarded. A stored run
(a replay) can do none of these. The case detail learns everything it shows and does from
the handle (`case_context`): the case as the run has it, and the kept delivery or why there
is none.

The kept delivery's engine work is not here: a live source is given a `Keep` that turns the
run's outcome into a `KeptDelivery` (`icae_tui/runs/kept.py`, the one module that talks to the
engine's re-run). Nothing here imports Textual, the engine or the run.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from icae_tui.domain.events import Event, RunStarted
from icae_tui.domain.results import CaseResult, Score
from icae_tui.domain.task import CaseRef, Task

if TYPE_CHECKING:  # the sources give handles; a handle only calls them, as feeds
    from icae_tui.display.feed import Deliver, Feed
    from icae_tui.display.view import RunView


class RunKind(StrEnum):
    LIVE = "live"  # executed here, now
    REPLAY = "replay"  # a stored run or a recording


class Capability(StrEnum):
    ANSWER = "answer"  # a waiting question
    SWITCH_RESPONDER = "switch responder"
    PAUSE = "pause"  # pause the agent, and let it go on
    CANCEL = "cancel"
    RERUN = "re-run"  # a case, as it was or edited, on the kept delivery
    SHELL = "shell"  # in the kept delivery or the oracle
    DISCARD = "discard"  # the kept delivery


OPERATING = frozenset(
    {Capability.ANSWER, Capability.SWITCH_RESPONDER, Capability.PAUSE, Capability.CANCEL}
)
KEEPING = frozenset({Capability.RERUN, Capability.SHELL, Capability.DISCARD})


class Side(StrEnum):
    DELIVERY = "delivery"
    ORACLE = "oracle"


# Why a case cannot be re-run, nor a shell opened (the case detail says it).
STORED = "the delivery is gone: a stored run keeps none (only a run started in this console does)"
NOT_KEPT = "the delivery is gone: this run did not keep it"
NOT_COMPLETED = "the delivery is gone: the run did not complete"
STILL_RUNNING = "the run is still going: its delivery is kept once it has completed"
DISCARDED = "the delivery is gone: it was removed when its run was left"
NO_RUN = "the delivery is gone: this case is shown without its run"

AS_RUN = "as this run has it"  # where a live run's case comes from
AS_NOW = "from the task as it is now"  # a stored run's: the catalog's task


@dataclass(frozen=True)
class ShellCommand:
    """A shell in one side's image: the command to run once the console has stepped aside."""

    side: Side
    image: str
    workdir: str
    argv: tuple[str, ...]
    line: str  # the same, for a terminal (quoted)


class KeptDelivery(Protocol):
    """A completed live run's frozen delivery, kept with its oracle (`icae_tui/runs/kept.py`)."""

    @property
    def label(self) -> str:
        """What it is, for a worker's name (the delivery's image)."""
        ...

    def rerun(self, ref: CaseRef, *, run_id: str) -> Coroutine[Any, Any, CaseResult]:
        """Judge `ref` again in fresh boxes of both sides, as the run did."""
        ...

    def edited(self, ref: CaseRef, *, command: str | None, input: Any) -> CaseRef:  # noqa: A002
        """`ref` with its command (None: as it is) and its input replaced; the same id."""
        ...

    def shell(self, side: Side) -> Coroutine[Any, Any, ShellCommand]:
        """The command of a shell in `side`'s image, as the run's engine gives it."""
        ...

    def discard(self) -> Coroutine[Any, Any, None]:
        """Remove the delivery's image."""
        ...


class Outcome(Protocol):
    """What a live run's work returns (`icae_tui.runs.run.RunOutcome`), as the console reads it."""

    @property
    def run_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def score(self) -> Score | None: ...
    @property
    def error(self) -> str: ...
    @property
    def results(self) -> list[CaseResult]: ...
    @property
    def sides(self) -> object:
        """The images judged, when kept: opaque here, a `Keep` knows them."""
        ...


Keep = Callable[[Outcome], "KeptDelivery | None"]  # the outcome's kept delivery, if any


@dataclass(frozen=True)
class CaseContext:
    """What the case detail knows beyond the result: the task (the case's definition), the
    kept delivery (None: `gone` says why) and the run's id."""

    task: Task | None = None
    kept: KeptDelivery | None = None
    run_id: str = ""
    source: str = ""  # where the case's definition comes from
    gone: str = NO_RUN

    def ref(self, case_id: str) -> CaseRef | None:
        if self.task is None:
            return None
        return next((ref for ref in self.task.cases if ref.id == case_id), None)

    @property
    def kind(self) -> str:
        """The task's interface kind ("" without a task): a command task edits its command."""
        return self.task.spec.interface.kind if self.task is not None else ""

    def timeout_s(self, ref: CaseRef | None) -> float | None:
        if self.task is None or ref is None:
            return None
        return ref.case.timeout_s or self.task.spec.cases.timeout_s

    @property
    def why_not(self) -> str:
        """Why nothing can be done on the delivery, as a sentence ("" when it can)."""
        if self.kept is not None and self.task is not None:
            return ""
        gone = self.gone or NO_RUN
        return gone[:1].upper() + gone[1:] + "."


class RunHandle:
    """One run as the console drives it. Commands the run cannot take are refused here
    (False), whatever the source would say."""

    def __init__(
        self,
        source: Feed,
        kind: RunKind,
        *,
        task: Task | None = None,
        keep: Keep | None = None,
        catalog: Mapping[str, Task] | None = None,
        started: RunStarted | None = None,
        leftovers: Callable[[], list[str] | None] | None = None,
        elsewhere: Callable[[], bool] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> None:
        """`task`: a live run's own task; `keep`: how it keeps its delivery (None: it keeps
        none); `catalog` and `started`: a stored run's cases are the catalog's task's, named
        by its start; `leftovers`: what a live run's final sweep removed. `elsewhere`: a live
        run whose work something else executes (a batch's run, attached to): whether that
        work still goes on; `cancel`: how to cancel it (None: it cannot be, from here)."""
        self.source = source
        self.kind = kind
        self.task = task
        self.keep = keep
        self.catalog: Mapping[str, Task] = catalog or {}
        self.started = started
        self.leftovers = leftovers
        self.elsewhere = elsewhere
        self._cancel = cancel
        self.outcome: Outcome | None = None  # once a live run's work has returned
        self._job_taken = False
        self._working = False  # its work was handed out and has not ended
        self._kept: KeptDelivery | None = None
        self._discarded = False

    @property
    def run_id(self) -> str:
        return self.source.run_id

    @property
    def label(self) -> str:
        return self.source.label

    @property
    def live(self) -> bool:
        return self.kind is RunKind.LIVE

    @property
    def attached(self) -> bool:
        """A live run executed elsewhere: leaving its display leaves it running."""
        return self.live and self.elsewhere is not None

    # --- what it can do ----------------------------------------------------------------------

    @property
    def working(self) -> bool:
        """A live run whose work goes on, or is still to start."""
        if self.elsewhere is not None:
            return self.live and self.elsewhere()
        return self.live and (self._working or not self._job_taken)

    def capabilities(self) -> frozenset[Capability]:
        if self.working:
            if self.elsewhere is not None and self._cancel is None:
                return OPERATING - {Capability.CANCEL}
            return OPERATING
        if self.kept is not None:
            return KEEPING
        return frozenset()

    def can(self, capability: Capability) -> bool:
        return capability in self.capabilities()

    @property
    def kept(self) -> KeptDelivery | None:
        """The delivery a completed live run kept, until it is discarded."""
        return None if self._discarded else self._kept

    # --- the source -----------------------------------------------------------------------------

    def connect(self, deliver: Deliver) -> None:
        self.source.connect(deliver)

    def job(self) -> Coroutine[Any, Any, Outcome | None] | None:
        """The run's work (None: a stored run has none); its outcome is kept here."""
        job = self.source.job()
        self._job_taken = True
        if job is None:
            return None
        self._working = True
        return self._execute(job)

    async def _execute(self, job: Coroutine[Any, Any, Any]) -> Outcome | None:
        try:
            self.outcome = await job
        finally:
            self._working = False
        if self.outcome is not None and self.keep is not None:
            self._kept = self.keep(self.outcome)
        return self.outcome

    def recorded(self) -> list[Event]:
        return self.source.recorded()

    def now(self, view: RunView) -> float:
        return self.source.now(view)

    def removed_leftovers(self) -> list[str] | None:
        """Once a live run's work is over: what its final sweep still found and removed
        (None: not said)."""
        return self.leftovers() if self.leftovers is not None else None

    # --- operating a live run ------------------------------------------------------------------

    def answer(self, question_id: int, text: str) -> bool:
        return self.can(Capability.ANSWER) and self.source.answer(question_id, text)

    def set_responder(self, mode: str) -> bool | None:
        if not self.can(Capability.SWITCH_RESPONDER):
            return False
        return self.source.set_responder(mode)

    async def pause_agent(self) -> bool:
        return self.can(Capability.PAUSE) and await self.source.pause_agent()

    async def resume_agent(self) -> bool:
        return self.can(Capability.PAUSE) and await self.source.resume_agent()

    def cancel(self) -> bool:
        """Cancel an attached run's work (a run of its own is cancelled through its worker);
        False if refused."""
        return self._cancel is not None and self.can(Capability.CANCEL) and self._cancel()

    # --- the kept delivery -----------------------------------------------------------------------

    def case_context(self) -> CaseContext:
        """What the case detail shows and does, asked each time: a live run keeps its
        delivery only once it has completed."""
        if self.live and self.task is not None:
            kept = self.kept
            if kept is not None:
                return CaseContext(self.task, kept, self.run_id, AS_RUN, "")
            return CaseContext(self.task, None, self.run_id, AS_RUN, self._gone())
        if self.live:  # a live run without its task (a test's double): nothing kept either
            return CaseContext(None, None, self.run_id, "", NOT_KEPT)
        started = self.started
        run_id = self.run_id or (started.run_id if started is not None else "")
        stored = self.catalog.get(started.task_id) if started is not None else None
        if stored is None:
            return CaseContext(None, None, run_id, "", STORED)
        return CaseContext(stored, None, run_id, AS_NOW, STORED)

    def _gone(self) -> str:
        if self.working:
            return STILL_RUNNING
        if self.keep is None:
            return NOT_KEPT
        return DISCARDED if self._discarded else NOT_COMPLETED

    def discard(self) -> Coroutine[Any, Any, None] | None:
        """Remove the kept delivery (None: nothing is kept, or it is already going). From
        then on nothing can be done on it."""
        kept = self.kept
        if kept is None:
            return None
        self._discarded = True
        return kept.discard()
