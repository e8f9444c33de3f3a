"""Runs a batch's pending items, `runs_at_once` at a time, each a `Run` like any other (its own
row, events, report), tagged in the store with its item and attempt.

Before the first run: one sweep of what dead runs left on the engine (the runs then skip
theirs), and every image the pending items need built once, one after another — the task
images, then each agent's installed image — so no two runs race to build the same image.
Each run evaluates `cases_at_once` cases at a time: the machine's cores shared between the
runs, not each run sized to the whole machine.

A run that failed for infrastructure goes to the back of the queue until its item has used
its attempts (plan.py). Cancelled (Ctrl-C), the running runs are cancelled — each stores
itself as cancelled and removes its boxes — and the batch is `cancelled`; `--resume` goes on.
One run cancelled alone (`cancel_item`: the console's operator, on that run's screen) stores
itself cancelled too; its item is not started again in this session, the others go on, and the
batch ends `cancelled` so that `--resume` redoes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from icae_tui.agents.registry import make_agent
from icae_tui.batch.plan import BatchItem, ItemProgress, ItemState, progress_of
from icae_tui.batch.spec import BatchSpec
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.domain.states import ResponderMode, RunStatus
from icae_tui.domain.task import Level, Task
from icae_tui.errors import IcaeError
from icae_tui.run import Run, RunConfig, RunOutcome
from icae_tui.sandbox.base import Sandbox
from icae_tui.sandbox.registry import open_sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemStarted:
    item: BatchItem
    attempt: int
    run: Run  # live: a display may subscribe to it, or take over its questions


@dataclass(frozen=True)
class ItemFinished:
    item: BatchItem
    progress: ItemProgress
    outcome: RunOutcome


@dataclass(frozen=True)
class BatchMessage:
    text: str


BatchUpdate = ItemStarted | ItemFinished | BatchMessage
BatchDisplay = Callable[[BatchUpdate], None]


@dataclass
class BatchRunner:
    batch_id: str
    spec: BatchSpec
    items: list[BatchItem]
    tasks: Mapping[str, Task]
    batches: BatchStore
    cores: int
    agent_files: tuple[Path, ...] = ()
    engine: str = "docker"
    displays: list[BatchDisplay] = field(default_factory=list)
    progress: dict[str, ItemProgress] = field(default_factory=dict)
    # the runs going on, by item key: one can be cancelled alone (`cancel_item`)
    running: dict[str, asyncio.Task[RunOutcome]] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)  # items whose run was cancelled alone

    def subscribe(self, display: BatchDisplay) -> None:
        self.displays.append(display)

    def _tell(self, update: BatchUpdate) -> None:
        for display in self.displays:
            try:
                display(update)
            except Exception:  # a display never stops the batch
                log.exception("batch display failed")

    @property
    def runs_at_once(self) -> int:
        return self.spec.limits.runs(self.cores)

    @property
    def cases_at_once(self) -> int:
        return self.spec.limits.cases(self.cores)

    def refresh(self) -> dict[str, ItemProgress]:
        """Each item's progress, from the store (what a resume starts from)."""
        attempts = self.batches.attempts(self.batch_id)
        limit = self.spec.limits.max_attempts
        self.progress = {it.key: progress_of(attempts.get(it.key, []), limit) for it in self.items}
        return self.progress

    def pending(self) -> list[BatchItem]:
        return [it for it in self.items if self.progress[it.key].state is ItemState.PENDING]

    async def execute(self) -> BatchStatus:
        self.refresh()
        queue = self.pending()
        status = BatchStatus.CANCELLED
        try:
            if queue:
                await self._prepare(queue)
            await self._run_all(queue)
            status = BatchStatus.CANCELLED if self.dropped else BatchStatus.COMPLETED
            return status
        finally:
            self.batches.finish(self.batch_id, status)

    # --- before the runs ------------------------------------------------------------------

    async def _prepare(self, queue: list[BatchItem]) -> None:
        """One sweep, then every image the queue needs, one at a time. A build that fails
        here is said and left to the runs (theirs fails for infrastructure, and is retried)."""
        try:
            sandbox = await open_sandbox(self.engine)
        except IcaeError as err:
            self._tell(BatchMessage(f"engine {self.engine}: {err} (the runs will say so)"))
            return
        try:
            swept = await sandbox.sweep()
            if swept.containers or swept.images:
                self._tell(BatchMessage(f"removed {len(swept.containers)} container(s) and "
                                        f"{len(swept.images)} image(s) left by earlier runs"))  # fmt: skip
            done: set[tuple[str, str]] = set()
            for item in queue:
                if (item.task_id, item.agent) in done:
                    continue
                done.add((item.task_id, item.agent))
                await self._images(sandbox, item)
        finally:
            await asyncio.shield(sandbox.close())

    async def _images(self, sandbox: Sandbox, item: BatchItem) -> None:
        task = self.tasks[item.task_id]

        def said(message: str) -> None:
            self._tell(BatchMessage(f"{task.id}: {message}"))

        try:
            images = await sandbox.task_images(task, said)
            agent = make_agent(item.agent, task, agent_files=self.agent_files)
            if (need := agent.needs.image) is not None:
                await sandbox.agent_image(images.agent, agent.name, need.version,
                                          list(need.install), said, run_id=self.batch_id)  # fmt: skip
        except IcaeError as err:
            said(f"images for {item.agent} not built ahead: {err}")

    # --- the runs ---------------------------------------------------------------------------

    async def _run_all(self, queue: list[BatchItem]) -> None:
        todo: asyncio.Queue[BatchItem] = asyncio.Queue()
        for item in queue:
            todo.put_nowait(item)
        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.runs_at_once, max(1, len(queue)))):
                group.create_task(self._worker(todo))

    async def _worker(self, todo: asyncio.Queue[BatchItem]) -> None:
        while True:
            try:
                item = todo.get_nowait()
            except asyncio.QueueEmpty:
                return
            again = await self._run_item(item)
            if again:
                todo.put_nowait(item)

    def _config(self, item: BatchItem) -> RunConfig:
        return RunConfig(
            task=self.tasks[item.task_id], agent=item.agent, level=Level(item.level),
            responder=ResponderMode(item.responder), budget=self.spec.limits.budget,
            concurrency=self.cases_at_once, agent_files=self.agent_files, engine=self.engine,
            sweep=False,
        )  # fmt: skip

    async def _run_item(self, item: BatchItem) -> bool:
        """One attempt at `item`; whether it goes back in the queue (infrastructure)."""
        run = Run(self._config(item), self.batches.runs)
        attempt = len(self.batches.attempts_of(self.batch_id, item.key)) + 1
        self.batches.add_attempt(self.batch_id, item.key, attempt, run.run_id)
        self.progress[item.key] = ItemProgress(ItemState.RUNNING, attempt, run.run_id)
        self._tell(ItemStarted(item, attempt, run))
        job = asyncio.ensure_future(run.execute())
        self.running[item.key] = job
        try:
            outcome = await job  # the batch cancelled: so is the run (awaiting it cancels it)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the batch's own cancel
            outcome = RunOutcome(run.run_id, RunStatus.CANCELLED, None, "cancelled by the operator")
            self.dropped.add(item.key)
        finally:
            self.running.pop(item.key, None)
        attempts = self.batches.attempts_of(self.batch_id, item.key)
        now = progress_of(attempts, self.spec.limits.max_attempts)
        self.progress[item.key] = now
        self._tell(ItemFinished(item, now, outcome))
        return now.state is ItemState.PENDING and item.key not in self.dropped

    def cancel_item(self, key: str) -> bool:
        """Cancel the run of item `key` alone (False: none of it is running)."""
        job = self.running.get(key)
        if job is None or job.done():
            return False
        return job.cancel()
