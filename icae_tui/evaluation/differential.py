"""The differential engine: every case against the oracle and the delivery, side by side.

Per side and case: take a fresh-state container from the side's pool, write the fixtures,
run `prep`, snapshot the file system, run the case (stdin from `input`) under a timeout and
an output cap, snapshot again. Both sides run concurrently; cases run concurrently up to a
bound sized to the machine. Then the comparison ladder (verdict.py, pure) gives one verdict
per case.

A side the engine could not run or inspect (a DockerError, a sandbox error) is retried once,
alone; failing again it is that case's verdict, never the run's: the delivery's failure
(counted) or, when only the oracle's side failed, an oracle error. Only a lost engine
(EngineLost: a fresh connection is refused) ends the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiodocker
import aiohttp

from icae_tui.domain.results import CaseResult, SideRun
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.sidefx import FileChanges, to_file_changes
from icae_tui.evaluation.sides import (
    Box,
    SidePool,
    case_limits,
    fallback_diff,
    fallback_snapshot,
    hold_still,
    host_effects,
    host_snapshot,
    kill_extras,
    left_running,
    settle,
    walk_work,
    write_fixtures,
)
from icae_tui.evaluation.verdict import (
    COMPARE_CAP,
    OUTPUT_LIMIT,
    Attempt,
    SideFault,
    SideOutcome,
    decide,
    invocation,
)
from icae_tui.evaluation.verdict import (  # re-exported: run.py imports it from here
    build_error_result as build_error_result,
)
from icae_tui.sandbox.containers import Container, ExecResult
from icae_tui.sandbox.disk import LayerWatch, full_bytes
from icae_tui.sandbox.engine import EngineUnavailable, connect
from icae_tui.sandbox.hostview import Entry, HostView, State

DISPLAY_CAP = 64 * 1024  # characters of each stream kept in results and reports


log = logging.getLogger(__name__)


class EngineLost(RuntimeError):
    """The engine itself is gone (not one case's trouble): the run cannot go on."""


@dataclass(frozen=True)
class Sides:
    oracle_image: str
    delivery_image: str


def default_concurrency() -> int:
    """Cases in flight at once: container work is mostly waiting on the engine."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[:DISPLAY_CAP]


@dataclass
class _Aftermath:
    """What a case left, beside its output."""

    oom: bool = False
    pids_capped: bool = False
    left: int = 0  # processes alive after its command ended
    box_died: bool = False
    disk_full: bool = False
    changes: FileChanges = field(default_factory=FileChanges)
    after: dict[str, Entry] | None = None  # the writable layer, when the box can be reused


async def run_on(pool: SidePool, task: Task, ref: CaseRef) -> SideOutcome:
    workdir = task.spec.cases.workdir
    timeout = ref.case.timeout_s or task.spec.cases.timeout_s
    command, stdin = invocation(task, ref)
    box: Box = await pool.take()
    c, view = box.container, box.view
    state = "fallback" if view is None else ("reused" if box.cases_served else "fresh")
    res: ExecResult | None = None
    seen = _Aftermath()
    try:
        # Every host-side walk and hash runs in a thread: never on the event loop.
        if ref.case.files and view is not None:
            await asyncio.to_thread(write_fixtures, box, ref.case.files)
        elif ref.case.files:
            await c.put_files({f"{workdir}/{p}": t.encode() for p, t in ref.case.files.items()})
        if ref.case.prep:
            await c.exec(ref.case.prep, workdir=workdir, timeout_s=30)
        touched = bool(ref.case.files or ref.case.prep)
        before_work: dict[str, Entry] = {}
        before_states = box.base_states
        if view is not None and touched:
            before_work = await asyncio.to_thread(walk_work, box, workdir)
        if view is not None:
            before = box.pristine
            if ref.case.prep:
                before, before_states = await asyncio.to_thread(host_snapshot, box)
        elif not touched and box.baseline is not None:
            before = box.baseline
        else:
            before = await fallback_snapshot(pool.docker, c)
        keep = box.base_procs or {box.init_pid}
        stop = (lambda: kill_extras(view, keep)) if view is not None else (lambda: False)
        async with LayerWatch(view.upper if view else None, c.disk, stop) as watch:
            res = await c.exec(
                command, stdin=stdin, workdir=workdir, timeout_s=timeout,
                cap_bytes=COMPARE_CAP, kill_after_bytes=OUTPUT_LIMIT,
            )  # fmt: skip
        try:
            if await _box_died(box, res):
                seen = await _died(box)
            elif view is not None:
                seen = await _observe(task, box, view, before, before_states, before_work)
            else:
                oom = res.exit_code == 137 and not res.timed_out and await _oom_killed(c)
                diff = fallback_diff(before, await fallback_snapshot(pool.docker, c))
                seen = _Aftermath(oom=oom, changes=_changes(task, diff))
        except ENGINE_TROUBLE:
            if not await c.died():
                raise
            seen = await _died(box)  # it died while we looked (a delayed `kill -9 -1`)
        seen.disk_full = seen.disk_full or watch.tripped
    finally:
        await pool.release(
            box, after=seen.after, result=res if res is not None else ExecResult(None, b"", b"")
        )
    truncated_out = res.stdout_bytes > len(res.stdout)
    truncated_err = res.stderr_bytes > len(res.stderr)
    side = SideRun(
        exit_code=res.exit_code,
        stdout=_text(res.stdout),
        stderr=_text(res.stderr),
        stdout_bytes=res.stdout_bytes,
        stderr_bytes=res.stderr_bytes,
        stdout_sha256=res.stdout_sha256,
        stderr_sha256=res.stderr_sha256,
        stdout_tail=_text(res.stdout_tail) if truncated_out else "",
        stderr_tail=_text(res.stderr_tail) if truncated_err else "",
        timed_out=res.timed_out,
        oom_killed=seen.oom,
        pids_capped=seen.pids_capped,
        overflowed=res.overflowed,
        duration_s=round(res.duration_s, 4),
        left_running=seen.left,
        box_died=seen.box_died,
        disk_full=seen.disk_full,
        changes=seen.changes,
        changes_total=seen.changes.total,
        changes_sha256=seen.changes.sha256,
        state=state,  # type: ignore[arg-type]
    )
    return SideOutcome(side, res.stdout)


async def _observe(
    task: Task,
    box: Box,
    view: HostView,
    before: dict[str, Entry],
    before_states: dict[str, State],
    before_work: dict[str, Entry],
) -> _Aftermath:
    """After the case, with a host view: what still runs (counted, then held still so
    nothing changes what we walk; such a box is discarded), the limits it hit, whether its
    disk is full, and its side effects."""
    seen = _Aftermath()
    settled, alive = (False, 0)
    if box.base_procs:
        settled, alive = await settle(view, box.base_procs)
    if not settled:
        box.lingering = True
        seen.left = max(alive, left_running(view, box.base_procs or {box.init_pid}))
        await hold_still(box)
    seen.oom = view.oom_kills() > box.base_oom
    seen.pids_capped = view.pids_limit_hits() > box.base_pid_hits
    if box.container.disk is not None:
        used = await asyncio.to_thread(full_bytes, view.upper, box.container.disk)
        seen.disk_full = used is not None
    workdir = task.spec.cases.workdir
    seen.after, diff = await asyncio.to_thread(
        host_effects, box, workdir, before, before_states, before_work
    )
    seen.changes = _changes(task, diff)
    return seen


def _changes(task: Task, diff: dict[str, tuple[str, Entry]]) -> FileChanges:
    cases = task.spec.cases
    return to_file_changes(diff, workdir=cases.workdir, ignore=cases.ignore)


async def _box_died(box: Box, res: ExecResult) -> bool:
    """Whether the case ended every process of its box, its init's keepalive with them (the
    box stops). Seen from the host at once when it can; else the engine is asked after an
    exit code that says so (a signal's, or none)."""
    return await box.container.died(hint=res.exit_code is None or res.exit_code >= 126)


async def _died(box: Box) -> _Aftermath:
    """A box the case killed: out of memory (the engine says, once it has seen the box
    stop) or by its own hand. Its side effects are not walked (its tmpfs work directory
    went with it); its layer stays on the host until it is removed, so a full disk is
    still seen."""
    box.lingering = True  # never reused
    await box.container.wait_stopped()
    seen = _Aftermath(box_died=True, oom=await _oom_killed(box.container))
    if box.view is not None and box.container.disk is not None:
        used = await asyncio.to_thread(full_bytes, box.view.upper, box.container.disk)
        seen.disk_full = used is not None
    return seen


async def _oom_killed(c: Container) -> bool:
    info = await c.raw.show()
    return bool(info.get("State", {}).get("OOMKilled"))


# What the engine or a container can do to one side of a case (a refused or failed call, a
# container gone, a freeze that did not take). Anything else is a bug of ours and must not
# be turned into a verdict against the agent.
ENGINE_TROUBLE = (aiodocker.DockerError, aiohttp.ClientError, OSError, RuntimeError, TimeoutError)


async def raise_if_engine_lost(err: Exception) -> None:
    """EngineLost when the engine no longer answers a fresh connection; else nothing: `err`
    was one case's (or one container's) trouble, and that case fails or is retried."""
    try:
        probe = await connect()
    except EngineUnavailable as gone:
        raise EngineLost(f"{gone} (the last call: {type(err).__name__}: {err})") from err
    with contextlib.suppress(Exception):
        await probe.close()


class _Turns:
    """Cases take shared turns; a retry takes the only turn, once what runs has finished, so
    that a neighbour (a fork bomb starving the engine) cannot make it fail again."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0  # exclusive turns asked for: no new shared turn starts meanwhile

    @contextlib.asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._shared += 1
        try:
            yield
        finally:
            async with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._cond:
            self._waiting += 1
            try:
                await self._cond.wait_for(lambda: not self._exclusive and not self._shared)
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            async with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class Evaluator:
    """Pools for both sides; use as `async with Evaluator(...) as ev`."""

    def __init__(
        self,
        docker: aiodocker.Docker,
        task: Task,
        sides: Sides,
        *,
        run_id: str,
        concurrency: int | None = None,
        fast: bool = True,
        oracle_runs: int | None = None,
    ) -> None:
        self.task = task
        self.concurrency = concurrency or default_concurrency()
        self.oracle_runs = oracle_runs or task.spec.cases.oracle_runs
        common = dict(
            run_id=run_id, size=self.concurrency, fast=fast, workdir=task.spec.cases.workdir,
            limits=case_limits(task),
        )  # fmt: skip
        self.oracle = SidePool(docker, sides.oracle_image, role="oracle", **common)  # type: ignore[arg-type]
        self.delivery = SidePool(docker, sides.delivery_image, role="delivery", **common)  # type: ignore[arg-type]
        self._turns = _Turns()

    async def __aenter__(self) -> Evaluator:
        await self.oracle.start()
        await self.delivery.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.shield(asyncio.gather(self.oracle.close(), self.delivery.close()))

    async def run_case(self, ref: CaseRef) -> CaseResult:
        """One case, both sides. A side the engine could not run is retried once, alone and
        in a fresh box; only a lost engine (EngineLost) ends the run."""
        pools = [self.oracle] * self.oracle_runs + [self.delivery]
        async with self._turns.shared():
            attempts = await self._attempt(ref, pools)
        failed = [i for i, a in enumerate(attempts) if isinstance(a, SideFault)]
        if failed:
            async with self._turns.exclusive():
                retried = await self._attempt(ref, [pools[i] for i in failed])
            for i, again in zip(failed, retried, strict=True):
                attempts[i] = again
        *oracles, delivery = attempts
        return decide(self.task, ref, oracles, delivery)

    async def _attempt(self, ref: CaseRef, pools: list[SidePool]) -> list[Attempt]:
        sides = [asyncio.ensure_future(self._side(pool, ref)) for pool in pools]
        try:
            return list(await asyncio.gather(*sides))
        finally:  # on EngineLost (or cancel) the other sides stop and are awaited
            for side in sides:
                side.cancel()
            await asyncio.gather(*sides, return_exceptions=True)

    async def _side(self, pool: SidePool, ref: CaseRef) -> Attempt:
        try:
            return await run_on(pool, self.task, ref)
        except ENGINE_TROUBLE as err:  # not our own bugs: those fail the run, loudly
            await raise_if_engine_lost(err)
            log.warning("%s side of %s failed: %s: %s", pool.role, ref.id, type(err).__name__, err)
            log.debug("the failure in full", exc_info=err)
            return SideFault(err)

    async def run_cases(self, refs: list[CaseRef]) -> AsyncIterator[CaseResult]:
        """Yield each case's result as soon as it completes."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(ref: CaseRef) -> CaseResult:
            async with gate:
                return await self.run_case(ref)

        pending = [asyncio.ensure_future(one(ref)) for ref in refs]
        try:
            for next_done in asyncio.as_completed(pending):
                yield await next_done
        finally:
            for p in pending:
                p.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
