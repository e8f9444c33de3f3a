"""What displays say (icae_tui/display/wording.py), with no Textual and no Docker: an unknown
score is not zero (nor stored as one), rungs of the ladder that never ran are not failed, a
question's responder after a switch, the responders a stored run used, the notice of a run's
end."""

from __future__ import annotations

import io

from icae_tui.display import wording as w
from icae_tui.display.plain import PlainPrinter
from icae_tui.display.view import RunView
from icae_tui.display.wording import ended_notice
from icae_tui.domain.events import (
    CaseFinished,
    CasesPlanned,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score, SplitScore, Verdict
from icae_tui.domain.task import Split
from icae_tui.evaluation.scoring import score
from icae_tui.evaluation.verdict import build_error_result, judge
from icae_tui.store.database import RunStore
from tests.test_verdict import REF, TASK, side
from tests.ui.helpers import score as shown


def case(case_id: str, passed: bool) -> CaseResult:
    split, rest = case_id.split("/")
    return CaseResult(
        case_id=case_id, split=split, pattern=rest.split("#")[0], command="tool",
        verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER,
        reason="identical" if passed else "stdout differs", passed=passed,
        metrics={"exec": 1.0, "sp": passed, "em": passed, "fm": passed},
    )  # fmt: skip


PLANNED = ["public/a#0", "public/a#1", "hidden/b#0", "enhanced/c#0"]


def started(responder: str = "simulated") -> RunStarted:
    return RunStarted(
        run_id="r1", task_id="t", task_title="T", agent="scripted:good", level="L1",
        responder=responder, budget=3, prd="Build it.",
    )  # fmt: skip


# --- unknown is not zero --------------------------------------------------------------------


def test_a_score_with_only_public_cases_done_has_no_overall_yet():
    s = score([case("public/a#0", True), case("public/a#1", False)], planned=4)
    assert not s.measured
    line = w.score_line(s)
    assert "0.0%" not in line, line
    assert "overall —" in line and "macro —" in line
    assert "exec —" in line and "FM —" in line
    assert "2/4 cases done" in line


def test_a_measured_zero_is_still_zero():
    s = score([case("public/a#0", True), case("hidden/b#0", False)], planned=4)
    assert s.measured
    assert "overall 0.0%" in w.score_line(s)


def test_a_failed_build_scores_zero_even_without_hidden_cases():
    results = [build_error_result(TASK, REF.model_copy(update={"split": Split.PUBLIC}), "no build")]
    s = score(results, planned=1, build_ok=False)
    s.overall = s.macro = 0.0  # what the run does on a failed build
    assert s.measured
    assert "overall 0.0%" in w.score_line(s)


def test_a_score_built_without_splits_is_taken_as_given():
    s = Score(done=1, planned=1, overall=0.5, macro=0.5)  # stored before splits were kept
    assert s.measured
    assert "overall 50.0%" in w.score_line(s)


def test_headless_prints_a_dash_for_an_unknown_overall():
    out = io.StringIO()
    printer = PlainPrinter(out)
    results = [case("public/a#0", True)]
    for ev in (
        started(),
        CasesPlanned(case_ids=["public/a#0"]),
        CaseFinished(result=results[0]),
        ScoreUpdated(score=score(results, planned=1)),
    ):
        printer(ev)
    score_lines = [line for line in out.getvalue().splitlines() if line.startswith("score:")]
    assert score_lines == ["score: " + w.plain(w.score_segments(score(results, planned=1)))]
    assert "overall —" in score_lines[0] and "0.0%" not in score_lines[0]


def test_a_run_that_ends_without_a_score_shows_its_figures_as_partial():
    results = [case("public/a#0", True), case("hidden/b#0", True)]
    view = RunView.from_events(
        [
            started(),
            CasesPlanned(case_ids=PLANNED),
            *(CaseFinished(result=r) for r in results),
            ScoreUpdated(score=score(results, planned=4)),
            RunFinished(status="cancelled", error="cancelled by the operator"),
        ]
    )
    assert view.score is not None and view.score_partial
    line = w.plain(w.score_segments(view.score, partial=view.score_partial))
    assert line.startswith("overall — (partial 100.0% of 1 scored)"), line
    assert "2/4 cases done" in line


async def test_a_run_that_scored_nothing_is_stored_without_an_overall(fixture_catalog, tmp_path):
    from icae_tui.runs.config import RunConfig
    from icae_tui.runs.run import Run, RunOutcome

    store = RunStore(tmp_path / "runs.db")
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"]), store)
    store.create_run(run.run_id, "mini", "scripted:good", "L1", "simulated", 0.0)
    public_only = score([case("public/a#0", True)], planned=1)
    await run._finish(RunOutcome(run.run_id, "completed", public_only))
    row = store.run(run.run_id)
    assert row is not None and row.status == "completed"
    assert row.overall is None  # history and `icae runs` show "—", as the score line does


# --- rungs that never ran -------------------------------------------------------------------


def ladder(result: CaseResult) -> str:
    return w.plain(w.ladder_segments(result))


def test_a_wrong_exit_code_leaves_the_later_rungs_not_reached():
    r = judge(TASK, REF, side(exit_code=0), side(exit_code=1))
    assert r.verdict is Verdict.WRONG_ANSWER and r.metrics["fm_score"] == 1.0
    text = ladder(r)
    assert text.startswith("exec ✘"), text
    assert "SP, EM, FM not reached" in text
    assert "SP ✘" not in text and "FM score" not in text


def test_each_rung_reads_as_far_as_the_ladder_went():
    accepted = judge(TASK, REF, side(), side())
    assert ladder(accepted) == "exec ✔  SP ✔  EM ✔  FM ✔ (FM score 1.00)"
    differs = judge(TASK, REF, side("abcdefgh\n"), side("abcdefgX\n"))
    assert ladder(differs).startswith("exec ✔  SP ✔  EM ✘  FM ✔ (FM score 0.")
    timed_out = judge(TASK, REF, side(), side(timed_out=True, exit_code=None))
    assert ladder(timed_out) == "exec, SP, EM, FM not reached"
    built = build_error_result(TASK, REF, "no build")
    assert ladder(built) == "exec, SP, EM, FM not reached"


# --- a question's responder after a switch ---------------------------------------------------


def question_heads(view: RunView) -> list[str]:
    return [w.plain(t.head) for t in view.turns if t.kind == "question"]


def test_a_waiting_question_names_the_responder_it_now_waits_for():
    asked = QuestionAsked(question_id=1, text="How?", remaining_before=3, mode="human")
    view = RunView.from_events([started("human"), asked])
    assert question_heads(view)[0].endswith("for human")
    view.apply(ResponderChanged(mode="assisted"))
    assert question_heads(view)[0].endswith("for assisted"), question_heads(view)
    view.apply(ResponderChanged(mode="simulated"))
    assert question_heads(view)[0].endswith("for simulated"), question_heads(view)
    view.apply(QuestionAnswered(question_id=1, text="So.", record_ids=["C001"], remaining=2))
    view.apply(ResponderChanged(mode="human"))  # answered: its head stays as it was
    assert question_heads(view)[0].endswith("for simulated")


def test_history_knows_every_responder_a_run_used(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    store.create_run("r1", "t", "scripted:good", "L1", "simulated", 1.0)
    store.create_run("r2", "t", "scripted:good", "L1", "human", 2.0)
    for seq, ev in enumerate([started(), ResponderChanged(mode="human"),
                              ResponderChanged(mode="assisted")], 1):  # fmt: skip
        ev.run_id, ev.seq, ev.ts = "r1", seq, float(seq)
        store.append(ev)
    assert store.responders_used(["r1", "r2", "r3"]) == {"r1": ["human", "assisted"]}
    assert w.responders_label("simulated", ["human", "assisted"]) == "simulated→human→assisted"
    assert w.responders_label("human", []) == "human"


# --- the end of a run -----------------------------------------------------------------------


def test_end_notices():
    done = RunFinished(status="completed", score=shown(4, 4, 0.75))
    assert ended_notice(done) == ("Run completed", "overall 75.0% · 4/4 cases done")
    failed = RunFinished(status="failed", error="Docker engine lost")
    assert ended_notice(failed) == ("Run failed", "Docker engine lost")
    cancelled = RunFinished(status="cancelled", error="cancelled by the operator")
    assert ended_notice(cancelled, shown(1, 4, 0.0)) == (
        "Run cancelled", "cancelled by the operator · 1/4 cases done",
    )  # fmt: skip
    public_only = Score(done=1, planned=1, by_split={"public": SplitScore(total=1, passed=1)})
    unmeasured = RunFinished(status="completed", score=public_only)
    assert ended_notice(unmeasured)[1].startswith("overall —")


# --- said once ------------------------------------------------------------------------------


def test_the_build_line_says_its_outcome_once():
    from icae_tui.domain.events import BuildChecked
    from icae_tui.evaluation.gate import failed_build_reason

    def line(ok: bool, reason: str) -> str:
        return w.build_line(BuildChecked(ok=ok, exit_code=0 if ok else 2, reason=reason))

    assert line(True, "build passed") == "build passed"  # the gate's reason when it passes
    assert line(True, "build command exited 0") == "build ok — build command exited 0"
    assert line(False, failed_build_reason(2, "", "oops\n")) == "build FAILED (exit 2): oops"
    assert line(False, "no delivery: semver.py") == "build FAILED — no delivery: semver.py"
    assert line(False, "build gate timed out") == "build FAILED — build gate timed out"
