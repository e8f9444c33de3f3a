"""Re-scoring a stored run with another FM threshold τ (`icae runs rescore`), no container:
everything FM needs is stored with each case.

A case's FM is `SP and fm_score ≥ τ` (evaluation/verdict.py; for stored expected outputs SP
always holds, evaluation/expected.py), and each CaseFinished stores SP and fm_score. A case
that never reached the ladder's comparison (a failed build, a time limit, the oracle's own
failure) stores no FM and gets none. Verdicts, and so passes, overall and macro, do not
depend on τ: only FM and its rate move.

Both scores are aggregated now, by today's scorers (evaluation/scoring.score), from the
stored cases and from the re-scored ones, so the difference is τ's alone; what only the
stored score holds (figures made after the cases, rates of scorers not registered now) is
carried over to both (`carried`). `stored_differs` says when the run's stored score is not
what today's scorers make of its stored cases.

`rescored_events` gives the events of a new run holding the re-scored cases (`--save`): the
original's events with each case's FM, each score and the final one replaced, and a Progress
event after RunStarted saying where it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from icae_tui.domain.events import (
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    Event,
    Progress,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import SCORED_SPLITS, CaseResult, LadderMetric, Score
from icae_tui.domain.task import ReviewWeights
from icae_tui.evaluation.review import reweighted
from icae_tui.evaluation.scoring import score
from icae_tui.evaluation.semantic import SemanticJudge, unjudged, with_sm, without_sm
from icae_tui.results.summary import RESCORED_FROM


def fm_at(result: CaseResult, tau: float) -> CaseResult:
    """The case with FM decided at `tau` from its stored SP and fm_score (a case without a
    stored FM is returned as it is)."""
    m = result.metrics
    if LadderMetric.FM not in m or LadderMetric.FM_SCORE not in m:
        return result
    fm = float(result.holds(LadderMetric.SP) and m[LadderMetric.FM_SCORE] >= tau)
    if fm == m[LadderMetric.FM]:
        return result
    return result.model_copy(update={"metrics": {**m, LadderMetric.FM: fm}})


@dataclass(frozen=True)
class Rescored:
    tau: float
    old_results: list[CaseResult]
    new_results: list[CaseResult]
    old_score: Score  # today's aggregate of the stored cases
    new_score: Score  # of the re-scored ones
    stored_score: Score | None  # what the run stored

    @property
    def changed(self) -> list[tuple[CaseResult, CaseResult]]:
        """The cases whose FM moved: (stored, re-scored)."""
        return [(o, n) for o, n in zip(self.old_results, self.new_results, strict=True) if o is not n]

    @property
    def stored_differs(self) -> bool:
        s = self.stored_score
        return s is not None and (s.overall, s.macro, s.rates) != (
            self.old_score.overall, self.old_score.macro, self.old_score.rates
        )  # fmt: skip

    def implied_tau(self) -> tuple[float, float] | None:
        """The stored cases' τ as far as their FM shows it: (low, high] such that every case
        with SP has FM exactly when its fm_score is above low; None when no case says."""
        low, high = 0.0, 1.0
        said = False
        for r in self.old_results:
            m = r.metrics
            if r.holds(LadderMetric.SP) and LadderMetric.FM_SCORE in m and LadderMetric.FM in m:
                said = True
                if r.holds(LadderMetric.FM):
                    high = min(high, m[LadderMetric.FM_SCORE])
                else:
                    low = max(low, m[LadderMetric.FM_SCORE])
        return (low, high) if said else None


def carried(stored: Score | None, new: Score) -> Score:
    """`new` (today's aggregate) with what only the stored score holds carried over: figures
    made after the cases (a review, say) and rates of scorers not registered now (a judge's),
    none of which τ moves."""
    if stored is None:
        return new
    extra = {name: getattr(stored, name) for name in stored.model_fields_set - new.model_fields_set}
    names = {m.name for m in new.metrics}
    rates = {k: v for k, v in stored.rates.items() if k not in new.rates} | new.rates
    metrics = new.metrics + [m for m in stored.metrics if m.name not in names]
    return new.model_copy(update={**extra, "rates": rates, "metrics": metrics})


def _planned(events: Sequence[Event], results: Sequence[CaseResult]) -> tuple[int, bool]:
    planned, build_ok = len(results), True
    for ev in events:
        if isinstance(ev, CasesPlanned):
            planned = len(ev.case_ids)
        elif isinstance(ev, BuildChecked):
            build_ok = ev.ok
    return planned, build_ok


def rescore(events: Sequence[Event], tau: float) -> Rescored:
    planned_ids = next((ev.case_ids for ev in events if isinstance(ev, CasesPlanned)), [])
    order = {case_id: i for i, case_id in enumerate(planned_ids)}
    old = sorted(
        (ev.result for ev in events if isinstance(ev, CaseFinished)),
        key=lambda r: order.get(r.case_id, len(order)),
    )  # in planned order: cases finish in any
    new = [fm_at(r, tau) for r in old]
    planned, build_ok = _planned(events, old)
    stored = None
    for ev in events:
        if isinstance(ev, ScoreUpdated) or (isinstance(ev, RunFinished) and ev.score):
            stored = ev.score
    return Rescored(
        tau=tau,
        old_results=old,
        new_results=new,
        old_score=carried(stored, score(old, planned=planned, build_ok=build_ok)),
        new_score=carried(stored, score(new, planned=planned, build_ok=build_ok)),
        stored_score=stored,
    )


async def judged_again(result: Rescored, judge: SemanticJudge) -> Rescored:
    """`result` with SM judged again on the re-scored cases from their stored outputs (no
    container): the new judge's SM, or not measured where it cannot say."""
    new = [await judge.judge(unjudged(r)) for r in result.new_results]
    counted = [r for r in new if r.verdict.counted and r.split in SCORED_SPLITS]
    score_ = with_sm(without_sm(result.new_score), counted)
    return replace(result, new_results=new, new_score=score_)


def review_again(result: Rescored, weights: ReviewWeights) -> Rescored | None:
    """`result` with the stored review score weighted again (None: the run stored none)."""
    stored = result.new_score.review
    if stored is None:
        return None
    again = reweighted(stored, result.new_score, weights)
    return replace(result, new_score=result.new_score.model_copy(update={"review": again}))


def rescored_events(events: Sequence[Event], tau: float, run_id: str, origin: str) -> list[Event]:
    """The events of a new run `run_id`: the original's (`origin`), each case's FM at `tau`,
    each score as the re-scored cases so far give it, and a note after RunStarted."""
    planned, build_ok = _planned(events, [e.result for e in events if isinstance(e, CaseFinished)])
    out: list[Event] = []
    done: list[CaseResult] = []
    for ev in events:
        if isinstance(ev, CaseFinished):
            result = fm_at(ev.result, tau)
            done.append(result)
            ev = ev.model_copy(update={"result": result})
        elif isinstance(ev, ScoreUpdated) or (isinstance(ev, RunFinished) and ev.score):
            now = score(done, planned=planned, build_ok=build_ok)
            ev = ev.model_copy(update={"score": carried(ev.score, now)})
        else:
            ev = ev.model_copy()
        out.append(ev)
        if isinstance(ev, RunStarted):
            note = Progress(
                message=f"{RESCORED_FROM}{origin}: FM threshold τ = {tau:g}, decided "
                "from the stored SP and fm_score of each case (no container ran)"
            )
            note.ts = ev.ts
            out.append(note)
    for seq, ev in enumerate(out, start=1):
        ev.run_id, ev.seq = run_id, seq
    return out
