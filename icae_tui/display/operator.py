"""The operator's side of a run display, without the widgets: is the run's work going,
being cancelled, cancelled, crashed or over; is a question waiting for the operator, or
answered and its answer not in yet; is a responder switch asked and not yet in; is a pause
asked and not yet answered; does the display leave once the work is over; does leaving a
finished run discard what it kept (its delivery: re-running a case, the shells), so the
operator is asked first.

`Operator` is the state machine; each transition returns the effects the screen carries out
(a notification, a confirm dialog, the status line, cancel the work, leave, draw again), so
every decision is here, testable without Textual (tests/test_operator.py), and the run
screen (icae_tui/ui/screens/run.py) keeps the widget work. It drives the run through its
handle (`handle.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Literal

from icae_tui.display import wording as w
from icae_tui.display.handle import Capability, RunHandle
from icae_tui.display.view import RunView
from icae_tui.domain.events import QuestionAsked
from icae_tui.domain.states import Phase, ResponderMode, RunStatus
from icae_tui.users.responders import MODES
from icae_tui.util.safe_text import printable

CRASH_LIMIT = 500  # characters of the error in the status line (the notification has more)
CRASH_NOTICE_LIMIT = 4000


class Work(StrEnum):
    """The run's work, as the operator sees it."""

    NONE = "none"  # nothing to run: a stored run, or not started yet
    RUNNING = "running"
    CANCELLING = "cancelling"  # asked to stop; its cleanup goes on
    CANCELLED = "cancelled"
    CRASHED = "crashed"  # the work raised
    ENDED = "ended"  # it returned: completed or failed, the events say which


class Asking(StrEnum):
    """The question the run waits on, as far as the operator is concerned."""

    NONE = "none"  # no question waits (or the run is over)
    WAITING = "waiting"  # a question waits for the operator: the answer box
    SENT = "sent"  # the operator answered; the answer's event is not in yet
    SIMULATED = "simulated"  # a question waits, but the simulated user answers it


class End(StrEnum):
    """How the run's work ended (the worker's last state)."""

    RETURNED = "returned"
    RAISED = "raised"
    CANCELLED = "cancelled"


class Prompt(StrEnum):
    """A question to the operator before doing something that cannot be undone."""

    LEAVE = "leave"  # leave a running run: it is cancelled first
    CANCEL = "cancel"
    DISCARD = "discard"  # leave a completed run whose delivery is kept: it is discarded


class Severity(StrEnum):
    INFORMATION = "information"
    WARNING = "warning"
    ERROR = "error"


class Do(Enum):
    """Something the screen does."""

    CANCEL_WORK = "cancel the work"  # its worker
    LEAVE = "leave"  # once no dialog is on top of the screen
    REDRAW = "redraw"  # the status line, the header, the keys
    KEYS = "keys"  # the keys only (which bindings live)
    SYNC_BOX = "sync the answer box"  # show or hide it, as `asking` says
    FOCUS_TRACE = "focus the trace"


@dataclass(frozen=True)
class Notify:
    message: str
    title: str = ""
    severity: Severity = Severity.INFORMATION
    timeout: float | None = None  # None: the console's default


@dataclass(frozen=True)
class Confirm:
    """A yes/no dialog; its answer goes to `Operator.confirmed(prompt, yes)`."""

    prompt: Prompt
    question: str
    yes: str
    no: str


@dataclass(frozen=True)
class Status:
    """A note in the status line; `about`: the waiting question it is about (it goes once
    that question no longer waits)."""

    segs: list[w.Seg]
    about: int | None = None


Effect = Do | Notify | Confirm | Status

CONFIRMS = {
    Prompt.LEAVE: Confirm(Prompt.LEAVE, "A run is in progress. Cancel it and go back?",
                          "Cancel run", "Keep"),
    Prompt.CANCEL: Confirm(Prompt.CANCEL, "Cancel the running run?", "Cancel run", "Keep"),
    Prompt.DISCARD: Confirm(
        Prompt.DISCARD,
        "Leaving this run discards its kept delivery: its cases can no longer be re-run, "
        "nor a shell opened in it. Leave and discard it?",
        "Leave", "Keep it",
    ),
}  # fmt: skip

SEVERITY_OF_STATUS = {"completed": Severity.INFORMATION, "failed": Severity.ERROR}


