"""Throughput of the differential engine against a naive baseline and the floor, in one process.

    python benchmarks/differential.py [--cases 50] [--remote | --remote-only]

Suites are built from the `mini` fixture task: stdout-only cases (`upper`, `count`) and
file-writing cases (`note`, with a fixture). Each suite runs three ways, plus two other paths
of the engine (`exec`: the same engine with an engine exec per case instead of the box's
supervisor, as it was before the supervisor; `inside`: what a remote engine gets,
sandbox/docker/inbox.py):
  engine   — this engine: pooled containers, reused when provably untouched, layer diffs,
             both sides concurrently, cases bounded by the machine-sized semaphore, each
             case one request to the supervisor in its box (sandbox/docker/supervisor.py);
  naive    — CLI-Tool-Bench's harness as it is written, with docker-py's blocking API (in a
             thread): one persistent container per side, the work folder restored by copy
             before each case, fixtures and stdin put as tar archives (docker-py's exec cannot
             send stdin: the command reads a file), `find`-based manifests before and after,
             oracle then delivery one after the other;
  floor    — a bare `docker exec` of each case's command in already-running containers on
             both sides, no reset and no capture, at the exec path's concurrency (twice the
             supervised engine's: a bare exec mostly waits on the engine).
Prints cases/second, the ratios `engine vs naive` and `engine vs floor` (and exec's), and
whether every case got the same verdict, output, exit and side effects on engine, exec and
inside (the verdicts must be identical across paths). Timing runs from
the first case to the last result: the engine's pool warm-up is counted, the baselines'
container start-up and every tear-down are not (in the baselines' favour).

Then a scaling table (`--no-scale` skips it): the engine's cases/second on each suite at
`--scale-sizes` cases with `--scale-runs` runs evaluating at once (N Evaluators over one
sandbox, gathered; cases/second = every run's cases over the wall time of them all).

`--remote` also starts a second engine on this machine, reached over TCP as a remote one is
(tests/integration/second_engine.py: its own dockerd, data root and loopback port), and runs
the engine (which takes its in-box path there: our walker in each box, boxes reused when it
proves them untouched), its last-resort `/changes` path, and the naive baseline against it,
printing `remote engine vs naive` beside the local ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import sys
import time
from pathlib import Path

import docker as dockerpy
from docker.models.containers import Container as PyContainer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icae_tui.catalog.loader import load_catalog  # noqa: E402
from icae_tui.domain.task import Case, CaseRef, Split, Task  # noqa: E402
from icae_tui.evaluation.differential import Evaluator, Sides, default_concurrency, invocation  # noqa: E402
from icae_tui.sandbox.base import CasePath, Limits  # noqa: E402
from icae_tui.sandbox.docker.backend import DockerSandbox  # noqa: E402
from icae_tui.sandbox.docker.containers import container, labels_for, make_tar  # noqa: E402
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


VERDICTS: dict[str, dict[str, tuple]] = {}  # way -> case id -> what was judged, per suite


async def run_engine(
    sandbox, task: Task, sides: Sides, *, path: CasePath, run_id: str = "bench-engine",
    way: str | None = None,
) -> tuple[float, int]:  # fmt: skip
    started = time.perf_counter()
    passed = 0
    seen: dict[str, tuple] = {}
    async with Evaluator(sandbox, task, sides, run_id=run_id, path=path) as ev:
        async for r in ev.run_cases(task.cases):
            passed += r.passed
            seen[r.case_id] = (r.verdict, r.passed, *(_side(s) for s in (r.oracle, r.delivery)))
        elapsed = time.perf_counter() - started  # pool warm-up counted; tear-down is not
    if way is not None:
        VERDICTS[way] = seen
    return elapsed, passed


def _side(run) -> tuple | None:
    """What a path must agree on: exit, output, limits hit, side effects."""
    if run is None:
        return None
    return (run.exit_code, run.stdout_sha256, run.stderr_sha256, run.timed_out,
            run.left_running, run.changes_sha256)  # fmt: skip


FIND_MANIFEST = "find / -xdev \\( -path /proc -o -path /sys -o -path /usr -o -path /var/lib \\) -prune -o -type f -newer /etc/hostname -print0 2>/dev/null | xargs -0 -r sha256sum"


PRISTINE = "/tmp/pristine"
STDIN = "/tmp/stdin"


def naive_box(client: dockerpy.DockerClient, image: str, role: str) -> PyContainer:
    """A persistent container for one side, labelled as ours so the reaper may remove it."""
    ttl = Limits().ttl_s  # it sleeps no longer than its labels say it may live
    return client.containers.run(
        image, ["sleep", str(ttl)], detach=True, network_mode="none",
        labels=labels_for("bench-naive", role, ttl),
    )  # fmt: skip


def sh(box: PyContainer, command: str, workdir: str | None = None) -> tuple[int, bytes, bytes]:
    res = box.exec_run(["bash", "-c", command], workdir=workdir, demux=True)
    out, err = res.output
    return res.exit_code, out or b"", err or b""


def timed(command: str, timeout_s: float) -> str:
    """In-box coreutils `timeout`: docker-py's exec has none, and a hang would stall the loop."""
    return f"timeout -k 2 {timeout_s:g} bash -c {shlex.quote(command)}"


