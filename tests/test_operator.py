"""The run display's operator state machine (icae_tui/display/operator.py) and the run handle
it drives (icae_tui/display/handle.py), without Textual: asking and answering, switching
the responder, leaving with a confirm, cancelling and the states after it, a crash, pausing
the agent; what a live, a completed (kept) and a stored run can do."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from icae_tui.display.handle import (
    AS_NOW,
    KEEPING,
    NOT_COMPLETED,
    NOT_KEPT,
    OPERATING,
    STILL_RUNNING,
    STORED,
    Capability,
    CaseContext,
    Outcome,
    RunHandle,
    RunKind,
    ShellCommand,
    Side,
)
from icae_tui.display.operator import (
    Asking,
    Confirm,
    Do,
    End,
    Notify,
    Operator,
    Prompt,
    Severity,
    Status,
    Work,
)
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.display.view import RunView
from icae_tui.domain.events import (
    Event,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
    RunFinished,
    RunStarted,
)
from icae_tui.domain.results import CaseResult
from icae_tui.domain.states import AnsweredBy, ResponderMode
from icae_tui.domain.task import CaseRef

T0 = 1_704_067_200.0


def started(responder: str = "simulated") -> RunStarted:
    return RunStarted(run_id="op-run", task_id="mini", task_title="Mini", agent="scripted:good",
                      level="L1", responder=ResponderMode(responder), budget=3, prd="Build it.",
                      ts=T0)  # fmt: skip


def asked(qid: int = 1) -> QuestionAsked:
    """A question the run waits on for the operator (asked in human mode)."""
    return QuestionAsked(
        question_id=qid, text="How are errors reported?", remaining_before=3, mode=AnsweredBy.HUMAN
    )


@dataclass
class Result:
    """A run's outcome (`RunOutcome`'s fields the console reads)."""

    run_id: str = "op-run"
    status: str = "completed"
    score: Any = None
    error: str = ""
    results: list[CaseResult] = field(default_factory=list)
    sides: object = None


class Run:
    """A live run (`LiveRun`): its work waits until released; its commands are recorded."""

    def __init__(self, outcome: Result | None = None) -> None:
        self.run_id = "op-run"
        self.leftovers_removed: list[str] = []
        self.outcome = outcome or Result()
        self.release = asyncio.Event()
        self.subscribers: list[Any] = []
        self.answers: list[tuple[int, str]] = []
        self.modes: list[str] = []
        self.paused: list[str] = []
        self.pause_answer: bool | Exception = True

    def subscribe(self, callback: Any) -> None:
        self.subscribers.append(callback)

    async def execute(self) -> Result:
        await self.release.wait()
        return self.outcome

    def answer(self, question_id: int, text: str) -> bool:
        self.answers.append((question_id, text))
        return question_id == 1

    def set_responder(self, mode: str) -> bool:
        self.modes.append(mode)
        return True

    async def pause(self) -> bool:
        self.paused.append("pause")
        if isinstance(self.pause_answer, Exception):
            raise self.pause_answer
        return self.pause_answer

    async def resume(self) -> bool:
        self.paused.append("resume")
        return True


@dataclass(frozen=True)
class Kept:
    """A kept delivery (`KeptDelivery`) whose work is recorded, not done."""

    label: str = "icae-delivery-mini:test"
    discards: list[str] = field(default_factory=list)

    async def _nothing(self) -> None:
        self.discards.append(self.label)

    def rerun(self, ref: CaseRef, *, run_id: str) -> Any:
        raise AssertionError("not re-run here")

    def edited(self, ref: CaseRef, *, command: str | None, input: Any) -> CaseRef:  # noqa: A002
        return ref

    async def shell(self, side: Side) -> ShellCommand:
        return ShellCommand(side, self.label, "/workspace", ("docker", "run"), "docker run")

    def discard(self) -> Any:
        return self._nothing()


def live(*events: Event, run: Run | None = None, keep: Any = None, task: Any = None):
    """A live run's source, handle, view and operator, its work started (a task), `events`
    seen."""
    run = run or Run()
    handle = LiveSource(run, clock=lambda: T0 + 42, task=task, keep=keep).handle()
    view = RunView()
    op = Operator(handle, view)
    job = handle.job()
    assert job is not None
    work = asyncio.ensure_future(job)
    op.started(True)
    for ev in events:
        view.apply(ev)
    op.sync()
    return run, handle, view, op, work


async def done(run: Run, work: asyncio.Future) -> None:
    """Let the run's work return."""
    run.release.set()
    await work


