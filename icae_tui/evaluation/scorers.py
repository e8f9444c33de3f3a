"""Scorers as plug-ins: what else judges a case, and what else sums a delivery up.

A case scorer gives a case named metrics (`async score(case)`) from what the case context
holds (`CaseContext`): its attempts as the ladder got them (`verdict.decide`: every oracle run
and the delivery's, each a SideOutcome, or a SideFault when the engine could not run that
side), the ladder's result, and the run's (`RunContext`: the task, and the run's judge model
through its gateway, role `judge`, when one is configured). A delivery scorer gives
delivery-level figures from the scored case results (counted hidden and enhanced). Each
declares its metrics (`MetricSpec`): displays, reports and the score iterate those, so a
registered scorer's metric shows wherever the ladder's do, with no other change.

The ladder is the first of each kind and cannot be removed (ladder.py): it alone gives the
verdict and reason, and overall, macro and the per-split figures; other scorers only add
metrics. Registering one takes a few lines:

    @case_scorer(MetricSpec(name="shout", label="SHOUT", description="stdout upper case"))
    def shout(task, ref, oracles, delivery) -> dict[str, float]:   # or: async def (case)
        ...

    register_case_scorer(shout)  # for good; in a test: `with registered(shout): ...`

A case scorer may also say, with optional members, that it needs the run's judge model
(`needs_judge = True`: it is left out of a run with none, its metrics unplanned), that it
keeps a run's worth of state (`open(run)`: an async context giving the scorer the run uses,
e.g. with its cache), and that it sums its own metrics up (`finish(score, scored)`: the
ladder's aggregate then leaves them alone). SM (semantic.py) uses all three. Installed
packages bring scorers through the entry point group `icae_tui.scorers` (util/plugins.py).
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from icae_tui.domain.results import CaseResult, MetricKind, MetricSpec, Score
from icae_tui.domain.task import CaseRef, Task
from icae_tui.errors import IcaeError
from icae_tui.evaluation.ladder import LADDER, LadderAggregate
from icae_tui.evaluation.scorer_context import (  # the scorer API, as plug-ins import it
    CaseContext as CaseContext,
)
from icae_tui.evaluation.scorer_context import Chat as Chat
from icae_tui.evaluation.scorer_context import RunContext as RunContext
from icae_tui.evaluation.scorer_context import Scored as Scored
from icae_tui.evaluation.verdict import Attempt
from icae_tui.util.plugins import load_plugins

SCORER_PLUGINS = "icae_tui.scorers"  # entry points: a callable that registers (util/plugins.py)


class ScorerError(IcaeError, ValueError):
    """A scorer broke its declaration: a clashing name, an undeclared metric, a bad value."""


@runtime_checkable
class CaseScorer(Protocol):
    name: str
    metrics: tuple[MetricSpec, ...]

    async def score(self, case: CaseContext) -> Mapping[str, float] | Scored:
        """Some of its metrics for the case (one it cannot give, e.g. on a SideFault, is
        left out). A bool is taken as 1.0 / 0.0."""
        ...


@runtime_checkable
class RunScorer(Protocol):
    """A case scorer with a run's worth of state: `open` gives the scorer the run uses, for
    the length of its cases (e.g. with a cache opened, and what failed said at the end)."""

    def open(self, run: RunContext) -> AbstractAsyncContextManager[CaseScorer]: ...


@runtime_checkable
class FinishingScorer(Protocol):
    """A case scorer that sums its own metrics up in the delivery's score (the ladder's
    aggregate leaves them alone): SM's rate is over the cases it measured."""

    metrics: tuple[MetricSpec, ...]

    def finish(self, score: Score, scored: Sequence[CaseResult]) -> Score: ...


def needs_judge(scorer: object) -> bool:
    return getattr(scorer, "needs_judge", False) is True


@contextlib.asynccontextmanager
async def opened(scorer: CaseScorer, run: RunContext) -> AsyncIterator[CaseScorer]:
    """The scorer `run` uses: its own `open` when it has one, else itself."""
    if isinstance(scorer, RunScorer):
        async with scorer.open(run) as one:
            yield one
    else:
        yield scorer


@runtime_checkable
class DeliveryScorer(Protocol):
    name: str
    metrics: tuple[MetricSpec, ...]

    def aggregate(self, results: Sequence[CaseResult]) -> Mapping[str, float]:
        """Its figures over the scored case results (Score.rates)."""
        ...


CaseFn = Callable[[Task, CaseRef, Sequence[Attempt], Attempt], Mapping[str, float]]
AsyncCaseFn = Callable[[CaseContext], Awaitable[Mapping[str, float] | Scored]]
DeliveryFn = Callable[[Sequence[CaseResult]], Mapping[str, float]]


@dataclass(frozen=True)
class FunctionCaseScorer:
    """A function as a case scorer: `async def (case)`, or a plain `def (task, ref,
    oracles, delivery)` (pure, from the attempts alone), called as it is."""

    name: str
    metrics: tuple[MetricSpec, ...]
    fn: CaseFn | AsyncCaseFn

    async def score(self, case: CaseContext) -> Mapping[str, float] | Scored:
        if inspect.iscoroutinefunction(self.fn):
            found: Mapping[str, float] | Scored = await self.fn(case)
            return found
        sync: CaseFn = self.fn  # type: ignore[assignment]
        return sync(case.task, case.ref, case.oracles, case.delivery)


