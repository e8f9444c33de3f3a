"""Builders for synthetic events, and a fake run for the run screen."""

from __future__ import annotations

import asyncio

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
    RunFinished,
    RunStarted,
)
from icae_tui.domain.results import CaseResult, Score, SideRun, Verdict
from icae_tui.domain.task import Level
from icae_tui.run import RunConfig, RunOutcome
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.responders import Desk, SimulatedUser

CASE_IDS = ["public/upper#0", "hidden/ops#0", "hidden/ops#1", "enhanced/edge#0"]


def side(exit_code: int | None = 0, stdout: str = "ok\n", stderr: str = "") -> SideRun:
    return SideRun(exit_code=exit_code, stdout=stdout, stderr=stderr, stdout_bytes=len(stdout))


def result(case_id: str, verdict: Verdict = Verdict.ACCEPTED, reason: str = "identical",
           delivery_exit: int | None = 0, delivery_stdout: str = "ok\n") -> CaseResult:  # fmt: skip
    passed = verdict is Verdict.ACCEPTED
    return CaseResult(
        case_id=case_id,
        split=case_id.split("/")[0],
        pattern=case_id.split("/")[1].split("#")[0],
        command="mini",
        verdict=verdict,
        reason=reason,
        exec_ok=True,
        sp=passed,
        em=passed,
        fm=passed,
        passed=passed,
        oracle=side(),
        delivery=side(delivery_exit, delivery_stdout),
    )


def started(responder: str = "simulated", **extra) -> RunStarted:
    return RunStarted(
        run_id="test-run",
        task_id="mini",
        task_title="Mini [bold]tool[/]",
        agent="scripted:good",
        level="L1",
        responder=responder,
        budget=3,
        prd="Build it.",
        **extra,
    )


def score(done: int, planned: int, overall: float) -> Score:
    return Score(
        done=done, planned=planned, overall=overall, macro=overall,
        exec_rate=1.0, sp_rate=overall, em_rate=overall, fm_rate=overall,
    )  # fmt: skip


HOSTILE_LINE = "A" * 100_000

HOSTILE_OUTPUT = (
    "\x1b[31mred\x1b[0m and [bold]markup[/] and [link=http://x]link[/link]\n"
    "nul\x00byte and bell\x07 and cr\rover\n" + HOSTILE_LINE + "\n" + "partial line without newline"
)


def stream() -> list:
    """A whole run's worth of events, hostile output included."""
    return [
        started(),
        PhaseChanged(phase="generate", detail="scripted:good"),
        AgentSaid(text="Let me [bold]ask[/] first."),
        QuestionAsked(question_id=1, text="How are [red]errors[/] reported?", remaining_before=3),
        QuestionAnswered(question_id=1, text="Print error=x.", record_ids=["C001"], remaining=2),
        QuestionAsked(question_id=2, text="Anything else?", remaining_before=2),
        QuestionAnswered(question_id=2, text="No idea.", fallback=True, remaining=1),
        QuestionAsked(question_id=3, text="And now?", remaining_before=0),
        QuestionAnswered(
            question_id=3, text="Budget spent.", over_budget=True, responder="budget", remaining=0
        ),  # fmt: skip
        AgentCommand(command="cat [bold]x[/]"),
        AgentOutput(stream="stdout", text=HOSTILE_OUTPUT[:50]),
        AgentOutput(stream="stdout", text=HOSTILE_OUTPUT[50:]),
        AgentOutput(stream="stderr", text="warn: \x1b[2Jcleared?\n"),
        AgentCommandDone(command="cat x", exit_code=0, duration_s=0.1),
        PhaseChanged(phase="evaluate", detail="4 cases"),
        CasesPlanned(case_ids=CASE_IDS),
    ]


# --- a fake Run ------------------------------------------------------------------------


class FakeRun:
    """Enough of `icae_tui.run.Run` for the screen, with the real desk and clarification
    channel over the mini task's L1 records; execute() is scripted per test."""

    def __init__(self, task, responder: str = "simulated", script=None, auto=None) -> None:
        self.config = RunConfig(task=task, agent="scripted:good", responder=responder)
        self.run_id = "fake-run"
        self.subscribers = []
        self.script = script
        auto = auto or SimulatedUser(task.user_agent[Level.L1].oracle_data)
        self.desk = Desk(auto, responder)
        self.channel = ClarificationChannel(self.desk, task.spec.budget, self._emit)
        self.switches: list[str] = []  # set_responder calls, in order
        self.sent: list[tuple[int, str]] = []  # answer calls, in order

    def subscribe(self, callback) -> None:
        self.subscribers.append(callback)

    def emit(self, ev) -> None:
        for callback in self.subscribers:
            callback(ev)

    async def _emit(self, ev) -> None:
        self.emit(ev)

    async def execute(self) -> RunOutcome:
        return await self.script(self)

    def answer(self, question_id: int, text: str) -> bool:
        self.sent.append((question_id, text))
        return self.desk.answer(question_id, text)

    def set_responder(self, mode: str) -> None:
        self.switches.append(mode)
        if mode != self.desk.mode:
            self.desk.set_mode(mode)
            self.emit(ResponderChanged(mode=mode))


def finish(run: FakeRun) -> RunOutcome:
    run.emit(CasesPlanned(case_ids=["public/upper#0"]))
    run.emit(CaseFinished(result=result("public/upper#0")))
    run.emit(RunFinished(status="completed", score=score(1, 1, 1.0)))
    return RunOutcome(run.run_id, "completed", score(1, 1, 1.0))


Q_UNKNOWN = "How should unknown operations be reported?"  # matches C001 of the mini task
Q_COUNT = "How is the word count formatted?"  # matches C002
Q_OTHER = "What colour is the logo?"  # matches nothing: fallback


async def until(pilot, condition, timeout: float = 10.0) -> None:
    """Let the app run until `condition()` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out waiting for the screen"
        await pilot.pause(0.02)
    await pilot.pause()  # let focus and layout settle
