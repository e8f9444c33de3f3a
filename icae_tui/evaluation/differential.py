"""The differential engine: every case against the oracle and the delivery, side by side.

(A task judged against its stored expected outputs has one side: the delivery's; see
evaluation/expected.py.)

Per side and case, the sandbox's case pool runs the case in a fresh state (fixtures, `prep`,
the case under its timeout and output cap, what it left and its side effects: see the
backend, e.g. `sandbox/docker/cases.py`). Both sides run concurrently; cases run
concurrently up to a bound sized to the machine. Then the comparison ladder (verdict.py,
pure) gives one verdict per case.

A side the engine could not run or inspect (a `BoxError`) is retried once, alone; failing
again it is that case's verdict, never the run's: the delivery's failure (counted) or, when
only the oracle's side failed, an oracle error. Only a lost engine (EngineLost: the engine
no longer answers a fresh connection) ends the run. Anything else raised while a case is
handled is a bug of ours: it fails the run, and is never a verdict against the delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import CaseRef, Reference, Task
from icae_tui.errors import BoxError, EngineLost, EngineUnavailable
from icae_tui.evaluation.sanitizer import OutputSanitizer, masked
from icae_tui.evaluation.scope import collection_globs
from icae_tui.evaluation.scoring import CaseJudge, judge_case
from icae_tui.evaluation.verdict import (
    COMPARE_CAP,
    OUTPUT_LIMIT,
    Attempt,
    SideFault,
    invocation,
)
from icae_tui.evaluation.verdict import (  # re-exported: runs/run.py imports it from here
    build_error_result as build_error_result,
)
from icae_tui.sandbox.base import CaseCall, CasePath, CasePool, Limits, Role, Sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sides:
    oracle_image: str
    delivery_image: str
    sanitizer_image: str | None = None  # the task's [sanitizer] runs in a box of it


def default_concurrency(path: CasePath = CasePath.SUPERVISED) -> int:
    """Cases in flight at once. Run by a box's supervisor, a case is this machine's CPU work
    (one per core: more only adds boxes to make, measured in benchmarks/differential.py);
    by an engine exec or from inside a remote box, it is mostly waiting on the engine."""
    cores = os.cpu_count() or 1
    return max(2, min(8, cores if path is CasePath.SUPERVISED else 2 * cores))


CASE_TTL_S = 1800  # a case box outlives its run only if the run crashed


def case_limits(task: Task) -> Limits:
    """A case's box (and the build gate's): the task's disk limit."""
    return Limits(ttl_s=CASE_TTL_S, disk_bytes=task.spec.cases.disk_mb * 2**20)


def case_call(task: Task, ref: CaseRef) -> CaseCall:
    """What the sandbox runs for a case on either side."""
    command, stdin = invocation(task, ref)
    cases = task.spec.cases
    # what is not judged (the oracle's install, outside the compared roots) is not collected
    # either: the count and digest of changes past the kept ones then cover what is judged
    ignore = (*cases.ignore, *collection_globs(task.spec))
    return CaseCall(
        command=command, stdin=stdin, timeout_s=ref.case.timeout_s or cases.timeout_s,
        workdir=cases.workdir, files=dict(ref.case.files or {}), prep=ref.case.prep,
        compare_cap=COMPARE_CAP, output_limit=OUTPUT_LIMIT, ignore=ignore,
    )  # fmt: skip