@dataclass(frozen=True)
class FunctionDeliveryScorer:
    name: str
    metrics: tuple[MetricSpec, ...]
    fn: DeliveryFn

    def aggregate(self, results: Sequence[CaseResult]) -> Mapping[str, float]:
        return self.fn(results)


def case_scorer(
    *metrics: MetricSpec, name: str | None = None
) -> Callable[[CaseFn | AsyncCaseFn], FunctionCaseScorer]:
    """A function as a case scorer of `metrics` (named after the function by default)."""
    return lambda fn: FunctionCaseScorer(name or fn.__name__, metrics, fn)


def delivery_scorer(
    *metrics: MetricSpec, name: str | None = None
) -> Callable[[DeliveryFn], FunctionDeliveryScorer]:
    return lambda fn: FunctionDeliveryScorer(name or fn.__name__, metrics, fn)


# --- the registry ---------------------------------------------------------------------------

_case: list[CaseScorer] = []  # registered after the ladder, in order
_delivery: list[DeliveryScorer] = []


def registered_case_scorers() -> tuple[CaseScorer, ...]:
    """Every case scorer registered (installed plug-ins' too), the ladder first."""
    load_plugins(SCORER_PLUGINS)
    return (LADDER, *_case)


def case_scorers(run: RunContext | None = None) -> tuple[CaseScorer, ...]:
    """The case scorers a run uses, the ladder first: the registered ones whose needs it
    meets (with no run: those that need nothing of one, e.g. no judge)."""
    judged = run is not None and run.judge_model is not None
    return tuple(s for s in registered_case_scorers() if judged or not needs_judge(s))


def metric_specs(run: RunContext | None = None) -> tuple[MetricSpec, ...]:
    """Every case metric of a run, in order: the ladder's, then each other scorer's."""
    return tuple(m for s in case_scorers(run) for m in s.metrics)


def delivery_scorers(
    run: RunContext | None = None,
) -> tuple[LadderAggregate, *tuple[DeliveryScorer, ...]]:
    """The ladder's aggregate (over the run's case metrics, but those a scorer sums up
    itself), then the others."""
    own = {m.name for s in case_scorers(run) if isinstance(s, FinishingScorer) for m in s.metrics}
    return (LadderAggregate([m for m in metric_specs(run) if m.name not in own]), *_delivery)


def _check_new(scorer: CaseScorer | DeliveryScorer, kind: Sequence[object]) -> None:
    """A scorer's name is new among its kind; its metrics' names are new among every
    metric, case or delivery (they share Score.rates)."""
    if not isinstance(scorer, CaseScorer | DeliveryScorer):
        raise TypeError(f"not a case or delivery scorer: {scorer!r}")
    if any(getattr(s, "name", None) == scorer.name for s in kind):
        raise ScorerError(f"a scorer named {scorer.name!r} is registered already")
    names = [m.name for m in scorer.metrics]
    taken = {m.name for s in (LADDER, *_case) for m in s.metrics}
    taken |= {m.name for s in _delivery for m in s.metrics}
    if not names or len(set(names)) < len(names) or taken & set(names):
        raise ScorerError(f"scorer {scorer.name!r}: its metrics must be new, distinct names, "
                          f"not {names}")  # fmt: skip


def register_case_scorer(scorer: CaseScorer) -> CaseScorer:
    _check_new(scorer, (LADDER, *_case))
    _case.append(scorer)
    return scorer


def unregister_case_scorer(scorer: CaseScorer) -> None:
    """ValueError if it is not registered (the ladder never is: it cannot be removed)."""
    _case.remove(scorer)


def register_delivery_scorer(scorer: DeliveryScorer) -> DeliveryScorer:
    _check_new(scorer, (LadderAggregate(), *_delivery))
    _delivery.append(scorer)
    return scorer


def unregister_delivery_scorer(scorer: DeliveryScorer) -> None:
    _delivery.remove(scorer)


@contextmanager
def registered(*scorers: CaseScorer | DeliveryScorer) -> Iterator[None]:
    """The scorers registered for the block's length (tests), removed after it."""
    done: list[CaseScorer | DeliveryScorer] = []
    try:
        for scorer in scorers:
            if isinstance(scorer, DeliveryScorer):
                register_delivery_scorer(scorer)
            else:
                register_case_scorer(scorer)
            done.append(scorer)
        yield
    finally:
        for scorer in reversed(done):
            if isinstance(scorer, DeliveryScorer):
                unregister_delivery_scorer(scorer)
            else:
                unregister_case_scorer(scorer)


def checked(scorer: CaseScorer | DeliveryScorer, values: Mapping[str, float]) -> dict[str, float]:
    """A scorer's values as floats, held to its declaration: every name one of its metrics,
    every value in [0, 1], a PASS metric's 0 or 1."""
    specs = {m.name: m for m in scorer.metrics}
    out: dict[str, float] = {}
    for name, value in values.items():
        spec = specs.get(name)
        if spec is None:
            raise ScorerError(f"scorer {scorer.name!r} gave {name!r}, not one of its metrics")
        v = float(value)
        binary = spec.kind is not MetricKind.PASS or v in (0.0, 1.0)
        if math.isnan(v) or not 0.0 <= v <= 1.0 or not binary:
            raise ScorerError(f"scorer {scorer.name!r} gave {name} = {value!r}: "
                              f"a {spec.kind} metric is {_RANGE[spec.kind]}")  # fmt: skip
        out[name] = v
    return out


_RANGE = {MetricKind.PASS: "0 or 1", MetricKind.SCORE: "in [0, 1]", MetricKind.DETAIL: "in [0, 1]"}
