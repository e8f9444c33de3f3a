"""`icae runs list | show | export | compare | rescore`: the stored runs, from the store.

The figures come from icae_tui/results/summary.py, compare.py and rescore.py (no Textual,
no engine); this module parses the options and prints. `icae runs` alone lists, and the
older `icae runs --export RUN_ID [--trajectory]` still prints a run's JSON (deprecated:
`icae runs export RUN`). Every error is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icae_tui.domain.states import RunStatus
from icae_tui.results.formats.registry import (
    format_for_path,
    format_names,
    report_format,
    report_formats,
)
from icae_tui.results.repeats import Repeat, spread, summary, summary_lines
from icae_tui.store.database import RunRow, RunStore
from icae_tui.util.endpoint_urls import flag_problem, warn_endpoint
from icae_tui.util.safe_text import printable

if TYPE_CHECKING:
    from icae_tui.domain.events import Event
    from icae_tui.domain.task import ReviewWeights
    from icae_tui.results.rescore import Rescored
    from icae_tui.users.model_user import ModelConfig

ACTIONS = ("list", "show", "export", "compare", "rescore")


CASES_SHOWN = 50  # rescore's changed cases listed


class RunsError(Exception):
    """What `icae runs` says on stderr before exiting with status 2."""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def add_arguments(runs: argparse.ArgumentParser) -> None:
    runs.add_argument("--export", metavar="RUN_ID",
                      help="deprecated: `icae runs export RUN_ID` (prints its JSON report)")  # fmt: skip
    runs.add_argument("--trajectory", action="store_true",
                      help="with --export: the run's ATIF trajectory instead of its report")  # fmt: skip
    runs.add_argument("--move-damaged", action="store_true",
                      help="a store SQLite cannot read: rename it (and its WAL files) to "
                      "runs.db.damaged-<time>, so the next command starts a fresh one")  # fmt: skip
    sub = runs.add_subparsers(dest="runs_command", metavar="ACTION")
    ls = sub.add_parser("list", help="the stored runs, newest first (the default)")
    ls.add_argument("--task", help="only this task's runs")
    ls.add_argument("--agent", help="only this agent's runs (e.g. scripted:good)")
    ls.add_argument("--status", choices=[s.value for s in RunStatus], help="only runs ending so")
    ls.add_argument("--limit", type=_count, default=200, help="at most this many (default 200)")
    show = sub.add_parser("show", help="a run's summary: score per tier and pattern, verdicts")
    show.add_argument("run", metavar="RUN_ID")
    export = sub.add_parser("export", help="a run's report (JSON by default) or trajectory")
    export.add_argument("run", metavar="RUN_ID")
    formats = [fmt.format_names[0] for fmt in report_formats()]
    export.add_argument("--format", choices=format_names(), default=None,
                        help=f"{', '.join(formats[:-1])} or {formats[-1]} (default: FILE's "
                        "suffix, else json)")  # fmt: skip
    export.add_argument("-o", "--output", metavar="FILE", help="write it here, not to stdout")
    export.add_argument("--trajectory", dest="export_trajectory", action="store_true",
                        help="the run's ATIF trajectory (JSON) instead of its report")  # fmt: skip
    compare = sub.add_parser(
        "compare", help="two runs of a task, or two agents over tasks: flips and deltas"
    )
    compare.add_argument("runs", nargs="*", metavar="RUN_ID", help="run A, then run B")
    compare.add_argument("--agent", action="append", default=None,
                         help="twice: compare agent A's and B's latest completed run of each "
                         "task")  # fmt: skip
    compare.add_argument("--task", action="append", default=None,
                         help="with --agent: only this task (repeatable; default: every task "
                         "either agent completed)")  # fmt: skip
    compare.add_argument("--cases", type=_count, default=50,
                         help="case ids listed per kind of flip (default 50)")  # fmt: skip
    rescore = sub.add_parser("rescore", help="a run's figures at another FM threshold, "
                             "from what it stored (no container)")  # fmt: skip
    rescore.add_argument("run", metavar="RUN_ID")
    rescore.add_argument("--fm-threshold", type=_fraction, default=None, metavar="T",
                         help="τ in [0, 1] (default: the task's fm_threshold now)")  # fmt: skip
    rescore.add_argument("--save", action="store_true",
                         help="store the re-scored run as a new run (the original is kept)")  # fmt: skip
    rescore.add_argument("--judge-model", metavar="MODEL",
                         help="judge SM again from the stored outputs: answered from the run's "
                         "recorded judge calls and the judge cache first, then the endpoint")  # fmt: skip
    rescore.add_argument("--judge-base-url", metavar="URL",
                         help="OpenAI-compatible endpoint for --judge-model (none: recorded and "
                         "cached answers only; a pair with neither is not measured)")  # fmt: skip
    rescore.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                         help="environment variable holding the judge endpoint's key")  # fmt: skip
    rescore.add_argument("--judge-endpoint", metavar="NAME",
                         help="the judge's model and endpoint from a [models.NAME] entry of the "
                         "agents files, instead of --judge-model and --judge-base-url")  # fmt: skip
    rescore.add_argument("--review-weights", type=review_weights, default=None, metavar="E,R",
                         help="the stored review score weighted again: execution, review")  # fmt: skip


def run(
    args: argparse.Namespace, store: RunStore, tasks_dir: Path | None,
    agent_files: Sequence[Path] = (),
) -> int:  # fmt: skip
    action = args.runs_command
    if action is None and (args.export is not None or args.trajectory):
        action = "legacy-export"
    store.mark_interrupted()  # history must not show dead runs as running
    handlers: dict[str, Callable[[], int]] = {
        "list": lambda: _list(args, store),
        "legacy-export": lambda: _legacy_export(args, store),
        "show": lambda: _show(args, store),
        "export": lambda: _export(args, store),
        "compare": lambda: _compare(args, store),
        "rescore": lambda: _rescore(args, store, tasks_dir, agent_files),
    }
    try:
        return handlers[action or "list"]()
    except RunsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def move_damaged(path: Path | None) -> int:
    """`icae runs --move-damaged`: the store moved aside if it is damaged (a full check of
    its pages first), else left as it is; 2 when there is nothing to move."""
    from icae_tui.store.damage import damage, move_aside
    from icae_tui.store.database import default_home

    path = path or default_home() / "runs.db"
    if not path.is_file():
        print(f"error: no store at {printable(str(path))}: nothing to move", file=sys.stderr)
        return 2
    try:
        why = damage(path)
    except (sqlite3.Error, OSError) as err:  # locked by a live run, unreadable: not damage
        print(f"error: {printable(str(path))}: cannot check it: {err}", file=sys.stderr)
        return 2
    if why is None:
        print(f"error: {printable(str(path))} is sound (every page checked): nothing moved",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        moved = move_aside(path)
    except OSError as err:
        print(f"error: {printable(str(path))}: cannot move it: {err}", file=sys.stderr)
        return 2
    print(f"moved the damaged store ({printable(why, limit=200)}) to {printable(str(moved))}; "
          "the next command starts a fresh store (reports in runs/ are kept)")  # fmt: skip
    return 0


def _events(store: RunStore, run_id: str) -> list[Event]:
    events = store.events(run_id) if run_id.strip() else []
    if not events:
        raise RunsError(f"no stored run {printable(run_id)!r} (see `icae runs`)")
    return events


# --- list -------------------------------------------------------------------------------------


def _clip(text: str, width: int) -> str:
    text = printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def list_line(row: RunRow) -> str:
    """One run in 78 columns: id, task, agent, level, status, overall."""
    overall = "—" if row.overall is None else f"{100 * row.overall:.1f}%"
    return (f"{row.run_id:<22}  {_clip(row.task_id, 12):<12} {_clip(row.agent, 18):<18} "
            f"{row.level:<3} {row.status:<11} {overall:>6}")  # fmt: skip


LIST_HEADER = f"{'run':<22}  {'task':<12} {'agent':<18} {'lvl':<3} {'status':<11} {'overall':>6}"


def _list(args: argparse.Namespace, store: RunStore) -> int:
    """Newest first; the runs of one repeat group (`icae run --repeats N`) together, in
    repeat order, under a line with their overall's mean and spread, where the group's newest
    listed run would stand."""
    rows = store.runs(
        limit=getattr(args, "limit", 200),
        task=getattr(args, "task", None),
        agent=getattr(args, "agent", None),
        status=getattr(args, "status", None),
    )
    if rows and sys.stdout.isatty():  # a pipe gets the runs only (`icae runs | head -1`)
        print(LIST_HEADER)
    groups: dict[str, list[RunRow]] = {}
    for row in rows:
        if row.repeat_group is not None:
            groups.setdefault(row.repeat_group, []).append(row)
    for row in rows:
        group = row.repeat_group
        if group is None:
            print(list_line(row))
            continue
        if group not in groups:  # printed with the group's newest run
            continue
        members = sorted(groups.pop(group), key=lambda r: (r.repeat_index or 0, r.started_at))
        print(group_line(group, members, len(store.repeat_group(group))))
        for member in members:
            print(list_line(member) + f"  #{member.repeat_index}")
    return 0


def group_line(group: str, members: list[RunRow], size: int) -> str:
    """A repeat group's heading: its size, how many of its runs are listed, and the mean,
    sd and min–max of the listed completed runs' overall (results/repeats.py's formulas)."""
    listed = "" if len(members) == size else f", {len(members)} listed"
    values = [
        r.overall for r in members if r.status == RunStatus.COMPLETED and r.overall is not None
    ]
    if not values:
        figures = "no completed run measured"
    else:
        s = spread(values)
        sd = "" if s.sd is None else f" ± {100 * s.sd:.1f} pts"
        figures = (f"overall mean {100 * s.mean:.1f}%{sd}, {100 * s.low:.1f}–{100 * s.high:.1f}%"
                   f" (n={s.n})")  # fmt: skip
    return f"━━ repeats {printable(group)}: {size} run(s){listed} · {figures}"


# --- show and export --------------------------------------------------------------------------


def _show(args: argparse.Namespace, store: RunStore) -> int:
    from icae_tui.results.summary import show_lines, summarize

    summary = summarize(args.run, _events(store, args.run))
    print("\n".join(show_lines(summary)))
    if (repeat := store.repeat_of(args.run)) is not None:  # icae run --repeats N
        group, index = repeat
        runs = store.repeat_group(group)
        print(f"repeat {index} of {len(runs)} (group {printable(group)}): {' '.join(runs)}")
        print("\n".join(summary_lines(group_report(store, group))))
    return 0


def group_report(store: RunStore, group: str) -> dict[str, Any]:
    """A stored repeat group's report, as `icae run --repeats N` printed it: each figure's
    spread over the completed repeats (a failed or cancelled one gives no figures)."""
    from icae_tui.results.summary import summarize

    repeats = []
    for run_id in store.repeat_group(group):
        s = summarize(run_id, store.events(run_id))
        score = s.score if s.status == RunStatus.COMPLETED else None
        repeats.append(Repeat(run_id, s.status, score))
    return summary(group, repeats)


def _legacy_export(args: argparse.Namespace, store: RunStore) -> int:
    if args.export is None:
        raise RunsError("--trajectory goes with --export RUN_ID")
    if not args.export.strip():
        raise RunsError("--export needs a run id (see `icae runs`)")
    events = _events(store, args.export)
    if args.trajectory:
        from icae_tui.results.trajectory import build_trajectory

        print(json.dumps(build_trajectory(events), indent=2, ensure_ascii=False))
    else:
        _emit(render(events, "json"), None)
    return 0


def render(events: list[Event], fmt: str) -> str | bytes:
    """The run's report in `fmt` (a --format name: results/formats/registry.py)."""
    from icae_tui.results.report import render_report

    try:
        return render_report(events, fmt)
    except ValueError as err:  # a format no module renders
        raise RunsError(f"{fmt} reports are not available: {err}") from None


