"""A batch's plan and what each of its items came to.

The plan: every task × agent × level × responder × repeat of the spec, in that order (the
first task's runs first), each item with a stable key. What an item came to is read from its
attempts' runs, so a resumed batch redoes nothing that finished:

- a completed run is a result (whatever its score: a failed build is the delivery's);
- a run that failed for its agent, its input or a bug of ours is a result too (said so);
- a run that failed for infrastructure (the engine lost, an image build) is retried, up to
  the spec's `max_attempts`;
- a run interrupted (its process killed) or cancelled, or an attempt whose run never got
  its row, is started again — it does not count against the attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from icae_tui.batch.spec import BatchSpec
from icae_tui.domain.states import FailureKind, RunStatus

if TYPE_CHECKING:
    from icae_tui.store.database import RunRow


@dataclass(frozen=True)
class BatchItem:
    task_id: str
    agent: str
    level: str
    responder: str
    repeat: int  # 1..repeats

    @property
    def key(self) -> str:
        return f"{self.task_id}|{self.agent}|{self.level}|{self.responder}|{self.repeat}"

    @property
    def pairing(self) -> tuple[str, str, str, str]:
        """What its repeats share: task, agent, level, responder."""
        return (self.task_id, self.agent, self.level, self.responder)


def expand(spec: BatchSpec, task_ids: Sequence[str]) -> list[BatchItem]:
    return [
        BatchItem(task, agent, str(level), str(responder), repeat)
        for task in task_ids
        for agent in spec.agents
        for level in spec.levels
        for responder in spec.responders
        for repeat in range(1, spec.repeats + 1)
    ]


class ItemState(StrEnum):
    PENDING = "pending"  # no attempt yet, or one to start again
    RUNNING = "running"
    DONE = "done"  # a completed run: scored
    FAILED = "failed"  # a result all the same: the agent's, the input's, a bug of ours
    GAVE_UP = "gave_up"  # infrastructure failed it max_attempts times


@dataclass(frozen=True)
class Attempt:
    """A run started for an item (batch/store.py keeps them)."""

    item_key: str
    attempt: int
    run: RunRow | None  # None: the run never got its row (killed before it started)


@dataclass(frozen=True)
class ItemProgress:
    state: ItemState
    attempts: int  # runs started for it that count (infrastructure failures, results)
    run_id: str | None  # its latest run


def progress_of(attempts: Sequence[Attempt], max_attempts: int) -> ItemProgress:
    """What an item's attempts so far came to (the rules in the module docstring)."""
    counted = 0
    last: str | None = None
    for attempt in attempts:
        run = attempt.run
        if run is None:
            continue
        last = run.run_id
        status = RunStatus(run.status)
        if status is RunStatus.COMPLETED:
            return ItemProgress(ItemState.DONE, counted + 1, last)
        if status is RunStatus.RUNNING:
            return ItemProgress(ItemState.RUNNING, counted, last)
        if status is RunStatus.FAILED:
            counted += 1
            if run.failure != FailureKind.INFRASTRUCTURE:
                return ItemProgress(ItemState.FAILED, counted, last)
    if counted >= max_attempts:
        return ItemProgress(ItemState.GAVE_UP, counted, last)
    return ItemProgress(ItemState.PENDING, counted, last)
