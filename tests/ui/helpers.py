"""Builders for synthetic events and a small harness app for the run screen."""

from __future__ import annotations

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    CasesPlanned,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    RunStarted,
)
from icae_tui.domain.results import CaseResult, Score, SideRun, Verdict

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


def started(responder: str = "simulated") -> RunStarted:
    return RunStarted(
        run_id="test-run",
        task_id="mini",
        task_title="Mini [bold]tool[/]",
        agent="scripted:good",
        level="L1",
        responder=responder,
        budget=3,
        prd="Build it.",
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
