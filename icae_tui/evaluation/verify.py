"""`icae tasks verify`: every case against the live oracle, twice.

A case is sound when the oracle gives the same exit code, stdout, stderr (unless the task
ignores it) and side effects on both runs, and its stdout equals the stored
`expected_output` byte for byte (both masked first by the task's `[sanitizer]`, if any). A task with no
oracle (its cases judged against the stored outputs) has nothing to check: no case is given.

`oracle_runs` is the oracle's run of every case, once or more, in its own case pool: verify
runs each twice; an importer whose source stores no outputs (CLI-Tool-Bench) runs each once
to record them (`SideOutcome.stored_stdout`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.differential import case_call, case_limits, default_concurrency
from icae_tui.evaluation.sanitizer import OutputSanitizer, SanitizerError, masked
from icae_tui.evaluation.scope import stderr_judged
from icae_tui.evaluation.verdict import oracle_agrees
from icae_tui.sandbox.base import Role, Sandbox

WHOLE = 60  # both outputs this short are shown whole: nothing cut, nothing to locate
AROUND = 30  # else each is shown this many characters either side of the first difference


def first_difference(stored: str, oracle: str) -> str:
    """Where a stored output and the oracle's differ, for a reader: both whole when short;
    else their lengths, the first differing character's index and each one's window there
    (a cut at a fixed length showed two equal prefixes when the difference lay further on).
    Starts with "stored" and holds no "; " of its own (catalog/check.py picks it out so)."""
    if len(stored) <= WHOLE and len(oracle) <= WHOLE:
        return f"stored {stored!r}, oracle {oracle!r}"
    at = next((i for i, (a, b) in enumerate(zip(stored, oracle, strict=False)) if a != b),
              min(len(stored), len(oracle)))  # fmt: skip
    start = max(0, at - AROUND)

    def window(text: str) -> str:
        end = at + AROUND
        return ("…" if start else "") + repr(text[start:end]) + ("…" if end < len(text) else "")

    if at < min(len(stored), len(oracle)):
        where = f"first differ at character {at}"
    elif len(stored) == len(oracle):  # equal as text (the bytes differed in undecodable ones)
        where = "equal as text"
    else:
        shorter = "stored" if len(stored) < len(oracle) else "oracle"
        where = f"the {shorter} output is a prefix of the other, which goes on at character {at}"
    return (f"stored {len(stored)} characters, oracle {len(oracle)}, {where}: "
            f"stored {window(stored)}, oracle {window(oracle)}")  # fmt: skip


@dataclass(frozen=True)
class CaseCheck:
    case_id: str
    deterministic: bool
    matches_stored: bool
    detail: str

    @property
    def ok(self) -> bool:
        return self.deterministic and self.matches_stored


async def oracle_runs(
    sandbox: Sandbox, task: Task, oracle_image: str, *, run_id: str, runs: int = 1
) -> AsyncIterator[tuple[CaseRef, list[SideOutcome]]]:
    """Each case of `task` run `runs` times on the oracle (at once), as they complete."""
    size = default_concurrency()
    pool = sandbox.case_pool(
        oracle_image, run_id=run_id, role=Role.ORACLE, size=size, limits=case_limits(task),
        workdir=task.spec.cases.workdir,
    )  # fmt: skip
    await pool.start()
    gate = asyncio.Semaphore(size)

    async def run(ref: CaseRef) -> tuple[CaseRef, list[SideOutcome]]:
        call = case_call(task, ref)
        async with gate:
            return ref, list(await asyncio.gather(*(pool.run(call) for _ in range(runs))))

    pending = [asyncio.ensure_future(run(ref)) for ref in task.cases]
    try:
        for done in asyncio.as_completed(pending):
            yield await done
    finally:
        for p in pending:
            p.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await pool.close()


async def verify_task(
    sandbox: Sandbox, task: Task, oracle_image: str, *, run_id: str,
    sanitizer_image: str | None = None,
) -> AsyncIterator[CaseCheck]:  # fmt: skip
    """Each case checked as a run judges it: stderr as the task's policy says, and with a
    `[sanitizer]` (its image given) both runs and the stored output masked by it first."""
    if task.spec.oracle is None:  # judged against the stored outputs: nothing to check them by
        return
    async with contextlib.AsyncExitStack() as stack:
        sanitizer = None
        if task.spec.sanitizer is not None and sanitizer_image is not None:
            sanitizer = await OutputSanitizer.start(sandbox, task, sanitizer_image, run_id=run_id)
            stack.push_async_callback(sanitizer.close)
        async for ref, runs in oracle_runs(sandbox, task, oracle_image, run_id=run_id, runs=2):
            first, second = runs
            stored, printed = ref.case.expected_output, first.stored_stdout
            if sanitizer is not None:
                masked_runs = await masked(sanitizer, task, list(runs))
                if all(isinstance(r, SideOutcome) for r in masked_runs):
                    first, second = (r for r in masked_runs if isinstance(r, SideOutcome))
                with contextlib.suppress(SanitizerError):
                    stored, printed = await sanitizer.mask([stored, printed])
            deterministic = oracle_agrees(first, second, stderr=stderr_judged(task.spec))
            matches = printed == stored
            detail = []
            if not deterministic:
                detail.append("the oracle's two runs differ")
            if not matches:
                detail.append(first_difference(stored, printed))
            yield CaseCheck(ref.id, deterministic, matches, "; ".join(detail))
