"""Where a batch's runs go. A placement is one engine of the pool (`EnginePlacement`, here)
or one node of a Ray cluster (`icae_tui.cluster.ray_pool.NodePlacement`): the runner asks
each to get ready (one sweep, every image its runs need built once), whether it still
answers, and to start a run — a `Run` here, a run mirrored from a node there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from icae_tui.agents.registry import make_agent
from icae_tui.batch.plan import BatchItem
from icae_tui.display.sources import LiveRun
from icae_tui.domain.task import Task
from icae_tui.errors import IcaeError
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run, RunOutcome
from icae_tui.sandbox.base import Sandbox
from icae_tui.sandbox.registry import open_sandbox
from icae_tui.store.database import RunStore


class PlacementDown(IcaeError):
    """A placement that does not answer (its engine or node lost): why."""


@dataclass(frozen=True)
class Preparing:
    """What getting ready needs: the batch's tasks and agents files, where to say things."""

    batch_id: str
    tasks: Mapping[str, Task]
    agent_files: tuple[Path, ...]
    tell: Callable[[str], None]


class BatchRun(LiveRun, Protocol):
    """A run the batch started: operated like any live run; `execute` gives its outcome."""

    async def execute(self) -> RunOutcome: ...


class Placement(Protocol):
    name: str  # stored with each attempt (batch_attempts.engine)
    runs: int  # runs it takes at once

    async def prepare(self, queue: Iterable[BatchItem], ctx: Preparing) -> None:
        """Sweep, then build what `queue` needs; PlacementDown when it does not answer."""
        ...

    async def check(self) -> None:
        """Nothing when it answers; PlacementDown (why) when not."""
        ...

    def run(self, config: RunConfig, store: RunStore) -> BatchRun: ...

    async def close(self) -> None: ...


def pairs_of(queue: Iterable[BatchItem]) -> list[tuple[str, str]]:
    """Each (task, agent) of `queue` once, in order: what needs images."""
    return list(dict.fromkeys((item.task_id, item.agent) for item in queue))


async def get_ready(
    sandbox: Sandbox, pairs: Iterable[tuple[str, str]], ctx: Preparing, *, label: str
) -> None:
    """One sweep of what dead runs left, then every image `pairs` need, one at a time (no
    two runs race to build one). A build that fails is said and left to the runs: theirs
    fails for infrastructure, and is retried."""
    swept = await sandbox.sweep()
    if swept.containers or swept.images:
        ctx.tell(f"{label}: removed {len(swept.containers)} container(s) and "
                 f"{len(swept.images)} image(s) left by earlier runs")  # fmt: skip
    for task_id, agent_name in pairs:
        task = ctx.tasks[task_id]

        def said(message: str, task: Task = task) -> None:
            ctx.tell(f"{task.id}: {message}")

        try:
            images = await sandbox.task_images(task, said)
            agent = make_agent(agent_name, task, agent_files=ctx.agent_files)
            if (need := agent.needs.image) is not None:
                await sandbox.agent_image(images.agent, agent.name, need.version,
                                          list(need.install), said, run_id=ctx.batch_id)  # fmt: skip
        except IcaeError as err:
            said(f"images for {agent_name} not built ahead: {err}")


@dataclass
class EnginePlacement:
    """An engine this process talks to: a backend or an engines-file entry."""

    name: str
    runs: int

    async def _open(self) -> Sandbox:
        try:
            return await open_sandbox(self.name)
        except IcaeError as err:
            raise PlacementDown(str(err)) from None

    async def prepare(self, queue: Iterable[BatchItem], ctx: Preparing) -> None:
        sandbox = await self._open()
        try:
            await get_ready(sandbox, pairs_of(queue), ctx, label=self.name)
        finally:
            await asyncio.shield(sandbox.close())

    async def check(self) -> None:
        sandbox = await self._open()
        try:
            await sandbox.ping()
        except IcaeError as err:
            raise PlacementDown(str(err)) from None
        finally:
            await asyncio.shield(sandbox.close())

    def run(self, config: RunConfig, store: RunStore) -> BatchRun:
        return Run(replace(config, engine=self.name), store)

    async def close(self) -> None:
        return None