def replay(*events: Event) -> tuple[RunHandle, RunView, Operator]:
    handle = ReplaySource(events).handle()
    view = RunView()
    for ev in events:
        view.apply(ev)
    op = Operator(handle, view)
    assert handle.job() is None
    op.started(False)
    return handle, view, op


def texts(effects: list) -> list[str]:
    return [e.message for e in effects if isinstance(e, Notify)]


# --- a stored run ------------------------------------------------------------------------------


async def test_a_stored_run_leaves_at_once_and_refuses_every_command():
    handle, view, op = replay(started("human"), asked())
    assert handle.kind is RunKind.REPLAY and handle.capabilities() == frozenset()
    assert op.work is Work.NONE and not op.running
    assert op.asking is Asking.NONE  # nobody waits on a stored run's question
    assert op.back() == [Do.LEAVE]
    assert op.cancel() == [Notify("No run in progress.")]
    assert not (op.can_cancel or op.can_switch or op.can_pause)
    assert texts(op.switch("assisted")) == [
        "The responder can be switched while a run is in progress."
    ]
    done, effects = await op.pause(True)
    assert not done
    assert effects == [Do.KEYS, Notify("A stored run cannot be paused: its agent is not "
                                       "running.", severity=Severity.WARNING)]  # fmt: skip
    assert op.end_notice() is None
    assert handle.answer(1, "x") is False and handle.set_responder("human") is False


# --- leaving and cancelling ------------------------------------------------------------------


async def test_leaving_a_live_run_asks_cancels_and_leaves_once_its_work_is_over():
    run, handle, view, op, work = live(started(), PhaseChanged(phase="generate"))
    assert op.work is Work.RUNNING and op.can_cancel
    assert op.back() == [Confirm(Prompt.LEAVE, "A run is in progress. Cancel it and go back?",
                                 "Cancel run", "Keep")]  # fmt: skip
    assert op.confirmed(Prompt.LEAVE, False) == [] and op.work is Work.RUNNING
    assert op.confirmed(Prompt.LEAVE, True) == [Do.CANCEL_WORK, Do.REDRAW]
    assert op.work is Work.CANCELLING and op.leaving and op.running and not op.can_cancel
    assert op.status() == [("cancelling: stopping the agent, removing containers…",
                            "warn-strong")]  # fmt: skip
    view.apply(RunFinished(status="cancelled", error="cancelled by the operator", ts=T0 + 9))
    assert op.status()[0][0] == "cancelling: run stopped, removing containers…"
    assert op.cancel_now() == []  # already cancelling
    effects = op.ended(End.CANCELLED)
    assert effects == [Do.REDRAW, Do.LEAVE] and not op.leaving
    assert op.work is Work.CANCELLED and not op.running
    assert op.status()[:2] == [("run cancelled", "status:cancelled"),
                               (": containers removed (none left over)", "")]  # fmt: skip
    assert op.clock_end() == T0 + 9  # the run's end, not when the cancel was seen
    assert op.end_notice() == Notify("cancelled by the operator", "Run cancelled",
                                     Severity.WARNING, timeout=10)  # fmt: skip
    await done(run, work)


async def test_a_second_escape_while_cancelling_leaves_at_once():
    run, *_, op, work = live(started())
    assert op.cancel() == [Confirm(Prompt.CANCEL, "Cancel the running run?", "Cancel run",
                                   "Keep")]  # fmt: skip
    assert op.confirmed(Prompt.CANCEL, True) == [Do.CANCEL_WORK, Do.REDRAW]
    assert not op.leaving
    assert op.back() == [Do.LEAVE]
    assert op.ended(End.CANCELLED) == [Do.REDRAW]  # not leaving: the screen stays
    assert op.ended(End.CANCELLED) == []  # once
    await done(run, work)


async def test_a_leave_confirmed_after_the_run_ended_just_leaves():
    run, *_, op, work = live(started())
    assert isinstance(op.back()[0], Confirm)  # the dialog is up while the run ends
    op.ended(End.RETURNED)
    assert op.work is Work.ENDED
    assert op.confirmed(Prompt.LEAVE, True) == [Do.LEAVE]
    assert op.confirmed(Prompt.CANCEL, True) == []
    await done(run, work)


