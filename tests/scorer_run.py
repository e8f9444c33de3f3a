"""A plug-in case scorer, and a run's events judged with it (no Docker): the cases are
judged and scored by `judge_case` (`judged`) and `score` from hand-made sides, and the events are the
ones the Run emits for them (CasesPlanned with the registered metrics, CaseFinished,
ScoreUpdated after each case, RunFinished)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from icae_tui.domain.events import (
    CaseFinished,
    CasesPlanned,
    Event,
    PhaseChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, MetricSpec
from icae_tui.domain.task import Case, CaseRef, Split, Task
from icae_tui.evaluation.scorers import case_scorer
from icae_tui.evaluation.scoring import judge_case, metric_specs, score
from icae_tui.evaluation.verdict import Attempt, SideOutcome
from tests.test_verdict import TASK, side


def judged(task: Task, ref: CaseRef, oracles: Sequence[Attempt], delivery: Attempt) -> CaseResult:
    """`judge_case` (a coroutine: scorers may await a model) to its end, from sync code
    whether or not an event loop runs in this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, judge_case(task, ref, oracles, delivery)).result()


SHOUT = MetricSpec(name="shout", label="SHOUT", description="the delivery's stdout is upper case")


@case_scorer(SHOUT)
def shout(task: Task, ref: CaseRef, oracles: Sequence[Attempt], d: Attempt) -> dict[str, float]:
    if not isinstance(d, SideOutcome):
        return {}  # the engine could not run the delivery: nothing to say
    return {SHOUT.name: d.stdout_full.decode(errors="replace").isupper()}


# (case id's split and stem, the oracle's stdout, the delivery's): upper case twice of three
CASES = [
    (Split.PUBLIC, "greet", "HELLO\n", "HELLO\n"),
    (Split.HIDDEN, "greet", "HELLO\n", "hello\n"),
    (Split.HIDDEN, "name", "ADA\n", "ADA\n"),
]


def judged_run(task: Task = TASK) -> list[Event]:
    """A completed run's events, judged by the scorers registered when it is called."""
    refs = [
        CaseRef(split=split, stem=stem, index=0, case=Case(command=f"tool {stem}"), pattern=stem)
        for split, stem, _, _ in CASES
    ]
    events: list[Event] = [
        RunStarted(task_id=task.id, task_title="verdicts", agent="scripted:good", level="L1",
                   responder="simulated", budget=0, prd="Build it."),
        PhaseChanged(phase="evaluate", detail=f"{len(refs)} cases"),
        CasesPlanned(case_ids=[r.id for r in refs], patterns=[r.pattern for r in refs],
                     splits=[r.split.value for r in refs], metrics=list(metric_specs())),
    ]  # fmt: skip
    results = []
    for ref, (_, _, oracle, delivery) in zip(refs, CASES, strict=True):
        result = judged(task, ref, [side(oracle)], side(delivery))
        results.append(result)
        events += [CaseFinished(result=result), ScoreUpdated(score=score(results, planned=3))]
    events.append(RunFinished(status="completed", score=score(results, planned=len(refs))))
    for i, ev in enumerate(events):
        ev.run_id, ev.seq, ev.ts = "20240101-000000-5c0fe5", i + 1, 1_704_067_200.0 + i
    return events