def sh_ok(box: PyContainer, command: str) -> None:
    """A step of the harness's own: its failing is a bug of the harness, not a finding."""
    code, _, err = sh(box, command)
    if code != 0:
        raise RuntimeError(f"naive harness step failed ({code}): {command}: {err.decode()}")


def naive_case(box: PyContainer, task: Task, ref: CaseRef) -> tuple[int, bytes, bool]:
    """One case on one side: (exit code, stdout, whether the files changed)."""
    workdir = task.spec.cases.workdir
    sh_ok(box, f"rm -rf {workdir} && cp -a {PRISTINE} {workdir}")
    if ref.case.files:
        box.put_archive(workdir, make_tar({p: t.encode() for p, t in ref.case.files.items()}))
    if ref.case.prep:
        sh(box, timed(ref.case.prep, 30), workdir)
    command, stdin = invocation(task, ref)
    source = "/dev/null"
    if stdin is not None:  # exec_run has no stdin: the case's goes to a file first
        box.put_archive("/", make_tar({STDIN: stdin}))
        source = STDIN
    _, before, _ = sh(box, FIND_MANIFEST)
    # `exec <`: the whole command line reads the file, a pipeline's first stage included
    line = f"exec < {source}; {command}"
    code, out, _ = sh(box, timed(line, ref.case.timeout_s or task.spec.cases.timeout_s), workdir)
    _, after, _ = sh(box, FIND_MANIFEST)
    return code, out, before != after


def naive(client: dockerpy.DockerClient, task: Task, sides: Sides) -> tuple[float, int]:
    """The blocking harness: both sides' containers, then every case, oracle then delivery."""
    boxes: list[PyContainer] = []
    try:
        for image, role in ((sides.oracle_image, "oracle"), (sides.delivery_image, "delivery")):
            boxes.append(naive_box(client, image, role))
            sh_ok(boxes[-1], f"cp -a {task.spec.cases.workdir} {PRISTINE}")
        started = time.perf_counter()  # its containers' start-up is not counted
        same = 0
        for ref in task.cases:
            oracle, delivery = [naive_case(box, task, ref) for box in boxes]  # in turn
            same += oracle == delivery
        return time.perf_counter() - started, same
    finally:
        for box in boxes:  # one failing still removes the other; the reaper knows the labels
            with contextlib.suppress(dockerpy.errors.APIError):
                box.remove(force=True)


async def run_naive(task: Task, sides: Sides, *, host: str | None = None) -> tuple[float, int]:
    """CLI-Tool-Bench's naive loop on the engine at `host` (default: the environment's)."""

    def blocking() -> tuple[float, int]:
        client = dockerpy.DockerClient(base_url=host) if host else dockerpy.from_env()
        try:
            return naive(client, task, sides)
        finally:
            client.close()

    return await asyncio.to_thread(blocking)


async def run_floor(docker, task: Task, sides: Sides) -> tuple[float, int]:
    async with (
        container(docker, sides.oracle_image, run_id="bench-floor", role="oracle") as o,
        container(docker, sides.delivery_image, run_id="bench-floor", role="delivery") as d,
    ):
        # the exec path's concurrency (twice the engine's here): the floor at its best
        gate = asyncio.Semaphore(default_concurrency(CasePath.HOST))

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


async def run_engines(sandbox, task: Task, sides: Sides, runs: int) -> tuple[float, int]:
    """`runs` Evaluators at once over one sandbox, each with its own run_id, each judging
    every case of `task`: (wall time of them all, cases agreeing over all runs)."""
    started = time.perf_counter()
    results = await asyncio.gather(
        *(run_engine(sandbox, task, sides, path=CasePath.SUPERVISED, run_id=f"bench-scale-{i}")
          for i in range(runs))
    )  # fmt: skip
    return time.perf_counter() - started, sum(ok for _, ok in results)


