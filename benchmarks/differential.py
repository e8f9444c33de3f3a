"""Throughput of the differential engine against a naive baseline and the floor, in one process.

    python benchmarks/differential.py [--cases 50] [--remote | --remote-only]

Suites are built from the `mini` fixture task: stdout-only cases (`upper`, `count`) and
file-writing cases (`note`, with a fixture). Each suite runs three ways, plus the engine's
in-box path (`inside`: what a remote engine gets, sandbox/docker/inbox.py):
  engine   — this engine: pooled containers, reused when provably untouched, layer diffs,
             both sides concurrently, cases bounded by the machine-sized semaphore;
  naive    — CLI-Tool-Bench style: one persistent container per side, the work folder restored
             by copy before each case, `find`-based manifests before and after, oracle then
             delivery one after the other;
  floor    — a bare `docker exec` of each case's command in already-running containers on
             both sides, same concurrency as the engine, no reset and no capture.
Prints cases/second and the ratios `engine vs naive` and `floor vs engine`. Timing runs from
the first case to the last result: the engine's pool warm-up is counted, the baselines'
container start-up and every tear-down are not (in the baselines' favour).

`--remote` also starts a second engine on this machine, reached over TCP as a remote one is
(tests/integration/second_engine.py: its own dockerd, data root and loopback port), and runs
the engine (which takes its in-box path there: our walker in each box, boxes reused when it
proves them untouched), its last-resort `/changes` path, and the naive baseline against it,
printing `remote engine vs naive` beside the local ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icae_tui.catalog import load_catalog  # noqa: E402
from icae_tui.domain.task import Case, CaseRef, Split, Task  # noqa: E402
from icae_tui.evaluation.differential import Evaluator, Sides, default_concurrency, invocation  # noqa: E402
from icae_tui.sandbox.base import CasePath  # noqa: E402
from icae_tui.sandbox.docker.backend import DockerSandbox  # noqa: E402
from icae_tui.sandbox.docker.containers import container  # noqa: E402
from icae_tui.sandbox.docker.images import ensure_task_images  # noqa: E402

SUITES = (("mixed (30% file-writing)", 0.3), ("stdout-only", 0.0))


def suite(task: Task, n: int, file_share: float) -> Task:
    refs = []
    n_files = round(n * file_share)
    for i in range(n):
        if i < n_files:
            case = Case(input={"op": "note", "name": f"out/n{i}.txt", "text": f"note {i}"},
                        files={"out/keep.txt": "fixture\n"}, pattern="note")  # fmt: skip
        elif i % 2:
            case = Case(input={"op": "upper", "text": f"word {i} " * 5}, pattern="upper")
        else:
            case = Case(input={"op": "count", "text": "a b c " * i}, pattern="count")
        refs.append(
            CaseRef(
                split=Split.HIDDEN, stem="bench", index=i, case=case, pattern=case.pattern or ""
            )
        )
    return task.model_copy(update={"cases": refs})


async def run_engine(sandbox, task: Task, sides: Sides, *, path: CasePath) -> tuple[float, int]:
    started = time.perf_counter()
    passed = 0
    async with Evaluator(sandbox, task, sides, run_id="bench-engine", path=path) as ev:
        async for r in ev.run_cases(task.cases):
            passed += r.passed
        elapsed = time.perf_counter() - started  # pool warm-up counted; tear-down is not
    return elapsed, passed


FIND_MANIFEST = "find / -xdev \\( -path /proc -o -path /sys -o -path /usr -o -path /var/lib \\) -prune -o -type f -newer /etc/hostname -print0 2>/dev/null | xargs -0 -r sha256sum"


async def run_naive(docker, task: Task, sides: Sides) -> tuple[float, int]:
    """One persistent container per side; restore by folder copy; find-based manifests."""
    workdir = task.spec.cases.workdir
    same = 0
    async with (
        container(docker, sides.oracle_image, run_id="bench-naive", role="oracle") as o,
        container(docker, sides.delivery_image, run_id="bench-naive", role="delivery") as d,
    ):
        for c in (o, d):
            await c.exec(f"cp -a {workdir} /tmp/pristine")
        started = time.perf_counter()  # its containers' start-up is not counted
        for ref in task.cases:
            command, stdin = invocation(task, ref)
            outputs = []
            for c in (o, d):  # oracle, then delivery
                await c.exec(f"rm -rf {workdir} && cp -a /tmp/pristine {workdir}")
                if ref.case.files:
                    await c.put_files(
                        {f"{workdir}/{p}": t.encode() for p, t in ref.case.files.items()}
                    )
                before = await c.exec(FIND_MANIFEST)
                res = await c.exec(command, stdin=stdin, workdir=workdir, timeout_s=10)
                after = await c.exec(FIND_MANIFEST)
                outputs.append((res.exit_code, res.stdout, before.stdout != after.stdout))
            same += outputs[0] == outputs[1]
        elapsed = time.perf_counter() - started
    return elapsed, same


async def run_floor(docker, task: Task, sides: Sides) -> tuple[float, int]:
    async with (
        container(docker, sides.oracle_image, run_id="bench-floor", role="oracle") as o,
        container(docker, sides.delivery_image, run_id="bench-floor", role="delivery") as d,
    ):
        gate = asyncio.Semaphore(default_concurrency())

        async def one(ref: CaseRef) -> bool:
            command, stdin = invocation(task, ref)
            async with gate:
                a, b = await asyncio.gather(
                    o.exec(command, stdin=stdin, workdir=task.spec.cases.workdir),
                    d.exec(command, stdin=stdin, workdir=task.spec.cases.workdir),
                )
            return a.stdout == b.stdout

        started = time.perf_counter()
        same = sum(await asyncio.gather(*(one(r) for r in task.cases)))
        return time.perf_counter() - started, same


async def run_remote(url: str, base: Task, n_cases: int) -> dict[str, float]:
    """The engine and the naive baseline on the engine at `url`: remote engine vs naive."""
    sandbox = await DockerSandbox.open(host=url)
    docker = sandbox.docker
    ratios = {}
    try:
        images = await ensure_task_images(docker, base)
        sides = Sides(oracle_image=images.oracle, delivery_image=images.oracle)
        for name, share in SUITES:
            task = suite(base, n_cases, share)
            n = len(task.cases)
            figures = {}
            for way, coro in (("engine", run_engine(sandbox, task, sides, path=CasePath.HOST)),
                              ("changes", run_engine(sandbox, task, sides, path=CasePath.CHANGES)),
                              ("naive", run_naive(docker, task, sides))):  # fmt: skip
                elapsed, ok = await coro
                figures[way] = n / elapsed
                print(f"  remote {name:<19} {way:<9} {elapsed:6.2f} s  {n / elapsed:6.1f} cases/s"
                      f"  ({ok}/{n} agree)")  # fmt: skip
            ratios[name] = figures["engine"] / figures["naive"]
            print(f"{name}: remote engine vs naive: {ratios[name]:.1f}x "
                  f"(its /changes path: {figures['changes'] / figures['naive']:.1f}x)")  # fmt: skip
    finally:
        await sandbox.close()
    return ratios


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--remote", action="store_true",
                    help="also measure the remote path, on a second engine over TCP")  # fmt: skip
    ap.add_argument("--remote-only", action="store_true",
                    help="only the remote path (skips the local suites)")  # fmt: skip
    args = ap.parse_args()
    args.remote = args.remote or args.remote_only
    catalog = load_catalog(ROOT / "tests" / "fixtures" / "tasks")
    base = catalog.tasks["mini"]
    sandbox = await DockerSandbox.open()
    docker = sandbox.docker
    local: dict[str, float] = {}
    try:
        images = await ensure_task_images(docker, base)
        # the delivery is the oracle's twin: same image, so every case must pass
        sides = Sides(oracle_image=images.oracle, delivery_image=images.oracle)
        print(
            f"machine: concurrency {default_concurrency()} cases in flight; {args.cases} cases per suite"
        )
        for name, share in () if args.remote_only else SUITES:
            task = suite(base, args.cases, share)
            n = len(task.cases)
            figures = {}
            for way, coro in (
                ("engine", run_engine(sandbox, task, sides, path=CasePath.HOST)),
                ("inside", run_engine(sandbox, task, sides, path=CasePath.INSIDE)),
                ("naive", run_naive(docker, task, sides)),
                ("floor", run_floor(docker, task, sides)),
            ):
                elapsed, ok = await coro
                figures[way] = n / elapsed
                print(
                    f"  {name:<26} {way:<9} {elapsed:6.2f} s  {n / elapsed:6.1f} cases/s  ({ok}/{n} agree)"
                )
            local[name] = figures["engine"] / figures["naive"]
            print(f"{name}: engine vs naive: {local[name]:.1f}x")
            print(f"{name}: floor vs engine: {figures['floor'] / figures['engine']:.1f}x")
            print(f"{name}: inside vs naive: {figures['inside'] / figures['naive']:.1f}x")
            print(
                json.dumps(
                    {"suite": name, "cases_per_s": {k: round(v, 2) for k, v in figures.items()}}
                )
            )
    finally:
        await sandbox.close()
    if args.remote:
        from tests.integration.second_engine import second_engine

        with second_engine() as engine:
            remote = await run_remote(engine.url, base, args.cases)
        for name, ratio in remote.items():
            here = f"local {local[name]:.1f}x, " if name in local else ""
            print(f"{name}: engine vs naive — {here}remote {ratio:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
