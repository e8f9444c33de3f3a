"""Agent specs as the operator writes them: `kind:name`, e.g. `scripted:good`."""

from __future__ import annotations

from icae_tui.agents.base import Agent, AgentError
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.domain.task import Task

KINDS = ("scripted",)


def available_agents(task: Task) -> list[str]:
    return [f"scripted:{name}" for name in task.solutions]


def make_agent(spec: str, task: Task, *, pace_s: float | None = None) -> Agent:
    kind, _, name = spec.partition(":")
    if kind == "scripted":
        if not name:
            raise AgentError(f"agent {spec!r}: name a solution, e.g. scripted:good")
        return ScriptedAgent.for_task(task, name, pace_s=pace_s)
    raise AgentError(f"agent {spec!r}: unknown kind {kind!r} (known: {', '.join(KINDS)})")
