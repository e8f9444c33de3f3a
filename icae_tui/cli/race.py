"""`icae race TASK AGENT_A AGENT_B`: two agents on one task at once, side by side in the
console's race screen, then who finished first with what score.

A race is a stored batch like any other — one task × the two agents, both runs at once —
so its images are built once before the runs, the engine is swept once, and `icae batch
--show ID` reports it later. An agent may race itself: then it is one agent with two
repeats. The console's operator answers either run's questions, so every responder is
allowed. Exit 0 when both runs have a result, 1 when the race was cancelled or a run gave up
on infrastructure, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from icae_tui.batch.plan import ItemState, expand
from icae_tui.batch.race_standing import Lane, Standing, lane_names
from icae_tui.batch.spec import BatchLimits, BatchSpec, machine_cores
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.catalog.loader import default_tasks_dir, load_catalog, load_failure
from icae_tui.display.view import RunView
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level, Task
from icae_tui.store.database import RunStore
from icae_tui.util.safe_text import printable

if TYPE_CHECKING:
    from icae_tui.batch.runner import BatchRunner

LANES = 2  # runs at once: one per agent


class RaceError(Exception):
    """One line on stderr, exit status 2."""


def add_arguments(race: argparse.ArgumentParser) -> None:
    race.add_argument("task", metavar="TASK", help="the task both agents build")
    race.add_argument("racers", nargs=LANES, metavar="AGENT", help="the two agents")
    race.add_argument("--level", default=Level.L1.value, choices=[lv.value for lv in Level])
    race.add_argument("--responder", default=ResponderMode.SIMULATED.value,
                      choices=[m.value for m in ResponderMode],
                      help="who answers both agents' questions (the console's operator "
                      "answers either run: human and assisted are allowed)")  # fmt: skip
    # also after the command (`icae race … --engine processes`); SUPPRESS keeps the global
    # `icae --engine E race …` when it is not given here
    race.add_argument("--engine", default=argparse.SUPPRESS, metavar="NAME",
                      help="the sandbox backend or engines-file entry (default: the global one)")  # fmt: skip


def race_spec(args: argparse.Namespace, folder: Path) -> BatchSpec:
    a, b = args.racers
    limits = BatchLimits(runs_at_once=LANES)
    return BatchSpec(
        name=f"race: {a} vs {b}", tasks=[args.task], agents=[a] if a == b else [a, b],
        repeats=LANES if a == b else 1, levels=[Level(args.level)],
        responders=[ResponderMode(args.responder)], tasks_dir=str(folder), engine=args.engine,
        limits=limits,
    )  # fmt: skip


def load_task(folder: Path, task_id: str) -> Task:
    catalog = load_catalog(folder)
    task = catalog.tasks.get(task_id)
    if task is None:
        why = load_failure(catalog.tasks, task_id) if task_id in catalog.tasks else "no such task"
        raise RaceError(f"task {task_id!r}: {why} (see `icae tasks`)")
    return task


def run(args: argparse.Namespace) -> int:
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    try:
        return _race(args, store)
    except RaceError as err:
        print(f"error: {printable(str(err), limit=2000)}", file=sys.stderr)
        return 2
    finally:
        store.close()


def _race(args: argparse.Namespace, store: RunStore) -> int:
    from icae_tui.agents.registry import check_agent
    from icae_tui.batch.report import report_lines
    from icae_tui.batch.runner import BatchRunner  # the run machinery: only when racing
    from icae_tui.cli.batch import new_batch_id, report_of

    folder = Path(args.tasks or default_tasks_dir()).resolve()
    task = load_task(folder, args.task)
    agent_files = tuple(Path(f) for f in args.agents or ())  # the global --agents files
    for agent in dict.fromkeys(args.racers):
        if why := check_agent(agent, task, agent_files):
            raise RaceError(why)
    spec = race_spec(args, folder)
    items = expand(spec, [task.id])
    batches = BatchStore(store)
    batch_id = new_batch_id()
    batches.create(batch_id, spec, items)
    runner = BatchRunner(batch_id, spec, items, {task.id: task}, batches, cores=machine_cores(),
                         agent_files=agent_files, engine=args.engine)  # fmt: skip
    status = in_console(runner)
    row = batches.batch(batch_id)
    if row is not None:
        print("\n".join(report_lines(report_of(batches, row))))
    print("\n".join(standing_of(runner, store).lines()))
    if status is not BatchStatus.COMPLETED:
        print(f"race {status}: icae batch --resume {batch_id} goes on", file=sys.stderr)
        return 1
    gave_up = any(p.state is ItemState.GAVE_UP for p in runner.refresh().values())
    return 1 if gave_up else 0


def standing_of(runner: BatchRunner, store: RunStore) -> Standing:
    """The race as stored: each lane's latest run."""
    progress = runner.refresh()
    names = lane_names([item.agent for item in runner.items])
    lanes = []
    for name, item in zip(names, runner.items, strict=True):
        run_id = progress[item.key].run_id
        lanes.append(Lane.of(name, RunView.from_events(store.events(run_id) if run_id else [])))
    return Standing(tuple(lanes))


def in_console(runner: BatchRunner) -> BatchStatus:
    """The race in the console's race screen until the operator quits it (a race still
    running then is cancelled); what its batch came to."""
    from icae_tui.catalog.loader import Catalog
    from icae_tui.ui.app import IcaeApp  # Textual: only for the console
    from icae_tui.ui.screens.race import RaceScreen

    def opened(app: IcaeApp) -> None:
        app.push_screen(RaceScreen(runner))

    IcaeApp(catalog=Catalog(tasks=dict(runner.tasks)), store=runner.batches.runs,
            agent_files=runner.agent_files, engine=runner.engine, on_start=opened).run()  # fmt: skip
    row = runner.batches.batch(runner.batch_id)
    if row is None or row.status is BatchStatus.RUNNING:  # quit before it started
        runner.batches.finish(runner.batch_id, BatchStatus.CANCELLED)
        return BatchStatus.CANCELLED
    return row.status
