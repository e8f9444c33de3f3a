"""Agent specs as the operator writes them: `kind:name`, e.g. `scripted:good`, looked up in a
registry of agent kinds (scripted, model and command built in; a new kind is one module
that registers itself, or an installed package's entry point in the group
`icae_tui.agent_kinds`: util/plugins.py); and the agents configured in TOML
(`icae_tui.agents.config`), listed for the console and `icae agents`. The kinds an agents
file may declare are the registered kinds with entry settings (`AgentKindEntry.settings`;
`configured_kind` makes such a kind)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from icae_tui.agents.base import Agent, AgentError
from icae_tui.agents.command_agent import CommandAgent
from icae_tui.agents.config import (
    AGENT_KIND_PLUGINS,
    AgentConfig,
    AgentEntry,
    AgentKind,
    CommandAgentConfig,
    EndpointConfig,
    ModelAgentConfig,
    declarable_kinds,
    declare_kind,
    load_agent_config,
)
from icae_tui.agents.model_agent import ModelAgent
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.domain.task import Task
from icae_tui.util.plugins import load_plugins


@dataclass(frozen=True)
class KindContext:
    """What a kind may use to make or check an agent: the task, the pace of scripted
    agents, the `--agents` files."""

    task: Task
    pace_s: float | None = None
    agent_files: tuple[Path, ...] = ()


@dataclass(frozen=True)
class AgentKindEntry:
    """A kind of agent: how to make one by name (`kind:name`), and how to say why a name
    names none without making anything (a mistyped agent stores no run)."""

    kind: str
    make: Callable[[str, str, KindContext], Agent]  # (spec, name, context)
    check: Callable[[str, str, KindContext], str | None]
    summary: str = ""
    # the settings of its `[agents.<name>]` entries (an EndpointConfig with a `kind` field
    # of this kind's name): with them, agents files may declare agents of this kind
    settings: type[EndpointConfig] | None = None


_KINDS: dict[str, AgentKindEntry] = {}


def register_agent_kind(entry: AgentKindEntry) -> None:
    """A new kind is one module that calls this (the built-in three are below)."""
    _KINDS[entry.kind] = entry
    if entry.settings is not None:
        declare_kind(entry.kind, entry.settings)


def unregister_agent_kind(kind: str) -> None:
    entry = _KINDS.pop(kind, None)
    if entry is not None and entry.settings is not None:
        declare_kind(kind, None)


def agent_kinds() -> dict[str, AgentKindEntry]:
    """Every kind registered (installed plug-ins' too)."""
    load_plugins(AGENT_KIND_PLUGINS)
    return dict(_KINDS)


class WithSolutions(Protocol):
    """A task or its catalog card: what naming its scripted agents needs."""

    @property
    def id(self) -> str: ...

    @property
    def solutions(self) -> Sequence[str]: ...


def available_agents(task: WithSolutions) -> list[str]:
    return [f"scripted:{name}" for name in task.solutions]


def scripted_agents(tasks: Iterable[WithSolutions]) -> dict[str, list[str]]:
    """Every scripted agent of `tasks` (`scripted:<solution>`, by name) and the ids of the
    tasks that have that solution: scripted agents are per task, never configured."""
    found: dict[str, list[str]] = {}
    for task in tasks:
        for spec in available_agents(task):
            found.setdefault(spec, []).append(task.id)
    return dict(sorted(found.items()))


def find_configured(config: AgentConfig, spec: str) -> AgentEntry | str:
    """The configured entry `spec` names (`kind:name`, or a bare entry name), or why none:
    its broken entry's errors, and the names of that kind that are known."""
    kind, sep, name = spec.partition(":")
    if not sep:
        kind, name = "", spec
    entry = config.agents.get(name)
    if entry is not None and (not sep or kind == entry.kind):
        return entry
    if kind and kind not in (declared := declarable_kinds()):
        return f"no {kind!r} agents are configured (the agents files declare {', '.join(declared)})"
    same = [n for n, e in config.agents.items() if not kind or e.kind == kind]
    broken = [str(err) for err in config.errors if f"agents.{name}" in (err.field or "")]
    why = f" ({'; '.join(broken)})" if broken else ""
    what = f"{kind} agent" if kind else "agent"
    return f"no {what} {name!r} configured{why} (known: {', '.join(same) or 'none'})"


def configured_agents(extra_files: Sequence[Path] = ()) -> AgentConfig:
    """The agents declared in the defaults, the user's file and `extra_files` (`--agents`),
    with the errors of broken entries; each entry's `state(os.environ)` says if it is ready.
    Scripted agents are not among them: they are per task, see `available_agents`."""
    return load_agent_config(extra_files)


def check_agent(spec: str, task: Task, agent_files: Sequence[Path] = ()) -> str | None:
    """Why `spec` names no agent of `task`, or None. Builds nothing: callers check before a
    run is created, so a mistyped agent stores no run. The `--agents` files themselves are
    checked first (`config.file_error`): here a file that does not parse only hides its
    agents."""
    kind, _, name = spec.partition(":")
    entry = agent_kinds().get(kind)
    if entry is None:
        return _unknown_kind(spec, kind)
    return entry.check(spec, name, KindContext(task, agent_files=tuple(agent_files)))


def make_agent(
    spec: str,
    task: Task,
    *,
    pace_s: float | None = None,
    agent_files: Sequence[Path] = (),
) -> Agent:
    kind, _, name = spec.partition(":")
    entry = agent_kinds().get(kind)
    if entry is None:
        raise AgentError(_unknown_kind(spec, kind))
    return entry.make(spec, name, KindContext(task, pace_s, tuple(agent_files)))


def _unknown_kind(spec: str, kind: str) -> str:
    return f"agent {spec!r}: unknown kind {kind!r} (known: {', '.join(_KINDS)})"


# --- the built-in kinds ----------------------------------------------------------------


def _is_path(name: str) -> bool:
    # A solution is a file stem: anything that could step out of solutions/ is refused
    # before any path is built from it.
    return "/" in name or "\\" in name or ".." in name


def _not_a_solution(spec: str, task: Task, name: str) -> str:
    if not name:
        return f"agent {spec!r}: name a solution, e.g. scripted:good"
    known = ", ".join(task.solutions) or "none"
    return f"agent {spec!r}: {name!r} is not a solution of task {task.id} (known: {known})"


def _check_scripted(spec: str, name: str, ctx: KindContext) -> str | None:
    if not name or _is_path(name) or name not in ctx.task.solutions:
        return _not_a_solution(spec, ctx.task, name)
    return None


def _make_scripted(spec: str, name: str, ctx: KindContext) -> Agent:
    if not name or _is_path(name):
        raise AgentError(_not_a_solution(spec, ctx.task, name))
    return ScriptedAgent.for_task(ctx.task, name, pace_s=ctx.pace_s)  # inside solutions/ only


def _configured_entry(spec: str, kind: str, name: str, agent_files: Sequence[Path]) -> AgentEntry:
    config = load_agent_config(agent_files)
    entry = config.agents.get(name)
    if entry is None or entry.kind != kind:
        same = [n for n, e in config.agents.items() if e.kind == kind]
        known = ", ".join(same) or "none"
        broken = [str(err) for err in config.errors if f"agents.{name}" in (err.field or "")]
        why = f" ({'; '.join(broken)})" if broken else ""
        raise AgentError(
            f"agent {spec!r}: no {kind} agent {name!r} configured{why} (known: {known})"
        )
    return entry


def configured_kind(
    kind: str,
    settings: type[EndpointConfig],
    build: Callable[[str, Any], Agent],
    summary: str = "",
) -> AgentKindEntry:
    """A kind whose agents are entries of the agents files (`kind:<entry name>`), read as
    `settings` and made by `build(spec, settings)`: registered, agents files may declare it,
    `icae agents` and the console list its entries."""

    def check(spec: str, name: str, ctx: KindContext) -> str | None:
        try:
            _configured_entry(spec, kind, name, ctx.agent_files)
        except AgentError as err:
            return str(err)
        return None

    def make(spec: str, name: str, ctx: KindContext) -> Agent:
        return build(spec, _configured_entry(spec, kind, name, ctx.agent_files).settings)

    return AgentKindEntry(kind, make, check, summary, settings)


register_agent_kind(AgentKindEntry(
    AgentKind.SCRIPTED.value, _make_scripted, _check_scripted,
    summary="a task's solution played step by step",
))  # fmt: skip
register_agent_kind(configured_kind(AgentKind.MODEL, ModelAgentConfig, ModelAgent))
register_agent_kind(configured_kind(AgentKind.COMMAND, CommandAgentConfig, CommandAgent))