async def raise_if_engine_lost(sandbox: Sandbox, err: Exception) -> None:
    """EngineLost when the engine no longer answers a fresh connection; else nothing: `err`
    was one case's (or one box's) trouble, and that case fails or is retried."""
    try:
        await sandbox.ping()
    except EngineUnavailable as gone:
        raise EngineLost(f"{gone} (the last call: {type(err).__name__}: {err})") from err


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
        sandbox: Sandbox,
        task: Task,
        sides: Sides,
        *,
        run_id: str,
        concurrency: int | None = None,
        path: CasePath = CasePath.SUPERVISED,
        oracle_runs: int | None = None,
        judge: CaseJudge | None = None,
    ) -> None:
        """`judge`: the run's scorers, opened (scoring.py); by default those that need
        nothing of a run."""
        self.sandbox = sandbox
        self.task = task
        self.judge = judge
        self.concurrency = concurrency or default_concurrency(path)
        # judged against the stored expected outputs (evaluation/expected.py): no oracle runs
        self.against_expected = task.spec.cases.reference is Reference.EXPECTED
        runs = oracle_runs or task.spec.cases.oracle_runs
        self.oracle_runs = 0 if self.against_expected else runs
        limits, workdir = case_limits(task), task.spec.cases.workdir

        def pool(image: str, role: Role) -> CasePool:
            return sandbox.case_pool(
                image, run_id=run_id, role=role, size=self.concurrency, limits=limits,
                workdir=workdir, path=path,
            )  # fmt: skip

        self.oracle = None if self.against_expected else pool(sides.oracle_image, Role.ORACLE)
        self.delivery = pool(sides.delivery_image, Role.DELIVERY)
        self._roles = {id(self.oracle): Role.ORACLE, id(self.delivery): Role.DELIVERY}
        self._turns = _Turns()
        self._sanitizer_image = sides.sanitizer_image if task.spec.sanitizer else None
        self._run_id = run_id
        self.sanitizer: OutputSanitizer | None = None

    def _pools(self) -> list[CasePool]:
        return [p for p in (self.oracle, self.delivery) if p is not None]

    async def __aenter__(self) -> Evaluator:
        try:
            if self._sanitizer_image is not None:
                self.sanitizer = await OutputSanitizer.start(
                    self.sandbox, self.task, self._sanitizer_image, run_id=self._run_id
                )
            for p in self._pools():
                await p.start()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        closing = [p.close() for p in self._pools()]
        if self.sanitizer is not None:
            closing.append(self.sanitizer.close())
        await asyncio.shield(asyncio.gather(*closing))

    async def run_case(self, ref: CaseRef) -> CaseResult:
        """One case, both sides. A side the engine could not run is retried once, alone and
        in a fresh box; only a lost engine (EngineLost) ends the run."""
        oracle_pools = [self.oracle] * self.oracle_runs if self.oracle is not None else []
        pools = [*oracle_pools, self.delivery]
        async with self._turns.shared():
            attempts = await self._attempt(ref, pools)
        failed = [i for i, a in enumerate(attempts) if isinstance(a, SideFault)]
        if failed:
            async with self._turns.exclusive():
                retried = await self._attempt(ref, [pools[i] for i in failed])
            for i, again in zip(failed, retried, strict=True):
                attempts[i] = again
        if self.sanitizer is not None:
            attempts = await masked(self.sanitizer, self.task, attempts)
        *oracles, delivery = attempts
        if self.judge is not None:
            return await self.judge(ref, oracles, delivery)
        return await judge_case(self.task, ref, oracles, delivery)

    async def _attempt(self, ref: CaseRef, pools: list[CasePool]) -> list[Attempt]:
        call = case_call(self.task, ref)
        sides = [asyncio.ensure_future(self._side(pool, ref, call)) for pool in pools]
        try:
            return list(await asyncio.gather(*sides))
        finally:  # on EngineLost (or cancel) the other sides stop and are awaited
            for side in sides:
                side.cancel()
            await asyncio.gather(*sides, return_exceptions=True)

    async def _side(self, pool: CasePool, ref: CaseRef, call: CaseCall) -> Attempt:
        try:
            return await pool.run(call)
        except BoxError as err:  # not our own bugs: those fail the run, loudly
            await raise_if_engine_lost(self.sandbox, err)
            role = self._roles.get(id(pool), "?")
            log.warning("%s side of %s failed: %s: %s", role, ref.id, type(err).__name__, err)
            log.debug("the failure in full", exc_info=err)
            return SideFault(err)

    async def run_cases(self, refs: list[CaseRef]) -> AsyncGenerator[CaseResult]:
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
