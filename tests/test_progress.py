"""The run's progress and its estimate (display/progress.py), from synthetic events with
fixed timestamps: no clock."""

from __future__ import annotations

import pytest

from icae_tui.display.progress import RunProgress, bar, eta, run_progress, tail_segments
from icae_tui.display.view import RunView
from icae_tui.display.wording import plain, score_segments
from icae_tui.domain.agent import Limits
from icae_tui.domain.events import (
    AgentPaused,
    AgentResumed,
    CaseFinished,
    CasesPlanned,
    Event,
    PhaseChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score, SideRun, Verdict

T0 = 1_000.0
CASES = [f"hidden/ops#{i}" for i in range(10)]


def started(**extra) -> RunStarted:
    fields = dict(task_id="mini", task_title="Mini", agent="scripted:good", level="L1",
                  responder="simulated", budget=3, prd="Build it.")  # fmt: skip
    return RunStarted(**(fields | extra))


def at(ts: float, ev: Event) -> Event:
    ev.ts = ts
    return ev


def result(case_id: str, passed: bool = True) -> CaseResult:
    side = SideRun(exit_code=0, stdout="", stderr="")
    return CaseResult(
        case_id=case_id, split="hidden", pattern="ops", command="mini",
        verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER, reason="",
        metrics={"exec": 1.0, "sp": passed, "em": passed, "fm": passed}, passed=passed,
        oracle=side, delivery=side,
    )  # fmt: skip


def view_of(*events: Event) -> RunView:
    return RunView.from_events(events)


def test_nothing_before_the_run_starts():
    assert run_progress(RunView(), now=T0) is None


def test_generate_counts_the_agents_time_against_its_limit():
    view = view_of(
        at(T0, started(limits=Limits(max_seconds=600))),
        at(T0 + 10, PhaseChanged(phase="generate")),
    )
    p = run_progress(view, now=T0 + 10 + 150)
    assert p == RunProgress("generate", 150.0, limit_s=600.0)
    assert p.fraction == pytest.approx(0.25)
    assert plain(tail_segments(p)) == "02:30 / 10:00 agent time"


def test_generate_without_a_limit_has_no_fraction():
    view = view_of(at(T0, started()), at(T0 + 10, PhaseChanged(phase="generate")))
    p = run_progress(view, now=T0 + 70)
    assert p.fraction is None and p.elapsed_s == 60.0
    assert plain(tail_segments(p)) == "01:00 agent time (no time limit)"


def test_paused_time_is_not_the_agents():
    view = view_of(
        at(T0, started(limits=Limits(max_seconds=600))),
        at(T0 + 10, PhaseChanged(phase="generate")),
        at(T0 + 40, AgentPaused()),
    )
    p = run_progress(view, now=T0 + 100)  # paused for 60 s of the 90
    assert p.paused and p.elapsed_s == 30.0
    assert plain(tail_segments(p)).startswith("agent paused · 00:30 / 10:00")
    view.apply(at(T0 + 130, AgentResumed(paused_s=90.0)))  # the run's own measure wins
    p = run_progress(view, now=T0 + 140)
    assert not p.paused and p.elapsed_s == 40.0
    assert view.usage(T0 + 140).agent_s == 40.0  # the header's usage line agrees


def test_a_pause_ends_when_the_agents_phase_does():
    view = view_of(
        at(T0, started()),
        at(T0 + 10, PhaseChanged(phase="generate")),
        at(T0 + 20, AgentPaused()),
        at(T0 + 50, PhaseChanged(phase="freeze")),  # no AgentResumed: the run let it go
    )
    assert not view.agent_paused
    assert view.paused_s == 30.0
    assert view.usage().agent_s == 10.0


def test_evaluate_shows_cases_done_and_an_estimate_from_the_pace_so_far():
    events: list[Event] = [
        at(T0, started()),
        at(T0 + 100, PhaseChanged(phase="evaluate", detail="10 cases")),
        at(T0 + 110, CasesPlanned(case_ids=CASES)),
    ]
    view = view_of(*events)
    p = run_progress(view, now=T0 + 120)
    assert (p.done, p.planned, p.eta_s) == (0, 10, None)  # no pace yet
    assert plain(tail_segments(p)) == "0/10 cases · 00:20 elapsed · ETA —"
    for i, case_id in enumerate(CASES[:4]):
        view.apply(at(T0 + 110 + 5 * (i + 1), CaseFinished(result=result(case_id))))
    p = run_progress(view, now=T0 + 130)  # 4 cases in 20 s: 6 left take 30 s
    assert (p.done, p.planned) == (4, 10)
    assert p.eta_s == pytest.approx(30.0)
    assert p.fraction == pytest.approx(0.4)
    assert plain(tail_segments(p)) == "4/10 cases · 00:30 elapsed · ETA 00:30"
    # nothing finishes for a while: the pace slows, the estimate grows
    assert run_progress(view, now=T0 + 150).eta_s == pytest.approx(60.0)


def test_eta_edges():
    assert eta(0, 10, T0, T0 + 5) is None
    assert eta(3, 10, None, T0 + 5) is None
    assert eta(10, 10, T0, T0 + 50) == 0.0
    assert eta(2, 4, T0, T0 - 5) == 0.0  # a clock behind the events: never negative


def test_other_phases_show_their_own_time():
    view = view_of(at(T0, started()), at(T0 + 30, PhaseChanged(phase="build")))
    p = run_progress(view, now=T0 + 45)
    assert (p.phase, p.elapsed_s, p.fraction) == ("build", 15.0, None)


def test_a_finished_run_shows_its_outcome_and_whole_time():
    view = view_of(
        at(T0, started()),
        at(T0 + 100, PhaseChanged(phase="evaluate")),
        at(T0 + 101, CasesPlanned(case_ids=CASES[:2])),
        at(T0 + 110, CaseFinished(result=result(CASES[0]))),
        at(T0 + 120, CaseFinished(result=result(CASES[1], passed=False))),
        at(T0 + 125, RunFinished(status="completed", score=Score(done=2, planned=2))),
    )
    p = run_progress(view, now=T0 + 999)
    assert p == RunProgress("completed", 125.0, done=2, planned=2, over=True)
    assert p.fraction == 1.0
    assert plain(tail_segments(p)) == "2/2 cases · 02:05 in all"


def test_a_cancel_shows_one_count_of_cases_done_and_the_rest_not_run():
    """Cases finish after the last score update (a cancel cuts it off): the progress and the
    score line say the same cases done, and the cases never judged are not run."""
    view = view_of(
        at(T0, started()),
        at(T0 + 1, PhaseChanged(phase="evaluate")),
        at(T0 + 2, CasesPlanned(case_ids=CASES[:4])),
        at(T0 + 3, CaseFinished(result=result(CASES[0]))),
        at(T0 + 3, ScoreUpdated(score=Score(done=1, planned=4))),
        at(T0 + 4, CaseFinished(result=result(CASES[1]))),
        at(T0 + 5, CaseFinished(result=result(CASES[2], passed=False))),
    )
    shown = view.shown_score()
    assert shown is not None and (shown.done, shown.planned) == (3, 4)
    assert run_progress(view, now=T0 + 6).done == 3
    assert "3/4 cases done" in plain(score_segments(shown))
    assert view.results_summary() == "2 accepted · 1 wrong_answer · 1 pending"

    view.apply(at(T0 + 7, RunFinished(status="cancelled", error="cancelled by the operator")))
    p = run_progress(view, now=T0 + 8)
    shown = view.shown_score()
    assert (p.done, p.planned) == (3, 4) and shown is not None and shown.done == 3
    assert view.results_summary() == "2 accepted · 1 wrong_answer · 1 not run"
    assert [row.not_run for row in view.cases.values()] == [False, False, False, True]


def test_bar():
    assert bar(0.25, 8) == ("━━", "──────")
    assert bar(None, 4) == ("", "────")
    assert bar(1.5, 3) == ("━━━", "")
    assert bar(0.5, 0) == ("", "")
