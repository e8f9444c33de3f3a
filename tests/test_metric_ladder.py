"""The metric ladder's formulas (README "How a delivery is scored"), pinned on small
hand-made result sets: overall over hidden + enhanced, macro over command patterns of uneven
size, per tier, the public − hidden gap, the verdict distribution, oracle failures left out,
empty tiers, a failed build, SM not measured."""

from __future__ import annotations

import pytest

from icae_tui.domain.results import CaseResult, Split, Verdict
from icae_tui.evaluation.scoring import score
from icae_tui.evaluation.semantic import SM, with_sm
from icae_tui.evaluation.verdict import build_error_result
from tests.test_verdict import REF, TASK

P, H, E = Split.PUBLIC, Split.HIDDEN, Split.ENHANCED


def _case(n: int, split: Split, pattern: str, verdict: Verdict, **metrics: float) -> CaseResult:
    ok = verdict is Verdict.ACCEPTED
    flags = {"exec": 1.0, "sp": 1.0, "em": float(ok), "fm": float(ok)} | metrics
    return CaseResult(
        case_id=f"{split.value}/{pattern}#{n}", split=split, pattern=pattern, command="",
        verdict=verdict, reason="", metrics=flags, passed=ok,
    )  # fmt: skip


A, W = Verdict.ACCEPTED, Verdict.WRONG_ANSWER
# hidden: pattern "big" 3 of 4 pass, "small" 0 of 1; enhanced: "big" 1 of 1;
# public: 2 of 2; one hidden case whose oracle failed (left out of every rate)
RESULTS = [
    _case(0, P, "big", A), _case(1, P, "small", A),
    _case(0, H, "big", A), _case(1, H, "big", A), _case(2, H, "big", A), _case(3, H, "big", W),
    _case(4, H, "small", W),
    _case(0, E, "big", A),
    _case(5, H, "small", Verdict.ORACLE_ERROR),
]  # fmt: skip


def test_overall_is_passed_over_total_of_the_counted_hidden_and_enhanced_cases():
    s = score(RESULTS, planned=len(RESULTS))
    assert s.overall == round(4 / 6, 4)  # hidden 3 + enhanced 1 of 6; public and oracle out
    assert s.scored == 6 and s.done == 9 and s.planned == 9


def test_macro_averages_each_patterns_rate_so_a_small_pattern_weighs_as_much():
    s = score(RESULTS, planned=len(RESULTS))
    # big: hidden 3/4 + enhanced 1/1 = 4/5; small: 0/1 → (0.8 + 0.0) / 2
    assert s.macro == 0.4
    assert {p: (v.passed, v.total) for p, v in s.by_pattern.items()} == {
        "big": (4, 5), "small": (0, 1),
    }  # fmt: skip
    # per tier, the macro of that tier alone: hidden (3/4 + 0/1) / 2, enhanced 1/1
    assert s.by_split[H].macro == 0.375 and s.by_split[E].macro == 1.0


def test_per_tier_figures_and_the_public_minus_hidden_gap():
    s = score(RESULTS, planned=len(RESULTS))
    assert (s.by_split[P].passed, s.by_split[P].total) == (2, 2)
    assert (s.by_split[H].passed, s.by_split[H].total) == (3, 5)
    assert (s.by_split[E].passed, s.by_split[E].total) == (1, 1)
    assert s.public_minus_hidden == round(1.0 - 3 / 5, 4)


def test_the_verdict_distribution_counts_every_case_of_every_split():
    s = score(RESULTS, planned=len(RESULTS))
    assert s.verdicts == {Verdict.ACCEPTED: 6, Verdict.WRONG_ANSWER: 2, Verdict.ORACLE_ERROR: 1}


def test_each_metric_rate_is_over_the_scored_cases_absent_counting_zero():
    results = [_case(0, H, "a", A), _case(1, H, "a", W, em=0.0, fm=1.0),
               _case(2, H, "a", W, sp=0.0, em=0.0, fm=0.0), _case(3, E, "a", W, fm=0.0)]  # fmt: skip
    del results[3].metrics["fm"]  # a metric the case never reached
    s = score(results, planned=4)
    assert s.rates == {"exec": 1.0, "sp": 0.75, "em": 0.25, "fm": 0.5}


def test_an_empty_tier_has_no_rate_and_no_gap():
    s = score([_case(0, H, "a", A)], planned=1)
    assert s.by_split[E].total == 0 and s.by_split[E].rate == 0.0
    assert s.by_split[P].total == 0 and s.public_minus_hidden is None
    assert s.overall == 1.0 and s.measured


def test_nothing_scored_yet_is_not_a_measured_zero():
    s = score([_case(0, P, "a", A)], planned=3)
    assert s.overall == 0.0 and not s.measured


def test_a_failed_build_zeroes_every_figure():
    refs = [REF.model_copy(update={"split": split}) for split in (P, H, E)]
    results = [build_error_result(TASK, ref, "make: no rule") for ref in refs]
    s = score(results, planned=3, build_ok=False)
    assert s.measured and not s.build_ok
    assert s.overall == 0.0 and s.macro == 0.0 and all(v == 0.0 for v in s.rates.values())
    assert s.verdicts == {Verdict.BUILD_ERROR: 3}


@pytest.mark.parametrize("judged", [False, True])
def test_sm_without_a_judge_is_not_measured_and_with_one_is_over_measured_cases(judged):
    results = [_case(0, H, "a", A), _case(1, H, "a", W)]
    if judged:
        results = [r.model_copy(update={"metrics": {**r.metrics, SM: v}})
                   for r, v in zip(results, (1.0, 1.0), strict=True)]  # fmt: skip
    s = with_sm(score(results, planned=2), results)
    if not judged:
        assert SM not in s.rates and all(m.name != SM for m in s.metrics)
    else:
        assert s.rates[SM] == 1.0 and s.semantic.measured == 2
        assert s.semantic.agrees_em == 0.5  # the wrong answer SM calls the same