async def test_leaving_a_completed_run_that_kept_its_delivery_asks_first(fixture_catalog):
    """Leaving discards what the run kept (re-runs, shells): Escape asks; keep stays."""
    kept = Kept()
    run, handle, view, op, work = live(started(), keep=lambda _: kept,
                                       task=fixture_catalog.tasks["mini"])  # fmt: skip
    await done(run, work)
    assert op.ended(End.RETURNED) == [Do.REDRAW] and handle.kept is kept
    (confirm,) = op.back()
    assert isinstance(confirm, Confirm) and confirm.prompt is Prompt.DISCARD
    assert "discards its kept delivery" in confirm.question
    assert (confirm.yes, confirm.no) == ("Leave", "Keep it")
    assert op.confirmed(Prompt.DISCARD, False) == [] and handle.kept is kept
    assert op.confirmed(Prompt.DISCARD, True) == [Do.LEAVE]
    discarding = handle.discard()  # what the console does once the screen is gone
    assert discarding is not None
    await discarding
    assert op.back() == [Do.LEAVE]  # nothing kept any more: nothing to ask


async def test_leaving_a_completed_run_that_kept_nothing_leaves_at_once():
    run, handle, view, op, work = live(started())
    await done(run, work)
    op.ended(End.RETURNED)
    assert handle.kept is None and op.back() == [Do.LEAVE]


async def test_leftovers_the_final_sweep_removed_are_said():
    run = Run()
    run.leftovers_removed = ["c1", "c2"]
    run, *_, op, work = live(started(), run=run)
    op.cancel_now()
    op.ended(End.CANCELLED)
    assert op.status()[1] == (
        ": containers removed (2 left over, removed by the final sweep)",
        "warn",
    )
    await done(run, work)


async def test_a_crash_stops_the_clock_and_says_the_whole_error():
    run, *_, view, op, work = live(started())
    effects = op.ended(End.RAISED, "RuntimeError: the engine went away\x1b[2J")
    assert op.work is Work.CRASHED and op.crashed.startswith("RuntimeError")
    notice = effects[0]
    assert isinstance(notice, Notify) and notice.title == "Run crashed"
    assert notice.severity is Severity.ERROR and notice.timeout == 30
    assert r"\x1b[2J" in notice.message  # made printable
    assert effects[1:] == [Do.REDRAW]
    assert op.status() == [("run crashed — ", "error-strong"),
                           (r"RuntimeError: the engine went away\x1b[2J", "")]  # fmt: skip
    assert op.clock_end() == T0 + 42
    await done(run, work)


# --- asking and answering --------------------------------------------------------------------


async def test_a_question_waits_for_the_operator_until_answered_and_its_answer_is_in():
    run, handle, view, op, work = live(started("human"))
    assert op.asking is Asking.NONE
    view.apply(asked())
    assert op.asking is Asking.WAITING and op.waiting is not None
    assert op.submit("   ") == [Notify("Type an answer first.", severity=Severity.WARNING)]
    assert op.submit(" Print error=x. ") == [Status([("Q1 answered", "muted")]), Do.SYNC_BOX]
    assert run.answers == [(1, "Print error=x.")]
    assert op.asking is Asking.SENT and op.sent == 1
    view.apply(QuestionAnswered(question_id=1, text="Print error=x.", responder="human"))
    op.sync()
    assert op.asking is Asking.NONE and op.sent is None
    view.apply(asked(2))
    assert op.submit("no") == [Notify("Q2 is not waiting for an answer.",
                                      severity=Severity.WARNING)]  # fmt: skip
    assert op.asking is Asking.WAITING
    assert op.left_box() == [Do.FOCUS_TRACE, Notify("Left the answer box; the question still "
                                                    "waits — w goes back.")]  # fmt: skip
    await done(run, work)


async def test_no_question_waits_once_the_work_is_over():
    run, *_, view, op, work = live(started("human"), asked())
    assert op.asking is Asking.WAITING
    op.ended(End.RETURNED)
    assert op.waiting is None and op.asking is Asking.NONE
    assert op.submit("late") == []
    await done(run, work)


async def test_switching_to_simulated_hands_the_waiting_question_over():
    run, handle, view, op, work = live(started("human"), asked())
    assert op.next_mode() == "assisted" and op.can_switch
    assert op.switch("human") == []  # already
    assert op.switch("simulated") == [Do.REDRAW]
    assert run.modes == ["simulated"]
    assert op.mode == "simulated" and op.requested == "simulated"  # before its event is in
    assert op.asking is Asking.SIMULATED
    assert op.mode_changed() == [Status([("Q1 goes to the simulated user", "strong")], about=1)]
    view.apply(ResponderChanged(mode="simulated"))
    op.sync()
    assert op.requested == "" and op.mode == "simulated"
    assert op.mode_changed() == [Status([("Q1 goes to the simulated user", "strong")], about=1)]
    view.apply(RunFinished(status="completed", ts=T0 + 5))
    assert not op.can_switch
    await done(run, work)


