"""Scorers as plug-ins: what else judges a case, and what else sums a delivery up.

A case scorer gives a case named metrics from its attempts, the way the ladder gets them
(`verdict.decide`: every oracle run and the delivery's, each a SideOutcome, or a SideFault
when the engine could not run that side); a delivery scorer gives delivery-level figures from
the scored case results (counted hidden and enhanced). Each declares its metrics
(`MetricSpec`): displays, reports and the score iterate those, so a registered scorer's
metric shows wherever the ladder's do, with no other change.

The ladder is the first of each kind and cannot be removed (ladder.py): it alone gives the
verdict and reason, and overall, macro and the per-split figures; other scorers only add
metrics. Registering one takes a few lines:

    @case_scorer(MetricSpec(name="shout", label="SHOUT", description="stdout upper case"))
    def shout(task, ref, oracles, delivery) -> dict[str, float]:
        ...

    register_case_scorer(shout)  # for good; in a test: `with registered(shout): ...`
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from icae_tui.domain.results import CaseResult, MetricKind, MetricSpec
from icae_tui.domain.task import CaseRef, Task
from icae_tui.errors import IcaeError
from icae_tui.evaluation.ladder import LADDER, LadderAggregate
from icae_tui.evaluation.verdict import Attempt


class ScorerError(IcaeError, ValueError):
    """A scorer broke its declaration: a clashing name, an undeclared metric, a bad value."""


@runtime_checkable
class CaseScorer(Protocol):
    name: str
    metrics: tuple[MetricSpec, ...]

    def score(
        self, task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
    ) -> Mapping[str, float]:
        """Some of its metrics for the case (one it cannot give, e.g. on a SideFault, is
        left out). A bool is taken as 1.0 / 0.0."""
        ...


@runtime_checkable
class DeliveryScorer(Protocol):
    name: str
    metrics: tuple[MetricSpec, ...]

    def aggregate(self, results: Sequence[CaseResult]) -> Mapping[str, float]:
        """Its figures over the scored case results (Score.rates)."""
        ...


CaseFn = Callable[[Task, CaseRef, Sequence[Attempt], Attempt], Mapping[str, float]]
DeliveryFn = Callable[[Sequence[CaseResult]], Mapping[str, float]]


@dataclass(frozen=True)
class FunctionCaseScorer:
    name: str
    metrics: tuple[MetricSpec, ...]
    fn: CaseFn

    def score(
        self, task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt
    ) -> Mapping[str, float]:
        return self.fn(task, ref, oracles, delivery)


@dataclass(frozen=True)
class FunctionDeliveryScorer:
    name: str
    metrics: tuple[MetricSpec, ...]
    fn: DeliveryFn

    def aggregate(self, results: Sequence[CaseResult]) -> Mapping[str, float]:
        return self.fn(results)


def case_scorer(
    *metrics: MetricSpec, name: str | None = None
) -> Callable[[CaseFn], FunctionCaseScorer]:
    """A function as a case scorer of `metrics` (named after the function by default)."""
    return lambda fn: FunctionCaseScorer(name or fn.__name__, metrics, fn)


def delivery_scorer(
    *metrics: MetricSpec, name: str | None = None
) -> Callable[[DeliveryFn], FunctionDeliveryScorer]:
    return lambda fn: FunctionDeliveryScorer(name or fn.__name__, metrics, fn)


# --- the registry ---------------------------------------------------------------------------

_case: list[CaseScorer] = []  # registered after the ladder, in order
_delivery: list[DeliveryScorer] = []


def case_scorers() -> tuple[CaseScorer, ...]:
    return (LADDER, *_case)


def metric_specs() -> tuple[MetricSpec, ...]:
    """Every case metric, in order: the ladder's, then each registered scorer's."""
    return tuple(m for s in case_scorers() for m in s.metrics)


def delivery_scorers() -> tuple[LadderAggregate, *tuple[DeliveryScorer, ...]]:
    """The ladder's aggregate (over the case metrics registered now), then the others."""
    return (LadderAggregate(metric_specs()), *_delivery)


def _check_new(scorer: CaseScorer | DeliveryScorer, kind: Sequence[object]) -> None:
    """A scorer's name is new among its kind; its metrics' names are new among every
    metric, case or delivery (they share Score.rates)."""
    if not isinstance(scorer, CaseScorer | DeliveryScorer):
        raise TypeError(f"not a case or delivery scorer: {scorer!r}")
    if any(getattr(s, "name", None) == scorer.name for s in kind):
        raise ScorerError(f"a scorer named {scorer.name!r} is registered already")
    names = [m.name for m in scorer.metrics]
    taken = {m.name for m in metric_specs()} | {m.name for s in _delivery for m in s.metrics}
    if not names or len(set(names)) < len(names) or taken & set(names):
        raise ScorerError(f"scorer {scorer.name!r}: its metrics must be new, distinct names, "
                          f"not {names}")  # fmt: skip


def register_case_scorer(scorer: CaseScorer) -> CaseScorer:
    _check_new(scorer, case_scorers())
    _case.append(scorer)
    return scorer


def unregister_case_scorer(scorer: CaseScorer) -> None:
    """ValueError if it is not registered (the ladder never is: it cannot be removed)."""
    _case.remove(scorer)


def register_delivery_scorer(scorer: DeliveryScorer) -> DeliveryScorer:
    _check_new(scorer, delivery_scorers())
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