def scale_table(name: str, rates: dict[int, dict[int, float]], runs: list[int]) -> str:
    """Rows: cases per run; columns: runs at once; cells: cases/second over all runs."""
    heads = [f"{n} run{'s' if n > 1 else ''}" for n in runs]
    lines = [f"scaling, {name}: engine cases/s (rows: cases per run; columns: runs at once)",
             f"  {'cases':>7}" + "".join(f"{h:>10}" for h in heads)]  # fmt: skip
    for size, row in rates.items():
        lines.append(f"  {size:>7,}" + "".join(f"{row[n]:>10.1f}" for n in runs))
    return "\n".join(lines)


async def run_scaling(sandbox, base: Task, sides: Sides, sizes: list[int], runs: list[int]) -> None:
    """Cost as work grows: cases/second per suite, case count and runs at once."""
    for name, share in SUITES:
        rates: dict[int, dict[int, float]] = {}
        judged = agree = 0
        for size in sizes:
            task = suite(base, size, share)
            for n in runs:
                elapsed, ok = await run_engines(sandbox, task, sides, n)
                rates.setdefault(size, {})[n] = size * n / elapsed
                judged, agree = judged + size * n, agree + ok
        print(scale_table(name, rates, runs))
        print(f"  ({agree}/{judged} judged cases agree)")
        figures = {
            str(k): {str(n): round(v, 2) for n, v in row.items()} for k, row in rates.items()
        }
        print(
            json.dumps({"scaling": name, "cases_per_s": figures, "agree": agree, "judged": judged})
        )


def counts(text: str) -> list[int]:
    """A comma list of positive counts: `50,200,1000`."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of counts: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"counts must be 1 or more: {text!r}")
    return values


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
                              ("naive", run_naive(task, sides, host=url))):  # fmt: skip
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
    ap.add_argument("--scale-sizes", type=counts, default="50,200,1000",
                    help="scaling table: cases per run (comma list)")  # fmt: skip
    ap.add_argument("--scale-runs", type=counts, default="1,2,4",
                    help="scaling table: runs evaluating at once (comma list)")  # fmt: skip
    ap.add_argument("--no-scale", action="store_true", help="skip the scaling table")
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
            f"machine: {default_concurrency()} cases in flight (engine), "
            f"{default_concurrency(CasePath.HOST)} (exec, inside, floor); {args.cases} cases per suite"
        )
        for name, share in () if args.remote_only else SUITES:
            task = suite(base, args.cases, share)
            n = len(task.cases)
            figures = {}
            for way, coro in (
                ("engine", run_engine(sandbox, task, sides, path=CasePath.SUPERVISED, way="engine")),
                ("exec", run_engine(sandbox, task, sides, path=CasePath.HOST, way="exec")),
                ("inside", run_engine(sandbox, task, sides, path=CasePath.INSIDE, way="inside")),
                ("naive", run_naive(task, sides)),
                ("floor", run_floor(docker, task, sides)),
            ):
                elapsed, ok = await coro
                figures[way] = n / elapsed
                print(
                    f"  {name:<26} {way:<9} {elapsed:6.2f} s  {n / elapsed:6.1f} cases/s  ({ok}/{n} agree)"
                )
            local[name] = figures["engine"] / figures["naive"]
            print(f"{name}: engine vs naive: {local[name]:.1f}x")
            print(f"{name}: engine vs floor: {figures['engine'] / figures['floor']:.2f}x")
            print(f"{name}: exec (the per-case exec path) vs naive: "
                  f"{figures['exec'] / figures['naive']:.1f}x, vs floor: "
                  f"{figures['exec'] / figures['floor']:.2f}x")  # fmt: skip
            same = all(VERDICTS[w] == VERDICTS["engine"] for w in ("exec", "inside"))
            print(f"{name}: verdicts identical across engine, exec and inside: "
                  f"{'yes' if same else 'NO'} ({len(VERDICTS['engine'])} cases)")  # fmt: skip
            print(f"{name}: inside vs naive: {figures['inside'] / figures['naive']:.1f}x")
            print(
                json.dumps(
                    {"suite": name, "cases_per_s": {k: round(v, 2) for k, v in figures.items()}}
                )
            )
        if not (args.no_scale or args.remote_only):
            await run_scaling(sandbox, base, sides, args.scale_sizes, args.scale_runs)
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
