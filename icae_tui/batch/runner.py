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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from icae_tui.batch.placement import (
    BatchRun,
    EnginePlacement,
    Placement,
    PlacementDown,
    Preparing,
)
from icae_tui.batch.plan import BatchItem, ItemProgress, ItemState, progress_of
from icae_tui.batch.spec import BatchSpec, EngineSlot
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.domain.states import FailureKind, ResponderMode, RunStatus
from icae_tui.domain.task import Level, Task
from icae_tui.errors import IcaeError
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import RunOutcome

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ItemStarted:
    item: BatchItem
    attempt: int
    run: BatchRun  # live: a display may subscribe to it, or take over its questions


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
    # where the runs go, when not this process's engines (a Ray cluster's nodes)
    placements: Sequence[Placement] = ()
    # or how to find them once the loop runs (a cluster's nodes); its error is said, and the
    # batch stalls for --resume
    find_placements: Callable[[], Awaitable[Sequence[Placement]]] | None = None
    _engines: list[Placement] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)  # items whose run was cancelled alone
    down: set[str] = field(default_factory=set)  # engines of the pool that stopped answering
    _unfinished: int = 0

    def subscribe(self, display: BatchDisplay) -> None:
        self.displays.append(display)

    def say(self, text: str) -> None:
        """A line for the batch's displays."""
        self._tell(BatchMessage(text))

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
            if queue and self.find_placements is not None:
                try:
                    self.placements = await self.find_placements()
                except IcaeError as err:
                    self._tell(BatchMessage(f"no placement for the runs: {err}"))
                    status = BatchStatus.STALLED
                    return status
            if queue:
                await self._prepare(queue)
            await self._run_all(queue)
            if self.dropped:
                status = BatchStatus.CANCELLED
            elif any(p.state is ItemState.PENDING for p in self.progress.values()):
                status = BatchStatus.STALLED  # no engine left for them
            else:
                status = BatchStatus.COMPLETED
            return status
        finally:
            await asyncio.shield(self._close_placements())
            self.batches.finish(self.batch_id, status)

    async def _close_placements(self) -> None:
        for place in self.placements:
            try:
                await place.close()
            except Exception:  # one that cannot be closed must not hide the batch's end
                log.exception("closing %s failed", place.name)

    # --- before the runs ------------------------------------------------------------------

    @property
    def pool(self) -> list[Placement]:
        """Where the runs go: the placements given (a Ray cluster's nodes), else the spec's
        pool of engines, else the one engine with `runs_at_once`."""
        if self.placements:
            return list(self.placements)
        if not self._engines:
            slots = list(self.spec.engines) or [EngineSlot(name=self.engine, runs=self.runs_at_once)]
            self._engines = [EnginePlacement(s.name, s.runs) for s in slots]
        return list(self._engines)

    async def _prepare(self, queue: list[BatchItem]) -> None:
        """On every placement at once: one sweep, then every image the queue needs, one at a
        time on each. One that does not answer is left out (said)."""
        ctx = Preparing(self.batch_id, self.tasks, self.agent_files,
                        lambda text: self._tell(BatchMessage(text)))  # fmt: skip
        await asyncio.gather(*(self._prepare_on(place, queue, ctx) for place in self.pool))

    async def _prepare_on(self, place: Placement, queue: list[BatchItem], ctx: Preparing) -> None:
        try:
            await place.prepare(queue, ctx)
        except PlacementDown as err:
            self._engine_down(place.name, str(err))

    def _engine_down(self, engine: str, why: str) -> None:
        if engine in self.down:
            return
        self.down.add(engine)
        left = [s.name for s in self.pool if s.name not in self.down]
        then = f"its runs go to {', '.join(left)}" if left else "no engine is left"
        self._tell(BatchMessage(f"engine {engine} is down ({why}): {then}"))

    async def _healthy(self, place: Placement) -> bool:
        """Whether `place` answers now (after one of its runs failed for infrastructure)."""
        try:
            await place.check()
            return True
        except PlacementDown as err:
            self._engine_down(place.name, str(err))
            return False

    # --- the runs ---------------------------------------------------------------------------

    async def _run_all(self, queue: list[BatchItem]) -> None:
        """Each engine's `runs` workers take items from one queue; an item back in it (an
        infrastructure failure) goes to whichever engine is free next. Ends when every item
        has a result, or when no engine is left (the rest stay pending for --resume)."""
        todo: asyncio.Queue[BatchItem | None] = asyncio.Queue()
        for item in queue:
            todo.put_nowait(item)
        self._unfinished = len(queue)
        over = asyncio.Event()
        if not queue or self._no_engine_left():
            return
        workers = [place for place in self.pool for _ in range(place.runs)]
        async with asyncio.TaskGroup() as group:
            for place in workers:
                group.create_task(self._worker(place, todo, over))
            await over.wait()
            for _ in workers:  # wake the workers waiting for an item: there is none to come
                todo.put_nowait(None)

    def _no_engine_left(self) -> bool:
        return all(slot.name in self.down for slot in self.pool)

    async def _worker(
        self, place: Placement, todo: asyncio.Queue[BatchItem | None], over: asyncio.Event
    ) -> None:
        while place.name not in self.down and not over.is_set():
            item = await todo.get()
            if item is None:
                return
            if place.name in self.down:  # went down while this worker waited
                todo.put_nowait(item)
                break
            again = await self._run_item(item, place)
            if again:
                todo.put_nowait(item)
            else:
                self._unfinished -= 1
            if self._unfinished == 0:
                over.set()
        if self._no_engine_left():
            over.set()

    def _config(self, item: BatchItem) -> RunConfig:
        return RunConfig(
            task=self.tasks[item.task_id], agent=item.agent, level=Level(item.level),
            responder=ResponderMode(item.responder), budget=self.spec.limits.budget,
            concurrency=self.cases_at_once, agent_files=self.agent_files, sweep=False,
        )  # fmt: skip

    async def _run_item(self, item: BatchItem, place: Placement) -> bool:
        """One attempt at `item` on `place`; whether it goes back in the queue
        (infrastructure: and when the placement no longer answers, it is left out)."""
        run = place.run(self._config(item), self.batches.runs)
        attempt = len(self.batches.attempts_of(self.batch_id, item.key)) + 1
        self.batches.add_attempt(self.batch_id, item.key, attempt, run.run_id, place.name)
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
        if outcome.failure is FailureKind.INFRASTRUCTURE:
            await self._healthy(place)  # an engine lost: left out from now on
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
