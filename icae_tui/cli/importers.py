"""`icae tasks import icae-eval PATH` and `icae tasks export icae-eval OUT`: the commands, on
the `tasks` parser of icae_tui/cli/root.py (which adds them with `add_arguments` and hands them
to `run`).

import: every alias of the tree into the tasks folder (`--tasks`, default ./tasks), one line
per task (its outcome and what its cases are judged against) with its problems below it;
exit 1 when a task was not imported, 2 when PATH is no ICAE-EVAL tree.
export: the imported tasks (`--task` names some) as an ICAE-EVAL tree under OUT.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from icae_tui.domain.task import Reference, Task
from icae_tui.errors import ConfigError, ImageBuildError
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.cli_tool_bench import FuzzJob, FuzzRun, OracleRecord, OracleRunner
from icae_tui.importers.icae_eval import ImportReport, Outcome, TaskImport, import_tree
from icae_tui.importers.icae_export import export_tasks
from icae_tui.importers.problems import Severity
from icae_tui.packages.installed import list_argv, locked_set
from icae_tui.sandbox.base import BoxSpec, Role, Sandbox
from icae_tui.util.safe_text import printable

ACTIONS = ("import", "export")
SOURCES = ("icae-eval", "cli-tool-bench")
_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}
JUDGED = {
    Reference.ORACLE: "cases differential against its golden repository",
    Reference.EXPECTED: "cases judged against their stored expected outputs (as ICAE-EVAL)",
}


def add_arguments(tasks: argparse.ArgumentParser) -> None:
    """import/export's arguments on the `tasks` parser (its `action` takes ACTIONS)."""
    tasks.add_argument("source", nargs="?", choices=SOURCES,
                       help="with import or export: the benchmark (icae-eval; import: "
                       "cli-tool-bench too)")  # fmt: skip
    tasks.add_argument("path", nargs="?", metavar="PATH",
                       help="import: the ICAE-EVAL tree; export: the folder to write it to")  # fmt: skip
    tasks.add_argument("--tests-dir", metavar="DIR",
                       help="import: the rcb_tests repositories (default PATH/rcb_tests_repos)")  # fmt: skip
    tasks.add_argument("--golden-dir", metavar="DIR",
                       help="import: the golden repositories (default PATH/realcode_repos)")  # fmt: skip
    tasks.add_argument("--base-image", metavar="IMAGE",
                       help="import: every task's base image (default: the Debian base "
                       "with its language's runtime recipe)")  # fmt: skip
    tasks.add_argument("--tool", action="append", metavar="OWNER/REPO",
                       help="cli-tool-bench: only this tool (repeatable)")  # fmt: skip
    tasks.add_argument("--oracle", action="append", default=[], metavar="OWNER/REPO=SOURCE",
                       help="cli-tool-bench: the tool's oracle, a pinned package (pip:NAME==V, "
                       "npm:NAME@V) or a local checkout (repeatable)")  # fmt: skip
    tasks.add_argument("--seed", type=int, default=None,
                       help="cli-tool-bench: the seed its fuzzers generate the cases with")  # fmt: skip


def _oracle_package(folder: Path) -> str | None:
    """The imported task's `[oracle] package` (`pip:NAME==V`, `npm:NAME@V`), if it has one."""
    try:
        oracle = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8")).get("oracle")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    package = oracle.get("package") if isinstance(oracle, dict) else None
    return package if isinstance(package, str) else None


def _task_line(task: TaskImport, into: Path | None = None) -> str:
    head = f"{task.task_id} ({task.alias}): {task.outcome.value}"
    if task.reference is None:
        return head
    # a pinned package has no golden repository: say which package the cases are held to
    package = _oracle_package(into / task.task_id) if into is not None else None
    if task.reference is Reference.ORACLE and package is not None:
        pinned = package.split(":", 1)[-1]  # NAME==V (pip), NAME@V (npm)
        return f"{head} · cases differential against the pinned registry package {pinned}"
    return head + f" · {JUDGED[task.reference]}"


def print_import(report: ImportReport, what: str = "aliases") -> None:
    for problem in report.problems:
        print(printable(str(problem), limit=500))
    for task in report.tasks:
        print(printable(_task_line(task, report.into), limit=500))
        for problem in sorted(task.problems, key=lambda p: _ORDER[p.severity]):
            print("  " + printable(str(problem), limit=500))
    counts = ", ".join(f"{report.count(o)} {o.value}" for o in Outcome if o is not Outcome.FAILED)
    print(f"{len(report.tasks)} {what}: {len(report.imported)} imported into {report.into} "
          f"({counts}), {len(report.failed)} not imported")  # fmt: skip


