"""`icae batch`: many runs from one spec, resumable.

    icae batch SPEC.toml                      a new batch from a spec (batch/spec.py)
    icae batch --task T --agent A [--level L] [--responder R] [--repeats N] …
                                              the common case as flags
    icae batch --resume ID                    go on with a batch that was killed or cancelled
    icae batch --list                         the stored batches
    icae batch --show ID [--report FILE]      a batch's report (Markdown for .md, else JSON)
    icae batch … --console                    the same in the console: its batch screen

Headless: one line per run as it ends (a Rich progress bar above them on a terminal), then
the report. With `--console` the batch runs in the console's batch screen (the operator can
answer, so human and assisted responders are allowed), and the report follows it. Exit 0 when every run has a result, 1 when some gave up on infrastructure or
the batch was cancelled, 2 on bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icae_tui.batch.plan import BatchItem, ItemState, expand
from icae_tui.batch.report import (
    batch_report,
    report_html,
    report_junit,
    report_lines,
    report_markdown,
)
from icae_tui.batch.spec import (
    BatchLimits,
    BatchSpec,
    BatchSpecError,
    EngineSlot,
    load_spec,
    machine_cores,
    match_tasks,
)
from icae_tui.batch.store import BatchRow, BatchStatus, BatchStore
from icae_tui.catalog.loader import default_tasks_dir, load_catalog, load_failure
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level, Task
from icae_tui.store.database import RunStore
from icae_tui.util.safe_text import printable

if TYPE_CHECKING:
    from icae_tui.batch.placement import Placement
    from icae_tui.batch.runner import BatchRunner


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def add_arguments(batch: argparse.ArgumentParser) -> None:
    batch.add_argument("spec", nargs="?", metavar="SPEC", help="a batch spec (TOML)")
    batch.add_argument("--task", action="append", help="a task id or glob (repeatable)")
    batch.add_argument("--agent", action="append", help="an agent (repeatable)")
    batch.add_argument("--level", action="append", choices=[lv.value for lv in Level],
                       help="a level (repeatable; default L1)")  # fmt: skip
    batch.add_argument("--responder", action="append", choices=[m.value for m in ResponderMode],
                       help="a responder (repeatable; default simulated)")  # fmt: skip
    batch.add_argument("--repeats", type=_count, default=None, help="runs of each pairing")
    batch.add_argument("--runs-at-once", type=_count, default=None,
                       help="runs at once (default: half the cores)")  # fmt: skip
    batch.add_argument("--cases-at-once", type=_count, default=None,
                       help="cases at once per run (default: the cores shared by the runs)")  # fmt: skip
    batch.add_argument("--max-attempts", type=_count, default=None,
                       help="attempts of a run failing for infrastructure (default 3)")  # fmt: skip
    batch.add_argument("--engine-pool", action="append", type=_slot, metavar="NAME[:RUNS]",
                       help="an engine of a pool (repeatable): a backend or engines-file "
                       "entry, with the runs it takes at once (default 1); a lost engine's "
                       "runs go to the others")  # fmt: skip
    batch.add_argument("--ray", metavar="ADDRESS",
                       help="run on a Ray cluster (pip install 'icae-tui[ray]'): each run on a "
                       "node declaring the resource icae_engine, against that node's engine")  # fmt: skip
    batch.add_argument("--resume", metavar="ID", help="go on with a stored batch")
    batch.add_argument("--list", action="store_true", help="the stored batches")
    batch.add_argument("--show", metavar="ID", help="a stored batch's report")
    batch.add_argument("--report", metavar="FILE",
                       help="write the report: .md Markdown, .xml JUnit, .html a page, else JSON")  # fmt: skip
    batch.add_argument("-v", "--verbose", action="store_true", help="every run's lines too")
    batch.add_argument("--console", action="store_true",
                       help="run it in the console's batch screen (human responders allowed)")  # fmt: skip


def _slot(text: str) -> EngineSlot:
    name, _, runs = text.partition(":")
    try:
        return EngineSlot(name=name, runs=int(runs) if runs else 1)
    except ValueError as err:  # a bad number, or pydantic's own (a ValueError too)
        raise argparse.ArgumentTypeError(f"{text!r}: NAME or NAME:RUNS (RUNS ≥ 1)") from err


class BatchCommandError(Exception):
    """One line on stderr, exit status 2."""


def run(args: argparse.Namespace) -> int:
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    batches = BatchStore(store)
    try:
        if args.list:
            return _list(batches)
        if args.show:
            return _show(args, batches, args.show)
        return _execute(args, batches)
    except (BatchCommandError, BatchSpecError) as err:
        print(f"error: {printable(str(err), limit=2000, keep_newlines=True)}", file=sys.stderr)
        return 2
    finally:
        store.close()


# --- a new batch, or a resumed one ------------------------------------------------------------


def spec_from_args(args: argparse.Namespace) -> BatchSpec:
    """The spec file with the flags on top, or the flags alone."""
    if args.spec:
        spec = load_spec(Path(args.spec))
    elif args.task and args.agent:
        spec = BatchSpec(tasks=args.task, agents=args.agent)
    else:
        raise BatchCommandError("give a spec file, or --task and --agent (see icae batch -h)")
    update: dict[str, Any] = {}
    if args.spec and args.task:
        update["tasks"] = args.task
    if args.spec and args.agent:
        update["agents"] = args.agent
    if args.level:
        update["levels"] = [Level(v) for v in args.level]
    if args.responder:
        update["responders"] = [ResponderMode(v) for v in args.responder]
    if args.repeats is not None:
        update["repeats"] = args.repeats
    if args.engine_pool:
        update["engines"] = args.engine_pool
    if args.ray:
        update["ray"] = args.ray
    limits = {k: v for k, v in (("runs_at_once", args.runs_at_once),
                                ("cases_at_once", args.cases_at_once),
                                ("max_attempts", args.max_attempts)) if v is not None}  # fmt: skip
    if limits:
        update["limits"] = BatchLimits.model_validate({**spec.limits.model_dump(), **limits})
    return BatchSpec.model_validate({**spec.model_dump(), **update}) if update else spec


def _tasks(spec: BatchSpec, args: argparse.Namespace, ids: list[str] | None) -> dict[str, Task]:
    """The spec's tasks, loaded; `ids`: those of a stored plan (else the spec's globs)."""
    folder = spec.tasks_dir or args.tasks
    catalog = load_catalog(Path(folder) if folder else None)
    wanted = ids if ids is not None else match_tasks(spec.tasks, catalog.tasks)
    out: dict[str, Task] = {}
    for task_id in wanted:
        task = catalog.tasks.get(task_id)
        if task is None:
            why = load_failure(catalog.tasks, task_id) if task_id in catalog.tasks else "gone"
            raise BatchCommandError(f"task {task_id!r}: {why} (see `icae tasks`)")
        out[task_id] = task
    return out


def _check(
    items: list[BatchItem], tasks: dict[str, Task], agent_files: tuple[Path, ...], *,
    console: bool = False, spec_engines: Sequence[EngineSlot] = (),
) -> None:  # fmt: skip
    """Before anything is stored: every agent exists for every task; headless, nobody at a
    terminal can answer several runs' questions at once (the console's operator can)."""
    from icae_tui.agents.registry import check_agent

    seen: set[tuple[str, str]] = set()
    for item in items:
        if (item.task_id, item.agent) in seen:
            continue
        seen.add((item.task_id, item.agent))
        if why := check_agent(item.agent, tasks[item.task_id], agent_files):
            raise BatchCommandError(f"{item.task_id}: {why}")
    from icae_tui.errors import ConfigError
    from icae_tui.sandbox.registry import resolve

    for slot in spec_engines:
        try:
            resolve(slot.name)
        except ConfigError as err:
            raise BatchCommandError(str(err)) from None
    operator = {str(m) for m in (ResponderMode.HUMAN, ResponderMode.ASSISTED)}
    if not console and any(item.responder in operator for item in items):
        raise BatchCommandError("a headless batch has no operator to answer: responders human "
                                "and assisted need the console")  # fmt: skip


def _execute(args: argparse.Namespace, batches: BatchStore) -> int:
    from icae_tui.batch.runner import BatchRunner  # the run machinery: only when running
    from icae_tui.batch.watch import BatchPrinter

    agent_files = tuple(Path(f) for f in args.agents or ())
    if args.resume:
        row = batches.batch(args.resume)
        if row is None:
            raise BatchCommandError(f"no stored batch {args.resume!r} (see icae batch --list)")
        if row.status is BatchStatus.RUNNING:
            raise BatchCommandError(_taken(row.batch_id, row.owner_pid))
        if row.status is BatchStatus.COMPLETED:
            print(f"batch {row.batch_id} is complete: nothing to redo")
            return _show(args, batches, row.batch_id)
        spec = row.spec
        if args.ray:  # the cluster's head may have moved
            spec = spec.model_copy(update={"ray": args.ray})
        items = batches.items(row.batch_id)
        tasks = _tasks(spec, args, sorted({it.task_id for it in items}))
        batch_id = row.batch_id
        if (owner := batches.claim(batch_id)) is not None:  # another resume got there first
            raise BatchCommandError(_taken(batch_id, owner))
    else:
        spec = spec_from_args(args)
        # stored with the batch, so --resume finds the same tasks on the same engine
        folder = Path(spec.tasks_dir or args.tasks or default_tasks_dir()).resolve()
        spec = spec.model_copy(update={"tasks_dir": str(folder),
                                       "engine": spec.engine or args.engine})  # fmt: skip
        tasks = _tasks(spec, args, None)
        items = expand(spec, list(tasks))
        _check(items, tasks, agent_files, console=args.console, spec_engines=spec.engines)
        batch_id = new_batch_id()
        batches.create(batch_id, spec, items)
    runner = BatchRunner(batch_id, spec, items, tasks, batches, cores=machine_cores(),
                         agent_files=agent_files, engine=spec.engine or args.engine)  # fmt: skip
    if spec.ray:
        _on_cluster(runner, spec.ray)
    if args.console:
        status = _in_console(runner, args)
    else:
        printer = BatchPrinter(runner, verbose=args.verbose)
        runner.subscribe(printer)
        try:
            with printer:
                status = asyncio.run(runner.execute())
        except KeyboardInterrupt:
            status = BatchStatus.CANCELLED
    code = _show(args, batches, batch_id)
    if status is BatchStatus.CANCELLED:
        print(f"batch cancelled: icae batch --resume {batch_id} goes on", file=sys.stderr)
        return 1
    if status is BatchStatus.STALLED:
        print(f"batch stalled: no engine of its pool answers; start one, then icae batch "
              f"--resume {batch_id}", file=sys.stderr)  # fmt: skip
        return 1
    gave_up = any(p.state is ItemState.GAVE_UP for p in runner.refresh().values())
    return 1 if gave_up else code


def _taken(batch_id: str, pid: int | None) -> str:
    """Why a batch cannot be resumed here: a live process runs it."""
    who = f"process {pid}" if pid is not None and pid > 0 else "another process"
    return f"batch {batch_id} is being run by {who}: one process resumes a batch at a time"


def _on_cluster(runner: BatchRunner, address: str) -> None:
    """The runs go to the nodes of the Ray cluster at `address` (joined now: before the loop)."""
    from icae_tui.cluster.ray_pool import ClusterError, connect, open_nodes

    try:
        connect(address)
    except ClusterError as err:
        raise BatchCommandError(str(err)) from None

    async def nodes() -> list[Placement]:
        limits = runner.spec.limits
        return list(await open_nodes(cases_at_once=limits.cases_at_once, say=runner.say))

    runner.find_placements = nodes


def _in_console(runner: BatchRunner, args: argparse.Namespace) -> BatchStatus:
    """The batch in the console's batch screen, until the operator quits it (a batch still
    running then is cancelled); what it came to."""
    from icae_tui.catalog.loader import Catalog
    from icae_tui.ui.app import IcaeApp  # Textual: only for the console
    from icae_tui.ui.screens.batch import BatchScreen

    def opened(app: IcaeApp) -> None:
        app.push_screen(BatchScreen(runner))

    IcaeApp(catalog=Catalog(tasks=dict(runner.tasks)), store=runner.batches.runs,
            agent_files=runner.agent_files, engine=runner.engine, on_start=opened).run()  # fmt: skip
    row = runner.batches.batch(runner.batch_id)
    if row is None or row.status is BatchStatus.RUNNING:  # quit before it started
        runner.batches.finish(runner.batch_id, BatchStatus.CANCELLED)
        return BatchStatus.CANCELLED
    return row.status


def new_batch_id() -> str:
    import secrets

    return "batch-" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


# --- list and show ------------------------------------------------------------------------------


def _list(batches: BatchStore) -> int:
    for row in batches.batches():
        items = len(batches.items(row.batch_id))
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.created_at))
        name = f"  {printable(row.spec.name, limit=40)}" if row.spec.name else ""
        print(f"{row.batch_id}  {when}  {row.status:<11} {items:>4} run(s){name}")
    return 0


def report_of(batches: BatchStore, row: BatchRow) -> dict[str, Any]:
    from icae_tui.batch.plan import progress_of

    attempts = batches.attempts(row.batch_id)
    limit = row.spec.limits.max_attempts
    progress = {it.key: progress_of(attempts.get(it.key, []), limit)
                for it in batches.items(row.batch_id)}  # fmt: skip
    return batch_report(batches, row, progress)


def _json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2) + "\n"


# --report's format by the file's suffix; anything else is JSON
REPORT_FORMATS = {".md": report_markdown, ".xml": report_junit, ".html": report_html}


def _show(args: argparse.Namespace, batches: BatchStore, batch_id: str) -> int:
    row = batches.batch(batch_id)
    if row is None:
        raise BatchCommandError(f"no stored batch {batch_id!r} (see icae batch --list)")
    report = report_of(batches, row)
    print("\n".join(report_lines(report)))
    if args.report:
        path = Path(args.report)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = REPORT_FORMATS.get(path.suffix, _json)(report)
        path.write_text(body, encoding="utf-8")
        print(f"report: {path}")
    return 0