class Operator:
    def __init__(self, handle: RunHandle, view: RunView) -> None:
        self.handle = handle
        self.view = view
        self.work = Work.NONE
        self.crashed = ""  # the error the work raised
        self.cancelled: list[w.Seg] | None = None  # the status once a cancel is done
        self.ended_at: float | None = None  # the run's clock stops when its work crashed or stopped
        # a responder asked of the run whose event is not in yet ("": none)
        self.requested: ResponderMode | Literal[""] = ""
        self.sent: int | None = None  # answered by the operator, its answer event not yet in
        self.leaving = False  # leave once the work is over (a confirmed leave)
        self.pausing = False  # a pause or resume asked of the run, not answered yet

    # --- what is --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """The work goes on (a cancel may be under way)."""
        return self.work in (Work.RUNNING, Work.CANCELLING)

    @property
    def cancelling(self) -> bool:
        return self.work is Work.CANCELLING

    @property
    def mode(self) -> ResponderMode | None:
        """Who answers: the events' word, or a switch asked of the run and not yet in."""
        return self.requested or self.view.mode

    @property
    def waiting(self) -> QuestionAsked | None:
        """The question waiting for an answer, while the work goes on."""
        return self.view.pending if self.running else None

    @property
    def asking(self) -> Asking:
        q = self.waiting
        if q is None or self.view.finished is not None:
            return Asking.NONE
        if self.sent == q.question_id:
            return Asking.SENT
        if self.mode not in w.OPERATOR_MODES:
            return Asking.SIMULATED
        return Asking.WAITING

    @property
    def can_cancel(self) -> bool:
        return self.work is Work.RUNNING and self.handle.can(Capability.CANCEL)

    @property
    def can_switch(self) -> bool:
        return (
            self.view.started is not None
            and self.view.finished is None
            and self.work is Work.RUNNING
            and self.handle.can(Capability.SWITCH_RESPONDER)
        )

    @property
    def can_pause(self) -> bool:
        """A live run whose agent builds: it can be paused (or resumed)."""
        return (
            self.work is Work.RUNNING
            and self.handle.can(Capability.PAUSE)
            and self.view.finished is None
            and self.view.phase == Phase.GENERATE
        )

    def next_mode(self) -> ResponderMode:
        i = MODES.index(self.mode) if self.mode in MODES else -1
        return MODES[(i + 1) % len(MODES)]

    def status(self) -> list[w.Seg]:
        """The status line but for the operator's notes: the view's (phase, progress, the
        end), what a cancel is doing and, once it is done, what it did, or the crash."""
        v = self.view
        if self.work is Work.CANCELLING:
            if self.handle.live:  # a run: its containers
                return w.cancelling_status(v.phase, stopped=v.finished is not None)
            return [("cancelling…", "warn-strong")]
        if self.work is Work.CANCELLED and self.cancelled is not None:
            return self.cancelled
        if self.work is Work.CRASHED:
            return [
                ("run crashed — ", "error-strong"),
                (printable(self.crashed, limit=CRASH_LIMIT), ""),
            ]
        return list(v.status)

    def clock_end(self) -> float:
        """Where the run's clock stands: its end, when its work stopped, or now."""
        if self.view.finished is not None:
            return self.view.finished.ts
        return self.ended_at if self.ended_at is not None else self.handle.now(self.view)

    # --- the work -------------------------------------------------------------------------

    def started(self, has_work: bool) -> None:
        """The screen started the run's work (`has_work`), or there is none — but for an
        attached run whose work goes on elsewhere (a batch's): it is running all the same."""
        elsewhere = self.handle.attached and self.handle.working
        self.work = Work.RUNNING if has_work or elsewhere else Work.NONE

    def finished_elsewhere(self) -> list[Effect]:
        """An attached run's last event is in: its work (not the screen's) is over."""
        ev = self.view.finished
        if not self.handle.attached or ev is None or not self.running:
            return []
        cancelled = ev.status == RunStatus.CANCELLED
        return self.ended(End.CANCELLED if cancelled else End.RETURNED)

    def sync(self) -> None:
        """The view changed: a switch whose event is in, or a question no longer waiting,
        is done with."""
        if self.requested and (self.view.mode == self.requested or self.view.finished):
            self.requested = ""
        if self.waiting is None:
            self.sent = None

    def ended(self, end: End, error: str = "") -> list[Effect]:
        """The work is over: returned, raised `error`, or cancelled."""
        if not self.running:
            return []
        v = self.view
        effects: list[Effect] = []
        if end is End.RAISED:
            self.work, self.crashed = Work.CRASHED, error
            self.ended_at = self.handle.now(v)
            effects.append(Notify(printable(error, limit=CRASH_NOTICE_LIMIT), "Run crashed",
                                  Severity.ERROR, timeout=30))  # fmt: skip
        elif end is End.CANCELLED:
            self.work = Work.CANCELLED
            if v.finished is None:
                self.ended_at = self.handle.now(v)
            summary = (
                ""
                if v.interaction is None
                else w.metrics_line(v.interaction, has_records=v.has_records)
            )
            removed = self.handle.removed_leftovers()
            self.cancelled = w.cancelled_status(
                None if removed is None else len(removed), v.finished, summary
            )
        else:
            self.work = Work.ENDED
        self.requested = ""  # nobody will switch, nor ask for an answer, any more
        effects.append(Do.REDRAW)
        if self.leaving:
            self.leaving = False
            effects.append(Do.LEAVE)
        return effects

    def end_notice(self) -> Notify | None:
        """A live run's end, once its last event is in: its score, its whole error (the status
        line may be too narrow for it), or that it was cancelled."""
        ev = self.view.finished
        if ev is None or not self.handle.live or self.work is Work.NONE:
            return None
        title, message = w.ended_notice(ev, self.view.score)
        severity = SEVERITY_OF_STATUS.get(ev.status, Severity.WARNING)
        return Notify(message, title, severity, timeout=30 if severity is Severity.ERROR else 10)

    # --- leaving and cancelling -----------------------------------------------------------

    def back(self) -> list[Effect]:
        """Escape: leave, after a confirm while the run goes on (it is cancelled first), or
        when leaving discards the delivery a completed run kept; a second press while the
        run is being cancelled leaves at once."""
        if self.cancelling or self.handle.attached:  # an attached run goes on without us
            return [Do.LEAVE]
        if self.running:
            return [CONFIRMS[Prompt.LEAVE]]
        if self.handle.kept is not None:
            return [CONFIRMS[Prompt.DISCARD]]
        return [Do.LEAVE]

    def cancel(self) -> list[Effect]:
        """c: cancel the run, after a confirm."""
        if not self.running:
            return [Notify("No run in progress.")]
        return [CONFIRMS[Prompt.CANCEL]]

    def confirmed(self, prompt: Prompt, yes: bool) -> list[Effect]:
        if not yes:
            return []
        if prompt is Prompt.DISCARD:  # the screen gone, its kept delivery goes (ui/kept.py)
            return [Do.LEAVE]
        if prompt is Prompt.LEAVE:
            if not self.running:  # it ended while the dialog was up
                return [Do.LEAVE]
            self.leaving = True
        return self.cancel_now()

    def cancel_now(self) -> list[Effect]:
        """Stop the work: the status line says what is being stopped, then, once the work is
        over, that its containers are removed (`status`)."""
        if self.work is not Work.RUNNING:
            return []
        self.work = Work.CANCELLING
        return [Do.CANCEL_WORK, Do.REDRAW]

    # --- the responder and the answers ----------------------------------------------------

    def switch(self, mode: ResponderMode | str) -> list[Effect]:
        """Ask the run to switch who answers; the display follows at once."""
        if mode == self.mode:
            return []
        if not self.can_switch:
            return [Notify("The responder can be switched while a run is in progress.")]
        try:
            switched = self.handle.set_responder(mode)
            wanted = ResponderMode(mode)
        except Exception as err:  # an unknown mode, a run already gone: say so, keep going
            return [Notify(f"Could not switch to {mode}: {err}", severity=Severity.ERROR)]
        if switched is not False and self.view.mode != wanted:  # its event follows
            self.requested = wanted
            return [Do.REDRAW]
        return []

    def mode_changed(self) -> list[Effect]:
        """Who answers changed: a waiting question handed to the simulated user is said."""
        q = self.waiting
        if q is None or self.mode in w.OPERATOR_MODES:
            return []
        qid = q.question_id
        return [Status([(f"Q{qid} goes to the simulated user", "strong")], about=qid)]

    def submit(self, text: str) -> list[Effect]:
        """The operator's answer to the waiting question."""
        q = self.waiting
        if q is None or self.mode not in w.OPERATOR_MODES:
            return []
        text = text.strip()
        if not text:
            return [Notify("Type an answer first.", severity=Severity.WARNING)]
        qid = q.question_id
        if not self.handle.answer(qid, text):
            return [Notify(f"Q{qid} is not waiting for an answer.", severity=Severity.WARNING)]
        self.sent = qid  # its answer event follows; the box goes now
        return [Status([(f"Q{qid} answered", "muted")]), Do.SYNC_BOX]

    def left_box(self) -> list[Effect]:
        return [Do.FOCUS_TRACE,
                Notify("Left the answer box; the question still waits — w goes back.")]  # fmt: skip

    # --- pausing the agent ------------------------------------------------------------------

    def begin_pause(self) -> bool:
        """A pause (or resume) key: False while one is already asked."""
        if self.pausing:
            return False
        self.pausing = True
        return True

    async def pause(self, on: bool) -> tuple[bool, list[Effect]]:
        """Ask the run to pause the agent (`on`) or let it go on; whether it did, and what to
        say. The display follows the run's AgentPaused / AgentResumed events."""
        self.pausing = True
        verb = "pause" if on else "resume"
        try:
            done = await (self.handle.pause_agent() if on else self.handle.resume_agent())
        except Exception as err:  # a run already gone, an engine error: say so, keep going
            return False, [Do.KEYS, Notify(f"Could not {verb} the agent: {type(err).__name__}: "
                                           f"{err}", severity=Severity.ERROR)]  # fmt: skip
        finally:
            self.pausing = False
        if not done:
            why = w.pause_refused(on, live=self.handle.live)
            return False, [Do.KEYS, Notify(why, severity=Severity.WARNING)]
        return True, [Do.KEYS]
