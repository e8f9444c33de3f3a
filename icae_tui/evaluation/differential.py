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
from dataclasses import dataclass

import aiodocker
import aiohttp

from icae_tui.domain.results import CaseResult, SideRun
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.sidefx import to_file_changes
from icae_tui.evaluation.sides import (
    Box,
    SidePool,
    fallback_diff,
    fallback_snapshot,
    hold_still,
    host_effects,
    host_snapshot,
    left_running,
    settles,
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
from icae_tui.sandbox.containers import ExecResult
from icae_tui.sandbox.engine import EngineUnavailable, connect
from icae_tui.sandbox.hostview import Entry

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


async def run_on(pool: SidePool, task: Task, ref: CaseRef) -> SideOutcome:
    workdir = task.spec.cases.workdir
    timeout = ref.case.timeout_s or task.spec.cases.timeout_s
    command, stdin = invocation(task, ref)
    box: Box = await pool.take()
    c, view = box.container, box.view
    state = "fallback" if view is None else ("reused" if box.cases_served else "fresh")
    res: ExecResult | None = None
    after = None
    before_work: dict[str, Entry] = {}
    before_states = box.base_states
    left = 0
    try:
        # Every host-side walk and hash runs in a thread: never on the event loop.
        if ref.case.files and view is not None:
            await asyncio.to_thread(write_fixtures, box, ref.case.files)
        elif ref.case.files:
            await c.put_files({f"{workdir}/{p}": t.encode() for p, t in ref.case.files.items()})
        if ref.case.prep:
            await c.exec(ref.case.prep, workdir=workdir, timeout_s=30)
        touched = bool(ref.case.files or ref.case.prep)
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
        res = await c.exec(
            command, stdin=stdin, workdir=workdir, timeout_s=timeout,
            cap_bytes=COMPARE_CAP, kill_after_bytes=OUTPUT_LIMIT,
        )  # fmt: skip
        pids_capped = False
        if view is not None:
            if not box.base_procs or not await settles(view, box.base_procs):
                # Something still runs: count it, then hold it still so nothing changes what
                # we walk. The box is discarded afterwards.
                box.lingering = True
                left = left_running(view, box.base_procs or {box.init_pid})
                await hold_still(box)
            oom = view.oom_kills() > box.base_oom
            pids_capped = view.pids_limit_hits() > box.base_pid_hits
            after, diff = await asyncio.to_thread(
                host_effects, box, workdir, before, before_states, before_work
            )
        else:
            oom = (
                res.exit_code == 137 and not res.timed_out and await _oom_killed(pool.docker, c.id)
            )
            diff = fallback_diff(before, await fallback_snapshot(pool.docker, c))
        changes = to_file_changes(diff, workdir=workdir, ignore=task.spec.cases.ignore)
    finally:
        if res is None:
            await pool.release(box, after=None, result=ExecResult(None, b"", b""))
        else:
            await pool.release(box, after=after, result=res)
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
        oom_killed=oom,
        pids_capped=pids_capped,
        overflowed=res.overflowed,
        duration_s=round(res.duration_s, 4),
        left_running=left,
        changes=changes,
        changes_total=changes.total,
        changes_sha256=changes.sha256,
        state=state,  # type: ignore[arg-type]
    )
    return SideOutcome(side, res.stdout)


async def _oom_killed(docker: aiodocker.Docker, container_id: str) -> bool:
    info = await docker.containers.container(container_id).show()
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
            run_id=run_id, size=self.concurrency, fast=fast, workdir=task.spec.cases.workdir
        )
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