def format_for(path: Path) -> str:
    """The format a file's suffix names (.json, .md, .xml, .html; a --format name too:
    .junit), else json."""
    try:
        return report_format(path.suffix.lower().lstrip(".")).suffix
    except ValueError:
        return format_for_path(path).suffix


def _emit(body: str | bytes, path: Path | None) -> None:
    if path is None:
        if isinstance(body, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(body if body.endswith(b"\n") else body + b"\n")
        else:
            print(body)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body, encoding="utf-8")


def _export(args: argparse.Namespace, store: RunStore) -> int:
    events = _events(store, args.run)
    path = Path(args.output) if args.output else None
    if args.export_trajectory:
        if args.format not in (None, "json"):
            raise RunsError("--trajectory is JSON: it takes no --format")
        from icae_tui.results.trajectory import build_trajectory

        _emit(json.dumps(build_trajectory(events), indent=2, ensure_ascii=False), path)
    else:
        fmt = args.format or (format_for(path) if path else "json")
        _emit(render(events, fmt), path)
    if path is not None:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def write_run_report(events: list[Event], path: Path) -> Path:
    """`icae run --report FILE`: the report in the format FILE's suffix names."""
    _emit(render(events, format_for(path)), path)
    return path


# --- compare ----------------------------------------------------------------------------------


