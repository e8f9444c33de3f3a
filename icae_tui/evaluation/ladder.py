"""The verdict ladder as the first scorer of each kind (see scorers.py).

`LADDER`, the first case scorer, alone gives a case its verdict and reason, with the metrics
exec, SP, EM, FM and FM score (evaluation/verdict.py, pure; for a task whose cases are judged
against their stored expected outputs, evaluation/expected.py). `LadderAggregate`, the first
delivery scorer, gives overall, macro and the per-split figures from the verdicts, and each
aggregated case metric's rate, iterating the metric specs it is given: a new scorer's
metric gets its rate with no change here.

Overall = passed / total over hidden + enhanced (ICAE); public cases are reported apart.
Macro = mean over command patterns of each pattern's pass rate (CLI-Tool-Bench). Cases where
the oracle itself failed or disagreed with itself are left out of every rate.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from icae_tui.domain.results import (
    LADDER_METRICS,
    SCORED_SPLITS,
    CaseResult,
    MetricSpec,
    Score,
    SplitScore,
)
from icae_tui.domain.task import CaseRef, Reference, Split, Task
from icae_tui.evaluation.expected import judge_expected
from icae_tui.evaluation.verdict import Attempt, decide

if TYPE_CHECKING:
    from icae_tui.evaluation.scorer_context import CaseContext

LADDER_NAME = "ladder"


class Ladder:
    """The first case scorer: the verdict, the reason and the ladder's metrics."""

    name = LADDER_NAME
    metrics = LADDER_METRICS

    def judge(
        self, task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
    ) -> CaseResult:
        if task.spec.cases.reference is Reference.EXPECTED:  # no oracle ran (expected.py)
            return judge_expected(task, ref, delivery)
        return decide(task, ref, oracles, delivery)

    async def score(self, case: CaseContext) -> dict[str, float]:
        """Its metrics of the case (the case context holds its result already)."""
        return dict(case.result.metrics)


LADDER = Ladder()


def scored(results: Sequence[CaseResult]) -> list[CaseResult]:
    """What overall, macro and every rate are over: counted hidden and enhanced cases."""
    return [r for r in results if r.verdict.counted and r.split in SCORED_SPLITS]


def _macro(results: Sequence[CaseResult]) -> float:
    by_pattern: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by_pattern[r.pattern].append(r.passed)
    if not by_pattern:
        return 0.0
    return sum(sum(v) / len(v) for v in by_pattern.values()) / len(by_pattern)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class LadderAggregate:
    """The first delivery scorer, over the case metrics given (the registered scorers')."""

    name = LADDER_NAME

    def __init__(self, case_metrics: Sequence[MetricSpec] = LADDER_METRICS) -> None:
        self.metrics = tuple(m for m in case_metrics if m.kind.aggregated)

    def aggregate(self, results: Sequence[CaseResult]) -> dict[str, float]:
        """Each metric's rate (PASS) or mean (SCORE) over `results`; absent counts as 0."""
        return {
            m.name: round(_mean([r.metrics.get(m.name, 0.0) for r in results]), 4)
            for m in self.metrics
        }

    def summary(self, results: Sequence[CaseResult], *, planned: int, build_ok: bool) -> Score:
        """The delivery's score: what the verdicts come to, and the rates."""
        counted = [r for r in results if r.verdict.counted]
        by_split: dict[Split, SplitScore] = {}
        for split in (Split.PUBLIC, *SCORED_SPLITS):
            rs = [r for r in counted if r.split == split]
            by_split[split] = SplitScore(
                total=len(rs), passed=sum(r.passed for r in rs), macro=round(_macro(rs), 4)
            )
        ours = scored(results)
        public, hidden = by_split[Split.PUBLIC], by_split[Split.HIDDEN]
        gap = None
        if public.total and hidden.total:
            gap = round(public.rate - hidden.rate, 4)
        patterns: dict[str, list[bool]] = defaultdict(list)
        for r in ours:
            patterns[r.pattern].append(r.passed)
        return Score(
            by_pattern={
                p: SplitScore(total=len(v), passed=sum(v)) for p, v in sorted(patterns.items())
            },
            verdicts=dict(sorted(Counter(r.verdict for r in results).items())),
            build_ok=build_ok,
            done=len(results),
            planned=planned,
            overall=round(_mean([float(r.passed) for r in ours]), 4),
            macro=round(_macro(ours), 4),
            by_split=by_split,
            metrics=list(self.metrics),
            rates=self.aggregate(ours),
            public_minus_hidden=gap,
        )
