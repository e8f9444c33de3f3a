"""Where scoring happens: `Scoring` is what a run judges and scores with (the registered
scorers its context allows: scorers.py, the ladder's first, ladder.py); its `opened` case
judge gives a case its result (the Evaluator), its `score` the delivery its score (the Run).
`judge_case` and `score` do the same with what needs no run (no judge model).

Overall = passed / total over hidden + enhanced (ICAE); public cases are reported apart.
Macro = mean over command patterns of each pattern's pass rate (CLI-Tool-Bench).
Cases where the oracle itself failed or disagreed with itself are left out of every rate
and reported apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass

import icae_tui.evaluation.semantic  # noqa: F401  (registers SM, a built-in scorer)
from icae_tui.domain.results import SCORED_SPLITS, CaseResult, MetricSpec, Score
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.ladder import LADDER, scored
from icae_tui.evaluation.scorers import (
    CaseContext,
    CaseScorer,
    FinishingScorer,
    RunContext,
    Scored,
    case_scorers,
    checked,
    delivery_scorers,
    metric_specs,
    opened,
)
from icae_tui.evaluation.verdict import Attempt

__all__ = ["SCORED_SPLITS", "CaseJudge", "Scoring", "judge_case", "metric_specs", "score"]


@dataclass(frozen=True)
class CaseJudge:
    """The scorers of a run, opened: each case's result from all of them."""

    run: RunContext
    scorers: tuple[CaseScorer, ...]  # the ladder's first

    async def __call__(
        self, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
    ) -> CaseResult:
        """The ladder's result of the case (verdict, reason, its metrics), with every other
        scorer's metrics (and notes) merged in."""
        result = LADDER.judge(self.run.task, ref, oracles, delivery)
        case = CaseContext(self.run, ref, oracles, delivery, result)
        metrics, notes = dict(result.metrics), dict(result.notes)
        for scorer in self.scorers:
            if scorer is LADDER:
                continue
            found = await scorer.score(case)
            if isinstance(found, Scored):
                notes |= {k: v for k, v in found.notes.items() if v}
                found = found.values
            metrics |= checked(scorer, found)
        if metrics == result.metrics and notes == result.notes:
            return result
        return result.model_copy(update={"metrics": metrics, "notes": notes})


class Scoring:
    """What one run judges and scores with: the registered scorers whose needs `run`
    meets (a scorer that needs a judge model, in a run with one)."""

    def __init__(self, run: RunContext | None) -> None:
        self.run = run
        self.scorers = case_scorers(run)

    @classmethod
    def outside_a_run(cls) -> Scoring:
        """The scorers that need nothing of a run (a stored run's results scored again)."""
        return cls(None)

    @property
    def metrics(self) -> tuple[MetricSpec, ...]:
        """Each case's metrics, as the run plans them."""
        return tuple(m for s in self.scorers for m in s.metrics)

    @contextlib.asynccontextmanager
    async def opened(self, run: RunContext | None = None) -> AsyncIterator[CaseJudge]:
        """Each scorer opened for the run's cases (`run`: the context with what the run has
        by then, e.g. its judge's endpoint), closed after them."""
        run = run or self.run
        if run is None:
            raise ValueError("cases are judged in a run's context")
        async with contextlib.AsyncExitStack() as stack:
            ones = [await stack.enter_async_context(opened(s, run)) for s in self.scorers]
            yield CaseJudge(run, tuple(ones))

    def score(self, results: Iterable[CaseResult], *, planned: int, build_ok: bool = True) -> Score:
        """The ladder's aggregate of the results, with every other delivery scorer's
        figures added to its rates, then what each case scorer sums up itself."""
        results = list(results)
        ladder, *others = delivery_scorers(self.run)
        out = ladder.summary(results, planned=planned, build_ok=build_ok)
        ours = scored(results)
        for scorer in others:
            rates = checked(scorer, scorer.aggregate(ours))
            out.rates |= {k: round(v, 4) for k, v in rates.items()}
            out.metrics += scorer.metrics
        for case_scorer in self.scorers:
            if isinstance(case_scorer, FinishingScorer):
                out = case_scorer.finish(out, ours)
        return out


async def judge_case(
    task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
) -> CaseResult:
    """The case's result from the registered scorers that need no run (no judge model)."""
    run = RunContext(task)
    async with Scoring(run).opened() as judge:
        return await judge(ref, oracles, delivery)


def score(results: Iterable[CaseResult], *, planned: int, build_ok: bool = True) -> Score:
    """The delivery's score from the registered scorers that need no run."""
    return Scoring.outside_a_run().score(results, planned=planned, build_ok=build_ok)