def _compare(args: argparse.Namespace, store: RunStore) -> int:
    from icae_tui.results.compare import (
        DifferentTasks,
        agents_total_lines,
        compare_lines,
        compare_runs,
        pair_agents,
    )
    from icae_tui.results.summary import summarize

    if args.agent is None:
        if args.task:
            raise RunsError("--task goes with --agent A --agent B")
        if len(args.runs) != 2:
            raise RunsError("compare takes two run ids, or --agent A --agent B")
        a, b = (summarize(r, _events(store, r)) for r in args.runs)
        try:
            comparison = compare_runs(a, b)
        except DifferentTasks as err:
            raise RunsError(str(err)) from None
        print("\n".join(compare_lines(comparison, cases_shown=args.cases)))
        return 0
    if args.runs:
        raise RunsError("compare takes two run ids or --agent A --agent B, not both")
    if len(args.agent) != 2:
        raise RunsError("--agent goes twice: --agent A --agent B")
    agent_a, agent_b = args.agent
    paired = pair_agents(store, agent_a, agent_b, args.task)
    for task, agent in paired.unpaired:
        print(f"{printable(task)}: no completed run of {printable(agent)}, left out",
              file=sys.stderr)  # fmt: skip
    if not paired.pairs:
        raise RunsError(
            f"no task has a completed run of both {printable(agent_a)!r} and "
            f"{printable(agent_b)!r} (see `icae runs list --agent …`)"
        )
    comparisons = []
    for ra, rb in paired.pairs:
        a, b = (summarize(r.run_id, store.events(r.run_id)) for r in (ra, rb))
        comparisons.append(compare_runs(a, b))
        print("\n".join(compare_lines(comparisons[-1], cases_shown=args.cases)))
        print()
    print("\n".join(agents_total_lines(comparisons)))
    return 0


