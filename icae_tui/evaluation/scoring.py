"""Where scoring happens: `judge_case` gives a case its result (the Evaluator), `score`
gives the delivery its score (the Run), each from every registered scorer (scorers.py), the
ladder's first (ladder.py).

Overall = passed / total over hidden + enhanced (ICAE); public cases are reported apart.
Macro = mean over command patterns of each pattern's pass rate (CLI-Tool-Bench).
Cases where the oracle itself failed or disagreed with itself are left out of every rate
and reported apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from icae_tui.domain.results import SCORED_SPLITS, CaseResult, Score
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.ladder import LADDER, scored
from icae_tui.evaluation.scorers import case_scorers, checked, delivery_scorers, metric_specs
from icae_tui.evaluation.verdict import Attempt

__all__ = ["SCORED_SPLITS", "judge_case", "metric_specs", "score"]


def judge_case(
    task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
) -> CaseResult:
    """The ladder's result of the case (verdict, reason, its metrics), with every other
    registered case scorer's metrics merged in."""
    result = LADDER.judge(task, ref, oracles, delivery)
    metrics = dict(result.metrics)
    for scorer in case_scorers():
        if scorer is not LADDER:
            metrics |= checked(scorer, scorer.score(task, ref, oracles, delivery))
    if metrics == result.metrics:
        return result
    return result.model_copy(update={"metrics": metrics})


def score(results: Iterable[CaseResult], *, planned: int, build_ok: bool = True) -> Score:
    """The ladder's aggregate of the results, with every other delivery scorer's figures
    added to its rates."""
    results = list(results)
    ladder, *others = delivery_scorers()
    out = ladder.summary(results, planned=planned, build_ok=build_ok)
    ours = scored(results)
    for scorer in others:
        out.rates |= {k: round(v, 4) for k, v in checked(scorer, scorer.aggregate(ours)).items()}
        out.metrics += scorer.metrics
    return out
