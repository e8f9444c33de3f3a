"""Re-scoring at another τ (icae_tui/results/rescore.py) on hand-made cases: FM is SP and fm_score ≥ τ,
a case with no stored FM gets none, and what only the stored score holds is carried over."""

from __future__ import annotations

from icae_tui.domain.events import CaseFinished, CasesPlanned, Progress, RunFinished, RunStarted
from icae_tui.domain.results import CaseResult, MetricSpec, Verdict
from icae_tui.domain.states import RunStatus
from icae_tui.domain.task import Split
from icae_tui.evaluation.scoring import score
from icae_tui.results.rescore import fm_at, rescore, rescored_events


def case(case_id: str, verdict: Verdict, **metrics: float) -> CaseResult:
    return CaseResult(case_id=case_id, split=Split.HIDDEN, pattern="p", command="c",
                      verdict=verdict, reason="", metrics=metrics,
                      passed=verdict == Verdict.ACCEPTED)  # fmt: skip


CASES = [
    case("a", Verdict.ACCEPTED, exec=1, sp=1, em=1, fm=1, fm_score=1.0),
    case("b", Verdict.WRONG_ANSWER, exec=1, sp=1, em=0, fm=1, fm_score=0.9),
    case("c", Verdict.WRONG_ANSWER, exec=1, sp=1, em=0, fm=0, fm_score=0.5),
    case("d", Verdict.SIDE_EFFECTS, exec=1, sp=0, em=0, fm=0, fm_score=1.0),
    case("e", Verdict.TIME_LIMIT),  # never compared: no FM
]


def events(extra_rate: bool = False):
    final = score(CASES, planned=len(CASES))
    if extra_rate:  # a judge's rate, its scorer not registered now
        final.rates["sm"] = 0.25
        final.metrics.append(MetricSpec(name="sm", label="SM"))
    started = RunStarted(task_id="t", task_title="t", agent="x", level="L1",
                         responder="simulated", budget=0, prd="")  # fmt: skip
    return [
        started,
        CasesPlanned(case_ids=[c.case_id for c in CASES]),
        *(CaseFinished(result=c) for c in reversed(CASES)),  # finished in any order
        RunFinished(status=RunStatus.COMPLETED, score=final),
    ]


def test_fm_is_sp_and_the_stored_score_at_tau():
    assert [fm_at(c, 0.95).metrics.get("fm") for c in CASES] == [1, 0, 0, 0, None]
    assert [fm_at(c, 0.0).metrics.get("fm") for c in CASES] == [1, 1, 1, 0, None]
    assert fm_at(CASES[0], 0.5) is CASES[0]  # unchanged: the same result


def test_rescore_moves_fm_only_and_keeps_what_it_cannot_recompute():
    r = rescore(events(extra_rate=True), 0.0)
    assert [(o.case_id, n.fm) for o, n in r.changed] == [("c", True)]
    assert r.old_score.rates["fm"] == 0.4 and r.new_score.rates["fm"] == 0.6  # of 5 counted
    assert r.new_score.overall == r.old_score.overall == 0.2
    assert r.new_score.rates["sm"] == 0.25 and "sm" in {m.name for m in r.new_score.metrics}
    assert not r.stored_differs
    assert r.implied_tau() == (0.5, 0.9)
    assert [o.case_id for o, _ in rescore(events(), 0.95).changed] == ["b"]


def test_a_saved_rescore_is_the_run_with_its_scores_replaced_and_a_note():
    out = rescored_events(events(extra_rate=True), 0.0, "new", "old")
    assert [e.seq for e in out] == list(range(1, len(out) + 1))
    assert {e.run_id for e in out} == {"new"}
    assert isinstance(out[1], Progress) and out[1].message.startswith("re-scored from run old:")
    final = out[-1]
    assert isinstance(final, RunFinished) and final.score is not None
    assert final.score.rates["fm"] == 0.6 and final.score.rates["sm"] == 0.25
