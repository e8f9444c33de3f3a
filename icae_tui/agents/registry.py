"""Agent specs as the operator writes them: `kind:name`, e.g. `scripted:good`; and the agents
configured in TOML (`icae_tui.agents.config`), listed for the console and `icae agents`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from icae_tui.agents.base import Agent, AgentError
from icae_tui.agents.command_agent import CommandAgent
from icae_tui.agents.config import (
    AgentConfig,
    AgentEntry,
    AgentKind,
    CommandAgentConfig,
    ModelAgentConfig,
    load_agent_config,
)
from icae_tui.agents.model_agent import ModelAgent
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.domain.task import Task

KINDS = ("scripted", "model", "command")


def available_agents(task: Task) -> list[str]:
    return [f"scripted:{name}" for name in task.solutions]


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
    if kind == AgentKind.SCRIPTED:
        if not name or _is_path(name) or name not in task.solutions:
            return _not_a_solution(spec, task, name)
        return None
    if kind in (AgentKind.MODEL, AgentKind.COMMAND):
        try:
            _configured_entry(spec, AgentKind(kind), name, agent_files)
        except AgentError as err:
            return str(err)
        return None
    return _unknown_kind(spec, kind)


def make_agent(
    spec: str,
    task: Task,
    *,
    pace_s: float | None = None,
    agent_files: Sequence[Path] = (),
) -> Agent:
    kind, _, name = spec.partition(":")
    if kind == AgentKind.SCRIPTED:
        if not name or _is_path(name):
            raise AgentError(_not_a_solution(spec, task, name))
        return ScriptedAgent.for_task(task, name, pace_s=pace_s)  # inside solutions/ only
    if kind in (AgentKind.MODEL, AgentKind.COMMAND):
        return _configured_agent(spec, AgentKind(kind), name, agent_files)
    raise AgentError(_unknown_kind(spec, kind))


def _is_path(name: str) -> bool:
    # A solution is a file stem: anything that could step out of solutions/ is refused
    # before any path is built from it.
    return "/" in name or "\\" in name or ".." in name


def _not_a_solution(spec: str, task: Task, name: str) -> str:
    if not name:
        return f"agent {spec!r}: name a solution, e.g. scripted:good"
    known = ", ".join(task.solutions) or "none"
    return f"agent {spec!r}: {name!r} is not a solution of task {task.id} (known: {known})"


def _unknown_kind(spec: str, kind: str) -> str:
    return f"agent {spec!r}: unknown kind {kind!r} (known: {', '.join(KINDS)})"


def _configured_entry(
    spec: str, kind: AgentKind, name: str, agent_files: Sequence[Path]
) -> AgentEntry:
    config = load_agent_config(agent_files)
    entry = config.agents.get(name)
    if entry is None or entry.kind is not kind:
        same = [n for n, e in config.agents.items() if e.kind is kind]
        known = ", ".join(same) or "none"
        broken = [str(err) for err in config.errors if f"agents.{name}" in (err.field or "")]
        why = f" ({'; '.join(broken)})" if broken else ""
        raise AgentError(
            f"agent {spec!r}: no {kind} agent {name!r} configured{why} (known: {known})"
        )
    return entry


def _configured_agent(spec: str, kind: AgentKind, name: str, agent_files: Sequence[Path]) -> Agent:
    entry = _configured_entry(spec, kind, name, agent_files)
    if isinstance(entry.settings, CommandAgentConfig):
        return CommandAgent(spec, entry.settings)
    assert isinstance(entry.settings, ModelAgentConfig)
    return ModelAgent(spec, entry.settings)
