"""What a case scorer is given (`CaseContext`, with its run's `RunContext`) and may answer
(`Scored`): apart from the scorer protocols (scorers.py), so that the ladder, itself a
scorer, and the registry both import it without importing each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.verdict import Attempt


class Chat(Protocol):
    """A model endpoint: the run's gateway (agents/endpoint.py: GatewayEndpoint) or a
    recording (semantic.py: RecordedChat); a Chat Completions body in, its reply out."""

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunContext:
    """What a run gives its scorers: the task; the judge model's name when the run has one
    (`judge_model`: scorers that need it are planned) and, while the cases are judged, its
    endpoint through the run's gateway (`judge`, role `judge`: recorded and replayable);
    where a scorer may keep a cache across runs (`cache_dir`: the store's folder); and a way
    to say one line in the run's progress (`say`)."""

    task: Task
    run_id: str = ""
    judge_model: str | None = None
    judge: Chat | None = None
    cache_dir: Path | None = None
    say: Callable[[str], Awaitable[None]] | None = None


@dataclass(frozen=True)
class CaseContext:
    """One case as a scorer sees it: its attempts, the ladder's result, and the run's."""

    run: RunContext
    ref: CaseRef
    oracles: Sequence[Attempt]
    delivery: Attempt
    result: CaseResult  # the ladder's: verdict, reason, exec / SP / EM / FM

    @property
    def task(self) -> Task:
        return self.run.task


@dataclass(frozen=True)
class Scored:
    """A scorer's values for a case, with notes kept beside them (`CaseResult.notes`, e.g.
    a judge's reason), when a plain mapping of values is not enough."""

    values: Mapping[str, float]
    notes: Mapping[str, str] = field(default_factory=dict)
