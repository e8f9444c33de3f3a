"""Scorers as plug-ins (no Docker): the registry, `judge_case` (the ladder's verdict with
every registered scorer's metrics), the delivery's score iterating the metric specs, what
displays say of other scorers' metrics, and results and scores stored before metrics were
named still loading."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from icae_tui.display import wording as w
from icae_tui.display.results_filter import METRIC_SORT, ResultsQuery, select, sort_by
from icae_tui.display.view import CaseRow, RunView
from icae_tui.domain.events import CaseFinished, CasesPlanned, ScoreUpdated, parse_event
from icae_tui.domain.results import (
    LADDER_METRICS,
    CaseResult,
    LadderMetric,
    MetricKind,
    MetricSpec,
    Score,
    Verdict,
)
from icae_tui.domain.task import CaseRef, Split, Task
from icae_tui.evaluation.ladder import LADDER
from icae_tui.evaluation.scorers import (
    CaseContext,
    RunContext,
    Scored,
    ScorerError,
    case_scorer,
    case_scorers,
    delivery_scorer,
    delivery_scorers,
    metric_specs,
    register_case_scorer,
    registered,
    registered_case_scorers,
    unregister_case_scorer,
)
from icae_tui.evaluation.scoring import Scoring, score
from icae_tui.evaluation.semantic import SEMANTIC_MATCH, SM_METRIC
from icae_tui.evaluation.verdict import Attempt, SideFault, decide
from tests.scorer_run import SHOUT, judged, shout
from tests.test_verdict import REF, TASK, side

AGGREGATED = [m.name for m in LADDER_METRICS if m.kind.aggregated]


def scorer_of(spec: MetricSpec, value: object) -> object:
    """A case scorer of `spec` that gives `value` for every case."""

    @case_scorer(spec, name=f"gives-{spec.name}")
    def gives(task: Task, ref: CaseRef, oracles: Sequence[Attempt], d: Attempt) -> dict:
        return {spec.name: value}

    return gives


def at(split: Split) -> CaseRef:
    return REF.model_copy(update={"split": split})


# --- the registry --------------------------------------------------------------------------


def test_the_ladder_comes_first_and_alone_by_default():
    assert case_scorers() == (LADDER,)
    assert metric_specs() == LADDER_METRICS
    assert len(delivery_scorers()) == 1


def test_a_scorer_registered_for_a_block_is_gone_after_it():
    with registered(shout):
        assert case_scorers() == (LADDER, shout)
        assert metric_specs() == (*LADDER_METRICS, SHOUT)
        assert [m.name for m in delivery_scorers()[0].metrics] == [*AGGREGATED, "shout"]
    assert case_scorers() == (LADDER,)


def test_registering_takes_a_line_and_unregistering_another():
    assert register_case_scorer(shout) is shout
    try:
        assert shout in case_scorers()
    finally:
        unregister_case_scorer(shout)
    assert shout not in case_scorers()


def test_a_class_is_a_scorer_too():
    class Lines:
        name = "lines"
        metrics = (MetricSpec(name="one_line", label="1L", kind=MetricKind.PASS),)

        async def score(self, case: CaseContext) -> dict[str, float]:
            return {"one_line": case.delivery.stdout_full.count(b"\n") == 1}

    lines = Lines()
    with registered(lines):
        assert judged(TASK, REF, [side()], side()).metrics["one_line"] == 1.0


@pytest.mark.parametrize(
    "bad",
    [
        scorer_of(MetricSpec(name="sp", label="SP again"), 1.0),  # the ladder's name
        case_scorer(MetricSpec(name="other", label="o"), name="shout")(shout.fn),  # taken
        case_scorer(SHOUT, name="shout2")(shout.fn),  # a metric taken
        case_scorer(name="nothing")(shout.fn),  # no metric at all
        case_scorer(SHOUT, SHOUT, name="twice")(shout.fn),
    ],
    ids=["ladder metric", "scorer name", "metric name", "no metrics", "twice"],
)
def test_a_scorer_must_bring_new_names(bad):
    with registered(shout):
        with pytest.raises(ScorerError):
            register_case_scorer(bad)
        assert case_scorers() == (LADDER, shout)


def test_the_ladder_cannot_be_removed_nor_a_stranger_registered():
    with pytest.raises(ValueError):
        unregister_case_scorer(LADDER)
    with pytest.raises(TypeError):
        register_case_scorer(object())  # type: ignore[arg-type]


def test_a_block_that_fails_leaves_nothing_registered():
    taken = scorer_of(MetricSpec(name="em", label="EM"), 1.0)
    with pytest.raises(ScorerError), registered(shout, taken):
        pass
    with pytest.raises(RuntimeError), registered(shout):
        raise RuntimeError("boom")
    assert case_scorers() == (LADDER,)


def test_a_delivery_metric_may_not_take_a_case_metric_name():
    @delivery_scorer(MetricSpec(name="shout", label="all shout", kind=MetricKind.SCORE))
    def all_shout(results: Sequence[CaseResult]) -> dict[str, float]:
        return {}

    with registered(shout), pytest.raises(ScorerError), registered(all_shout):
        pass


# --- judging a case ------------------------------------------------------------------------


def test_the_ladder_alone_judges_as_decide_does():
    for delivery in (side(), side("no\n"), side(exit_code=3), side(timed_out=True)):
        assert judged(TASK, REF, [side()], delivery) == decide(TASK, REF, [side()], delivery)
        result = decide(TASK, REF, [side()], delivery)
        case = CaseContext(RunContext(TASK), REF, [side()], delivery, result)
        assert asyncio.run(LADDER.score(case)) == result.metrics


def test_another_scorer_adds_metrics_and_leaves_the_verdict():
    with registered(shout):
        loud = judged(TASK, REF, [side("HI\n")], side("HI\n"))
        quiet = judged(TASK, REF, [side("HI\n")], side("hi\n"))
    alone = decide(TASK, REF, [side("HI\n")], side("hi\n"))
    assert loud.verdict is Verdict.ACCEPTED and loud.metrics["shout"] == 1.0
    assert (quiet.verdict, quiet.reason) == (alone.verdict, alone.reason)
    assert quiet.metrics == alone.metrics | {"shout": 0.0}
    assert list(quiet.metrics)[-1] == "shout"  # after the ladder's


def test_a_scorer_sees_every_attempt_and_may_give_nothing():
    seen = []

    @case_scorer(MetricSpec(name="oracle_runs", label="runs", kind=MetricKind.SCORE))
    def runs(task, ref, oracles, delivery) -> dict[str, float]:
        seen.append((len(oracles), type(delivery).__name__))
        return {} if isinstance(delivery, SideFault) else {"oracle_runs": len(oracles) / 2}

    fault = SideFault(RuntimeError("engine gone"))
    with registered(shout, runs):
        twice = judged(TASK, REF, [side(), side()], side())
        faulted = judged(TASK, REF, [side()], fault)
    assert twice.metrics["oracle_runs"] == 1.0
    assert faulted.verdict is Verdict.RUNTIME_ERROR and faulted.metrics == {}
    assert seen == [(2, "SideOutcome"), (1, "SideFault")]


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        (MetricSpec(name="p", label="p"), 0.5),  # a PASS metric is 0 or 1
        (MetricSpec(name="s", label="s", kind=MetricKind.SCORE), 1.5),
        (MetricSpec(name="s", label="s", kind=MetricKind.SCORE), float("nan")),
    ],
)
def test_a_value_out_of_its_kind_is_refused(spec, value):
    with registered(scorer_of(spec, value)), pytest.raises(ScorerError, match=spec.name):
        judged(TASK, REF, [side()], side())


def test_a_metric_not_declared_is_refused():
    @case_scorer(SHOUT, name="sloppy")
    def sloppy(task, ref, oracles, delivery) -> dict[str, float]:
        return {"whisper": 1.0}

    with registered(sloppy), pytest.raises(ScorerError, match="whisper"):
        judged(TASK, REF, [side()], side())


# --- the delivery's score ------------------------------------------------------------------


def test_each_aggregated_metric_gets_its_rate_over_the_scored_cases():
    tone = MetricSpec(name="tone", label="tone", kind=MetricKind.SCORE)
    with registered(shout, scorer_of(tone, 0.25)):
        results = [
            judged(TASK, at(Split.PUBLIC), [side("A\n")], side("A\n")),  # not scored
            judged(TASK, at(Split.HIDDEN), [side("A\n")], side("A\n")),
            judged(TASK, at(Split.HIDDEN), [side("A\n")], side("a\n")),
            judged(TASK, at(Split.ENHANCED), [side("A\n")], SideFault(OSError("x"))),
        ]
        s = score(results, planned=4)
    assert [m.name for m in s.metrics] == [*AGGREGATED, "shout", "tone"]  # no FM score
    assert s.rates["shout"] == round(1 / 3, 4)  # the fault has none: it counts as 0
    assert s.rates["tone"] == 0.25
    assert s.rates["exec"] == round(2 / 3, 4) and s.overall == round(1 / 3, 4)


def test_a_delivery_scorer_adds_its_figures_after_the_rates():
    @delivery_scorer(MetricSpec(name="flawless", label="flawless", kind=MetricKind.SCORE))
    def flawless(results: Sequence[CaseResult]) -> dict[str, float]:
        return {"flawless": all(r.passed for r in results)}

    with registered(flawless):
        s = score([judged(TASK, REF, [side()], side())], planned=1)
    assert [m.name for m in s.metrics] == [*AGGREGATED, "flawless"]
    assert s.rates["flawless"] == 1.0
    assert w.score_line(s).endswith("FM 100.0%  flawless 100.0%  │  1/1 cases done")


def _result(case_id, split, pattern, passed):
    return CaseResult(
        case_id=case_id, split=split, pattern=pattern, command="t",
        verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER, reason="",
        metrics={"exec": 1.0}, passed=passed,
    )  # fmt: skip


def test_score_overall_macro_and_gap():
    results = [
        _result("public/a#0", "public", "a", True),
        _result("hidden/a#0", "hidden", "a", True),
        _result("hidden/a#1", "hidden", "a", True),
        _result("hidden/a#2", "hidden", "a", True),
        _result("hidden/b#0", "hidden", "b", False),
        _result("enhanced/e#0", "enhanced", "e", True),
    ]
    s = score(results, planned=6)
    assert s.overall == 0.8  # 4 of 5 hidden+enhanced; public excluded
    assert s.macro == round((1 + 0 + 1) / 3, 4)  # per pattern, then mean
    assert s.by_split["public"].passed == 1
    assert s.public_minus_hidden == 0.25
    oracle_failed = _result("hidden/c#0", "hidden", "c", False).model_copy(
        update={"verdict": Verdict.ORACLE_ERROR}
    )
    assert score([*results, oracle_failed], planned=7).overall == 0.8


# --- what displays say ---------------------------------------------------------------------


def test_the_score_line_reads_the_ladder_as_before_then_the_others():
    with registered(shout):
        results = [
            judged(TASK, REF, [side("A\n")], side("A\n")),
            judged(TASK, REF, [side("A\n")], side("b\n")),
        ]
        s = score(results, planned=2)
    line = w.score_line(s)
    assert "exec 100.0%  SP 100.0%  EM 50.0%  FM 50.0%  SHOUT 50.0%  │  2/2 cases done" in line


def test_the_ladder_line_shows_other_metrics_after_the_rungs():
    with registered(shout):
        specs = metric_specs()
        loud = judged(TASK, REF, [side("A\n")], side("A\n"))
        late = judged(TASK, REF, [side("A\n")], side("A\n", exit_code=1))
    ladder = "exec ✔  SP ✔  EM ✔  FM ✔ (FM score 1.00)"
    assert w.plain(w.ladder_segments(loud, specs)) == ladder + "  ·  SHOUT ✔"
    assert w.plain(w.ladder_segments(late, specs)).endswith("SP, EM, FM not reached  ·  SHOUT ✔")
    assert w.plain(w.ladder_segments(loud)) == ladder + "  ·  shout 1.00"  # no specs: by name
    lacking = decide(TASK, REF, [side()], side())  # judged without it
    assert w.plain(w.ladder_segments(lacking, specs)) == ladder + "  ·  SHOUT —"
    assert w.plain(w.ladder_segments(lacking, LADDER_METRICS)) == ladder


def test_the_results_sort_by_a_metric_column():
    with registered(shout):
        rows = [
            CaseRow(f"hidden/h#{i}", "p", "hidden", judged(TASK, REF, [side()], side(out)))
            for i, out in enumerate(["A\n", "b\n", "C\n"])
        ]
    q = sort_by(ResultsQuery(), METRIC_SORT + "shout")
    assert q.sort == "metric:shout"
    assert select(rows, q) == ["hidden/h#1", "hidden/h#0", "hidden/h#2"]


# --- stored before metrics were named ------------------------------------------------------

LEGACY_CASE = {
    "case_id": "hidden/h#0", "split": "hidden", "pattern": "p", "command": "tool x",
    "verdict": "wrong_answer", "reason": "stdout differs (similarity 0.90)", "exec_ok": True,
    "sp": True, "em": False, "fm": True, "fm_score": 0.9, "passed": False,
    "oracle": {"exit_code": 0, "stdout": "words=3\n", "stderr": ""},
    "delivery": {"exit_code": 0, "stdout": "words 3\n", "stderr": ""},
}  # fmt: skip
LEGACY_SCORE = {
    "build_ok": True, "done": 1, "planned": 2, "overall": 0.0, "macro": 0.0,
    "by_split": {"hidden": {"total": 1, "passed": 0, "macro": 0.0}},
    "exec_rate": 1.0, "sp_rate": 1.0, "em_rate": 0.0, "fm_rate": 1.0,
    "public_minus_hidden": None,
}  # fmt: skip


def test_a_result_stored_with_flags_loads_with_metrics():
    r = CaseResult.model_validate_json(json.dumps(LEGACY_CASE))
    assert r.metrics == {"exec": 1.0, "sp": 1.0, "em": 0.0, "fm": 1.0, "fm_score": 0.9}
    assert (r.exec_ok, r.sp, r.em, r.fm, r.fm_score) == (True, True, False, True, 0.9)
    stored = json.loads(r.model_dump_json())
    assert "exec_ok" not in stored and stored["metrics"]["fm_score"] == 0.9
    assert w.plain(w.ladder_segments(r)) == "exec ✔  SP ✔  EM ✘  FM ✔ (FM score 0.90)"


def test_a_score_stored_with_named_rates_reads_as_it_did():
    s = Score.model_validate_json(json.dumps(LEGACY_SCORE))
    assert s.rates == {"exec": 1.0, "sp": 1.0, "em": 0.0, "fm": 1.0}
    assert [m.name for m in s.metrics] == AGGREGATED
    assert "exec 100.0%  SP 100.0%  EM 0.0%  FM 100.0%  │  1/2 cases done" in w.score_line(s)
    assert Score.model_validate_json(s.model_dump_json()) == s


def test_a_plan_stored_without_metrics_had_the_ladders():
    old = {"kind": "cases_planned", "run_id": "r", "seq": 3, "ts": 1.0, "case_ids": ["a"]}
    ev = parse_event(json.dumps(old))
    assert isinstance(ev, CasesPlanned) and tuple(ev.metrics) == LADDER_METRICS
    assert RunView.from_events([ev]).metric_specs == LADDER_METRICS


def test_the_events_that_carry_metrics_round_trip():
    with registered(shout):
        r = judged(TASK, REF, [side("A\n")], side("A\n"))
        events = [
            CasesPlanned(case_ids=[r.case_id], metrics=list(metric_specs())),
            CaseFinished(result=r),
            ScoreUpdated(score=score([r], planned=1)),
        ]
    for ev in events:
        assert parse_event(ev.model_dump_json()) == ev
    assert RunView.from_events(events).metric_specs == (*LADDER_METRICS, SHOUT)
    assert LadderMetric.EXEC in r.metrics and r.metrics["shout"] == 1.0


# --- async scorers, the run's context, SM as a scorer ---------------------------------------


def test_an_async_scorer_reads_the_case_context_and_keeps_notes():
    seen = []

    @case_scorer(MetricSpec(name="agrees", label="AG"))
    async def agrees(case: CaseContext) -> Scored:
        seen.append((case.task.id, case.ref.id, case.run.judge_model))
        await asyncio.sleep(0)  # it may await (a model, through the run's gateway)
        return Scored({"agrees": case.result.em}, {"agrees": "the ladder's EM"})

    with registered(agrees):
        r = judged(TASK, REF, [side("A\n")], side("A\n"))
    assert r.metrics["agrees"] == 1.0 and r.notes["agrees"] == "the ladder's EM"
    assert seen == [(TASK.id, REF.id, None)]


def test_sm_is_a_registered_scorer_planned_only_with_a_judge():
    assert SEMANTIC_MATCH in registered_case_scorers()
    assert SEMANTIC_MATCH not in case_scorers()  # no run, no judge: not used
    judged_run = Scoring(RunContext(TASK, judge_model="judge-1"))
    assert judged_run.metrics == (*LADDER_METRICS, SM_METRIC)
    assert Scoring(RunContext(TASK)).metrics == LADDER_METRICS
    # SM sums itself up (over the cases it measured), not the ladder's aggregate
    r = decide(TASK, REF, [side()], side()).model_copy(update={"metrics": {"sm": 1.0}})
    s = judged_run.score([r], planned=1)
    assert s.rates["sm"] == 1.0 and s.semantic is not None and s.semantic.measured == 1
    assert [m.name for m in s.metrics][-1] == "sm"
