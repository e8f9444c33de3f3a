"""Differential cases v1: every case in a fresh oracle container and a fresh delivery one.

Per side: write fixtures, run `prep`, take a manifest of the work directory, run the case
(stdin from `input`), take the manifest again. Then compare exit codes, side effects,
stdout (EM / FM) and stderr, and give a verdict with a reason a person can read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiodocker

from icae_tui.domain.results import CaseResult, SideRun, Verdict
from icae_tui.domain.task import CaseRef, Task
from icae_tui.evaluation.compare import exact_match, fuzzy_score
from icae_tui.evaluation.manifest import diff_manifests, effective, manifest_command, parse_manifest
from icae_tui.sandbox.containers import Limits, container

DISPLAY_CAP = 64 * 1024  # characters of each stream kept in results and reports


@dataclass(frozen=True)
class Sides:
    oracle_image: str
    delivery_image: str


def invocation(task: Task, ref: CaseRef) -> tuple[str, bytes | None]:
    """The shell line and the stdin bytes of a case."""
    case, tool = ref.case, task.spec.interface.tool
    if task.spec.interface.kind == "dispatcher" and case.command is None:
        return tool, json.dumps(case.input, ensure_ascii=False).encode()
    stdin = case.input.encode() if isinstance(case.input, str) else None
    return case.command or tool, stdin


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[:DISPLAY_CAP]


async def run_side(
    docker: aiodocker.Docker, image: str, task: Task, ref: CaseRef, *, run_id: str, role: str
) -> SideRun:
    workdir = task.spec.cases.workdir
    timeout = ref.case.timeout_s or task.spec.cases.timeout_s
    command, stdin = invocation(task, ref)
    async with container(docker, image, run_id=run_id, role=role, limits=Limits(ttl_s=900)) as c:
        if ref.case.files:
            await c.put_files({f"{workdir}/{p}": t.encode() for p, t in ref.case.files.items()})
        if ref.case.prep:
            await c.exec(ref.case.prep, workdir=workdir, timeout_s=30)
        before = parse_manifest((await c.exec(manifest_command(workdir), timeout_s=60)).stdout)
        res = await c.exec(command, stdin=stdin, workdir=workdir, timeout_s=timeout)
        after_raw = await c.exec(manifest_command(workdir), timeout_s=60)
        after = parse_manifest(after_raw.stdout) if after_raw.exit_code == 0 else before
    return SideRun(
        exit_code=res.exit_code,
        stdout=_text(res.stdout),
        stderr=_text(res.stderr),
        stdout_bytes=res.stdout_bytes,
        stderr_bytes=res.stderr_bytes,
        timed_out=res.timed_out,
        duration_s=round(res.duration_s, 4),
        changes=diff_manifests(before, after),
    )


def judge(task: Task, ref: CaseRef, oracle: SideRun, delivery: SideRun) -> CaseResult:
    command, _ = invocation(task, ref)
    base = dict(
        case_id=ref.id,
        split=ref.split.value,
        pattern=ref.pattern,
        command=command,
        oracle=oracle,
        delivery=delivery,
    )
    if oracle.timed_out or oracle.exit_code is None:
        return CaseResult(**base, verdict=Verdict.ORACLE_ERROR, reason="the oracle did not finish")
    if delivery.timed_out:
        limit = ref.case.timeout_s or task.spec.cases.timeout_s
        return CaseResult(**base, verdict=Verdict.TIME_LIMIT, reason=f"no exit within {limit:g} s")
    exec_ok = oracle.exit_code == delivery.exit_code
    sp = exec_ok and effective(oracle.changes) == effective(delivery.changes)
    em = exact_match(oracle.stdout, delivery.stdout)
    fm_score = round(fuzzy_score(oracle.stdout, delivery.stdout), 4)
    fm = fm_score >= task.spec.cases.fm_threshold
    stderr_ok = exact_match(oracle.stderr, delivery.stderr)
    flags = dict(exec_ok=exec_ok, sp=sp, em=sp and em, fm=sp and fm, fm_score=fm_score)
    if not exec_ok:
        code = delivery.exit_code
        crashed = code is not None and (code >= 126 or code < 0)
        verdict = Verdict.RUNTIME_ERROR if crashed else Verdict.WRONG_ANSWER
        reason = f"exit code {code}, oracle {oracle.exit_code}"
        if delivery.stderr.strip():
            reason += f"; stderr: {delivery.stderr.strip().splitlines()[-1][:120]}"
        return CaseResult(**base, **flags, verdict=verdict, reason=reason)
    if not sp:
        ours = {c.path: c.change for c in delivery.changes}
        theirs = {c.path: c.change for c in oracle.changes}
        diffs = [
            f"{p}: {ours.get(p, 'untouched')} (oracle {theirs.get(p, 'untouched')})"
            for p in sorted(ours.keys() | theirs.keys())
            if ours.get(p) != theirs.get(p)
        ] or ["same paths, different content"]
        reason = "side effects differ: " + "; ".join(diffs[:3])
        return CaseResult(**base, **flags, verdict=Verdict.SIDE_EFFECTS, reason=reason)
    if not em:
        reason = f"stdout differs (similarity {fm_score:.2f})"
        return CaseResult(**base, **flags, verdict=Verdict.WRONG_ANSWER, reason=reason)
    if not stderr_ok:
        return CaseResult(**base, **flags, verdict=Verdict.WRONG_ANSWER, reason="stderr differs")
    return CaseResult(**base, **flags, verdict=Verdict.ACCEPTED, reason="identical", passed=True)


async def run_case(
    docker: aiodocker.Docker, task: Task, ref: CaseRef, sides: Sides, *, run_id: str
) -> CaseResult:
    oracle, delivery = await asyncio.gather(
        run_side(docker, sides.oracle_image, task, ref, run_id=run_id, role="oracle"),
        run_side(docker, sides.delivery_image, task, ref, run_id=run_id, role="delivery"),
    )
    return judge(task, ref, oracle, delivery)


async def run_cases(
    docker: aiodocker.Docker,
    task: Task,
    refs: list[CaseRef],
    sides: Sides,
    *,
    run_id: str,
    concurrency: int = 3,
) -> AsyncIterator[CaseResult]:
    """Yield each case's result as soon as it completes."""
    gate = asyncio.Semaphore(concurrency)

    async def one(ref: CaseRef) -> CaseResult:
        async with gate:
            return await run_case(docker, task, ref, sides, run_id=run_id)

    pending = [asyncio.ensure_future(one(ref)) for ref in refs]
    try:
        for next_done in asyncio.as_completed(pending):
            yield await next_done
    finally:
        for p in pending:
            p.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def build_error_result(task: Task, ref: CaseRef, reason: str) -> CaseResult:
    command, _ = invocation(task, ref)
    return CaseResult(
        case_id=ref.id,
        split=ref.split.value,
        pattern=ref.pattern,
        command=command,
        verdict=Verdict.BUILD_ERROR,
        reason=reason,
    )
