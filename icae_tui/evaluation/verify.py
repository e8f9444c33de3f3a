"""`icae tasks verify`: every case against the live oracle, twice.

A case is sound when the oracle gives the same exit code, stdout, stderr and side effects on
both runs, and its stdout equals the stored `expected_output` byte for byte.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiodocker

from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.differential import default_concurrency, run_on
from icae_tui.evaluation.sides import SidePool
from icae_tui.evaluation.verdict import oracle_agrees


@dataclass(frozen=True)
class CaseCheck:
    case_id: str
    deterministic: bool
    matches_stored: bool
    detail: str

    @property
    def ok(self) -> bool:
        return self.deterministic and self.matches_stored


async def verify_task(
    docker: aiodocker.Docker, task: Task, oracle_image: str, *, run_id: str
) -> AsyncIterator[CaseCheck]:
    import asyncio

    size = default_concurrency()
    workdir = task.spec.cases.workdir
    pool = SidePool(docker, oracle_image, run_id=run_id, role="oracle", size=size, workdir=workdir)
    await pool.start()
    gate = asyncio.Semaphore(size)

    async def check(ref: CaseRef) -> CaseCheck:
        async with gate:
            first, second = await asyncio.gather(run_on(pool, task, ref), run_on(pool, task, ref))
        deterministic = oracle_agrees(first, second)
        matches = first.stdout_full.decode(errors="replace") == ref.case.expected_output
        detail = []
        if not deterministic:
            detail.append("the oracle's two runs differ")
        if not matches:
            detail.append(
                f"stored {ref.case.expected_output[:60]!r}, oracle {first.run.stdout[:60]!r}"
            )
        return CaseCheck(ref.id, deterministic, matches, "; ".join(detail))

    pending = [asyncio.ensure_future(check(ref)) for ref in task.cases]
    try:
        for done in asyncio.as_completed(pending):
            yield await done
    finally:
        for p in pending:
            p.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await pool.close()