async def test_a_switch_the_run_refuses_or_fails_on_is_said():
    run, handle, view, op, work = live(started())

    def boom(mode: str) -> bool:
        raise ValueError(f"unknown mode {mode!r}")

    run.set_responder = boom  # type: ignore[method-assign]
    assert op.switch("human") == [Notify("Could not switch to human: unknown mode 'human'",
                                         severity=Severity.ERROR)]  # fmt: skip
    assert op.requested == ""
    await done(run, work)


# --- pausing the agent -----------------------------------------------------------------------


async def test_pausing_the_agent_while_it_builds():
    run, handle, view, op, work = live(started())
    assert not op.can_pause  # not building yet
    view.apply(PhaseChanged(phase="generate"))
    assert op.can_pause
    assert op.begin_pause() and not op.begin_pause()  # one request at a time
    assert await op.pause(True) == (True, [Do.KEYS])
    assert not op.pausing and run.paused == ["pause"]
    run.pause_answer = False
    assert await op.pause(True) == (False, [Do.KEYS, Notify(
        "The agent can be paused while it builds (the generate phase).",
        severity=Severity.WARNING)])  # fmt: skip
    run.pause_answer = RuntimeError("engine gone")
    paused, effects = await op.pause(True)
    assert not paused and texts(effects) == ["Could not pause the agent: RuntimeError: engine gone"]
    assert await op.pause(False) == (True, [Do.KEYS]) and run.paused[-1] == "resume"
    op.cancel_now()
    assert not op.can_pause  # cancelling
    await done(run, work)


# --- the handle --------------------------------------------------------------------------------


async def test_a_completed_live_run_keeps_its_delivery_until_discarded(fixture_catalog):
    task = fixture_catalog.tasks["mini"]
    kept = Kept()
    seen: list[Outcome] = []

    def keep(outcome: Outcome) -> Kept:
        seen.append(outcome)
        return kept

    run, handle, view, op, work = live(started(), keep=keep, task=task)
    assert handle.capabilities() == OPERATING and handle.can(Capability.CANCEL)
    ctx = handle.case_context()
    assert ctx.kept is None and ctx.gone == STILL_RUNNING and ctx.task is task
    assert ctx.why_not == STILL_RUNNING[0].upper() + STILL_RUNNING[1:] + "."
    run.release.set()
    assert await work is run.outcome and handle.outcome is run.outcome
    assert seen == [run.outcome]
    assert handle.capabilities() == KEEPING
    ctx = handle.case_context()
    assert ctx.kept is kept and ctx.gone == "" and ctx.why_not == "" and ctx.run_id == "op-run"
    assert ctx.kind == task.spec.interface.kind
    ref = task.cases[0]
    assert ctx.ref(ref.id) == ref and ctx.timeout_s(ref) == task.spec.cases.timeout_s
    assert (await kept.shell(Side.ORACLE)).side is Side.ORACLE
    assert handle.answer(1, "late") is False  # the run is over: nothing is asked of it
    discarding = handle.discard()
    assert discarding is not None and handle.discard() is None  # once
    await discarding
    assert kept.discards == [kept.label]
    assert handle.capabilities() == frozenset() and handle.kept is None
    assert "removed" in handle.case_context().gone


async def test_a_live_run_without_a_keep_or_an_outcome_keeps_nothing(fixture_catalog):
    task = fixture_catalog.tasks["mini"]
    run, handle, *_, work = live(task=task)
    run.release.set()
    await work
    assert handle.capabilities() == frozenset()
    assert handle.case_context().gone == NOT_KEPT and handle.discard() is None

    run, handle, *_, work = live(task=task, keep=lambda outcome: None)  # it did not complete
    run.release.set()
    await work
    assert handle.case_context().gone == NOT_COMPLETED


async def test_a_stored_runs_cases_come_from_the_catalog(fixture_catalog):
    source = ReplaySource([started()], catalog=fixture_catalog.tasks)
    ctx = source.handle().case_context()
    assert ctx == CaseContext(fixture_catalog.tasks["mini"], None, "op-run", AS_NOW, STORED)
    assert ReplaySource([started()]).handle().case_context().task is None


def test_the_handle_and_the_operator_import_without_textual_or_the_engine():
    code = (
        "import sys, icae_tui.display.operator, icae_tui.display.handle;"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'textual'"
        " or m.startswith(('icae_tui.evaluation', 'icae_tui.sandbox', 'icae_tui.runs'))];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"pulled in: {out.stdout}"