# --- rescore ----------------------------------------------------------------------------------


def _task_tau(tasks_dir: Path | None, task_id: str) -> float | None:
    from icae_tui.catalog.loader import load_catalog

    task = load_catalog(tasks_dir).tasks.get(task_id)
    return None if task is None else task.spec.cases.fm_threshold


def _pct(value: float | None) -> str:
    return "not measured" if value is None else f"{100 * value:.1f}%"


def review_weights(text: str) -> ReviewWeights:
    """An argparse type: `0.7,0.3` as execution and review weights, or a clear error (`icae
    run --review-weights`, `icae runs rescore --review-weights`)."""
    from icae_tui.domain.task import ReviewWeights

    try:
        execution, review = (float(part) for part in text.split(","))
        return ReviewWeights(execution=execution, review=review)
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"{text!r}: two weights in [0, 1], execution then review, e.g. 0.8,0.2"
        ) from err


def _judge(
    args: argparse.Namespace, agent_files: Sequence[Path]
) -> tuple[str, ModelConfig | None] | None:
    """The judge to ask again: its model and its endpoint (None: recorded and cached answers
    only), from `--judge-endpoint`'s entry or the `--judge-model` flags; None when neither
    is given."""
    import os

    from icae_tui.agents.registry import configured_agents
    from icae_tui.cli.model_endpoints import EndpointRole, both_named, endpoint_config
    from icae_tui.users.model_user import ModelConfig

    if args.judge_endpoint is None:
        if not args.judge_model:
            return None
        if not args.judge_base_url:
            return args.judge_model, None
        if (problem := flag_problem("--judge-base-url", args.judge_base_url)) is not None:
            raise RunsError(printable(problem, limit=500))
        warn_endpoint("--judge-base-url", args.judge_base_url)
        key = os.environ.get(args.judge_api_key_env) or "not-needed"
        return args.judge_model, ModelConfig(args.judge_model, args.judge_base_url, api_key=key)
    if flags := [f for f, v in (("--judge-model", args.judge_model),
                                ("--judge-base-url", args.judge_base_url)) if v]:  # fmt: skip
        raise RunsError(both_named(EndpointRole.JUDGE, flags))
    found = endpoint_config(
        EndpointRole.JUDGE, args.judge_endpoint, configured_agents(agent_files), os.environ
    )
    if isinstance(found, str):
        raise RunsError(printable(found, limit=500))
    if found.base_url:
        warn_endpoint(f"--judge-endpoint {args.judge_endpoint}", found.base_url)
    # outside a run there is no gateway to read the key: the client is given the key itself
    key = os.environ.get(found.api_key_env or "") or "not-needed"
    return found.model, replace(found, api_key=key, api_key_env=None)