def run(args: argparse.Namespace, tasks_dir: Path) -> int:
    if args.source is None or args.path is None:
        print(f"usage: icae tasks {args.action} icae-eval PATH, or icae tasks import "
              "cli-tool-bench PATH --oracle OWNER/REPO=SOURCE", flush=True)  # fmt: skip
        return 2
    if args.action == "import" and args.source == "cli-tool-bench":
        return _import_cli_tool_bench(args, tasks_dir)
    if args.source == "cli-tool-bench":
        print("error: only import reads cli-tool-bench", flush=True)
        return 2
    if args.action == "import":
        try:
            report = import_tree(
                Path(args.path), tasks_dir,
                tests=Path(args.tests_dir) if args.tests_dir else None,
                golden=Path(args.golden_dir) if args.golden_dir else None,
                base=args.base_image, only=args.task,
            )  # fmt: skip
        except ConfigError as err:
            print(f"error: {printable(str(err), limit=500)}")
            return 2
        print_import(report)
        has_error = report.failed or any(p.severity is Severity.ERROR for p in report.problems)
        return 1 if has_error else 0
    roots = sorted(p for p in tasks_dir.iterdir() if p.is_dir()) if tasks_dir.is_dir() else []
    if args.task:
        roots = [tasks_dir / name for name in args.task]
    exported = export_tasks(roots, Path(args.path))
    for folder, why in exported.skipped if args.task else []:
        print(f"skipped {folder}: {why}")
    print(f"exported {len(exported.exported)} tasks ({exported.files} files) to {exported.out}")
    return 1 if args.task and exported.skipped else 0


def fuzz_in_a_box(job: FuzzJob) -> FuzzRun:
    """The fuzzer's run in a box of the local engine (sandbox/docker/fuzz.py), made from an
    image with its requirements installed (built once, its steps said on stderr)."""
    import asyncio
    import sys

    from icae_tui.sandbox.docker.fuzz import run_once

    def progress(message: str) -> None:
        print(printable(message, limit=500), file=sys.stderr, flush=True)

    res = asyncio.run(run_once(job.files, job.argv, workdir=job.workdir, env=job.env,
                               timeout_s=job.timeout_s, cap_bytes=job.cap_bytes,
                               requires=list(job.requires), progress=progress))  # fmt: skip
    return FuzzRun(res.exit_code, res.stdout, res.stderr_tail or res.stderr[-4000:],
                   overflowed=res.overflowed or res.truncated, timed_out=res.timed_out)  # fmt: skip


async def _listing(sandbox: Sandbox, image: str, kind: str, run_id: str) -> bytes:
    """What the registry's client lists as installed in `image` (a box of it, no network)."""
    box = await sandbox.create_box(BoxSpec(image=image, run_id=run_id, role=Role.BUILD))
    try:
        res = await box.exec(list_argv(kind), timeout_s=120)
    finally:
        await box.remove()
    if res.exit_code != 0:
        raise ImageBuildError(f"{image}: `{' '.join(list_argv(kind))}` exited {res.exit_code}: "
                              + res.stderr.decode(errors="replace").strip()[-300:])  # fmt: skip
    return res.stdout


def oracle_in_boxes(engine: str) -> OracleRunner:
    """Each case of a task run once on its oracle, on the engine `engine` names: the task's
    images built (or reused) from its recipe, the oracle side's case pool as `icae tasks
    verify` uses it (evaluation/verify.py). A CLI-Tool-Bench import's expected outputs."""
    import asyncio

    async def runs(task: Task) -> OracleRecord:
        from icae_tui.evaluation.verify import oracle_runs
        from icae_tui.runs.run import new_run_id
        from icae_tui.sandbox.registry import open_sandbox

        sandbox = await open_sandbox(engine)
        try:
            images = await sandbox.task_images(task)
            run_id = new_run_id()
            outcomes = {ref.id: outcomes[0] async for ref, outcomes in oracle_runs(
                sandbox, task, images.oracle, run_id=run_id)}  # fmt: skip
            package = task.spec.oracle.package if task.spec.oracle else None
            if package is None:
                return OracleRecord(outcomes)
            kind = package.split(":", 1)[0]
            listed = [await _listing(sandbox, image, kind, run_id)
                      for image in (images.agent, images.oracle)]  # fmt: skip
            return OracleRecord(outcomes, locked_set(kind, *listed))
        finally:
            await sandbox.close()

    return lambda task: asyncio.run(runs(task))


def _import_cli_tool_bench(args: argparse.Namespace, tasks_dir: Path) -> int:
    from icae_tui.errors import InfraError

    oracles: dict[str, str] = {}
    for item in args.oracle:
        tool, sep, source = item.partition("=")
        if not sep or not source:
            print(f"error: --oracle {printable(item)}: not OWNER/REPO=SOURCE", flush=True)
            return 2
        oracles[tool] = source
    try:
        report = ctb.import_tree(
            Path(args.path), tasks_dir, runner=fuzz_in_a_box, oracles=oracles,
            only=(args.tool or []) + (args.task or []) or None,
            seed=ctb.SEED if args.seed is None else args.seed,
            outputs=oracle_in_boxes(args.engine),
        )  # fmt: skip
    except (ConfigError, InfraError) as err:  # no engine: no tool can be imported
        print(f"error: {printable(str(err), limit=500)}")
        return 2
    print_import(report, what="tools")
    has_error = report.failed or any(p.severity is Severity.ERROR for p in report.problems)
    return 1 if has_error else 0