async def _judge_again(
    result: Rescored, judge_model: str, endpoint: ModelConfig | None, store: RunStore,
    run_id: str,
) -> Rescored:  # fmt: skip
    """SM judged again from the stored outputs: the run's recorded judge answers, the judge
    cache, then the endpoint (when one is given)."""
    from icae_tui.evaluation.semantic import (
        JUDGE_CACHE_FILE,
        JudgeCache,
        RecordedChat,
        SemanticJudge,
    )
    from icae_tui.gateway import load_calls
    from icae_tui.results.rescore import judged_again
    from icae_tui.store.database import MODEL_CALLS_FILE
    from icae_tui.users.model_user import DirectChat

    path = store.artifacts_dir / run_id / MODEL_CALLS_FILE
    try:
        calls = load_calls(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        calls = []  # no recording (or none readable): the cache and the endpoint
    chat = RecordedChat(calls, fallback=DirectChat(endpoint) if endpoint else None)
    cache = JudgeCache(store.path.parent / JUDGE_CACHE_FILE)
    try:
        judge = SemanticJudge(chat, judge_model, cache)
        again = await judged_again(result, judge)
    finally:
        cache.close()
    print(f"SM judge {printable(judge_model)}: {judge.asked} pair(s) not in the cache, "
          f"{chat.replayed} answered from the run's recording, "
          f"{len(judge.failures)} not measured")  # fmt: skip
    return again


def _rescore(
    args: argparse.Namespace, store: RunStore, tasks_dir: Path | None,
    agent_files: Sequence[Path],
) -> int:  # fmt: skip
    from icae_tui.results.compare import delta_lines, score_deltas
    from icae_tui.results.rescore import rescore, rescored_events, review_again
    from icae_tui.runs.run import new_run_id

    judge = _judge(args, agent_files)  # the options first: a wrong entry is one line
    events = _events(store, args.run)
    row = store.run(args.run)
    assert row is not None  # it has events
    task_tau = _task_tau(tasks_dir, row.task_id)
    tau = args.fm_threshold if args.fm_threshold is not None else task_tau
    if tau is None:
        raise RunsError(
            f"task {printable(row.task_id)!r} is not in the catalog: give --fm-threshold"
        )
    if args.save and row.status == RunStatus.RUNNING:
        raise RunsError(f"run {row.run_id} is still running: nothing final to re-score")
    if args.save and (args.judge_model or args.judge_endpoint or args.review_weights):
        raise RunsError("--save keeps a re-scored τ only: leave out --judge-model, "
                        "--judge-endpoint and --review-weights to save")  # fmt: skip
    result = rescore(events, tau)
    if judge is not None:
        result = asyncio.run(_judge_again(result, *judge, store, row.run_id))
    review_line = ""
    if args.review_weights is not None:
        before = result.new_score.review
        again = review_again(result, args.review_weights)
        if again is None or before is None or again.new_score.review is None:
            print("note: the run stored no review score: --review-weights changes nothing")
        else:
            result, w = again, args.review_weights
            review_line = (
                f"combined score (execution {w.execution:g} · review {w.review:g}): "
                f"{_pct(before.combined)} → {_pct(again.new_score.review.combined)}"
            )
    implied = result.implied_tau()
    stored = "the task's now: " + (f"{task_tau:g}" if task_tau is not None else "unknown")
    if implied is not None:
        stored += f"; the stored FM says above {implied[0]:g}, at most {implied[1]:g}"
    print(f"run {row.run_id}  task {printable(row.task_id)} · agent {printable(row.agent)}")
    print(f"FM threshold τ = {tau:g} ({stored})")
    changed = result.changed
    print(f"cases whose FM changes: {len(changed)}")
    for old, new in changed[:CASES_SHOWN]:
        print(f"  {printable(old.case_id)[:40]:<40} fm_score {old.fm_score:.4f}  "
              f"FM {old.metrics['fm']:g} → {new.metrics['fm']:g}")  # fmt: skip
    if len(changed) > CASES_SHOWN:
        print(f"  … and {len(changed) - CASES_SHOWN} more")
    if result.stored_differs:
        print("note: the stored score differs from what today's scorers make of the stored "
              "cases; both sides below are today's")  # fmt: skip
    print("figures (points):")
    deltas = score_deltas(result.old_score, result.new_score)
    print("\n".join(delta_lines(deltas, heads=("stored", f"τ={tau:g}"))))
    if review_line:
        print(review_line)
    if args.save:
        new_id = new_run_id()
        score = result.new_score
        store.add_finished_run(
            replace(row, run_id=new_id, overall=score.overall if score.measured else None),
            rescored_events(events, tau, new_id, row.run_id),
        )
        print(f"saved as run {new_id} (the original {row.run_id} is unchanged)")
    return 0
