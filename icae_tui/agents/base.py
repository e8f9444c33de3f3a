"""The agent protocol (v2): an agent builds inside its container through an AgentContext.

The context is all an agent gets: the workspace, its limits, the question budget, its model
endpoint (the run's gateway; None for agents without a model), an event sink for its own
trace events, and four actions — say, run, write, ask. `step()` counts one step and stops
the agent (AgentStop) at its step or wall-clock limit; the model limits (calls, tokens,
cost) are the gateway's to enforce, and its refusals stop the agent the same way. Every
action becomes an event; the run records the reason the agent stopped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from icae_tui.domain.agent import AgentStop, CommandResult, Limits
from icae_tui.domain.events import Event

__all__ = [
    "Agent",
    "AgentContext",
    "AgentError",
    "AgentStop",
    "ChatEndpoint",
    "CommandResult",
    "Limits",
    "OnDelta",
]

OnDelta = Callable[[str], Awaitable[None]]  # a piece of the reply's text, as it streams in


class AgentError(RuntimeError):
    """The agent's configuration is broken (unknown kind, missing solution file, …)."""


class ChatEndpoint(Protocol):
    """OpenAI-compatible Chat Completions. With `on_delta` the reply is streamed (each text
    piece passed on as it comes) and returned assembled, in the non-streamed shape."""

    async def complete(
        self, body: dict[str, Any], on_delta: OnDelta | None = None
    ) -> dict[str, Any]: ...


class AgentContext(Protocol):
    """What an agent may do. Every call is traced as events by the orchestrator."""

    workspace: str
    limits: Limits
    budget: int  # questions the agent may ask in all
    model: ChatEndpoint | None
    steps: int  # counted by step()

    async def step(self) -> None:
        """Count one step; raise AgentStop when the step or time limit is reached."""
        ...

    async def trace(self, event: Event) -> None:
        """The event sink: an agent's own events (e.g. what it streamed) join the trace."""
        ...

    async def say(self, text: str, *, streamed: bool = False) -> None: ...

    async def run(self, command: str, timeout_s: float = 60.0) -> CommandResult: ...

    async def write(self, path: str, content: str, mode: int = 0o644) -> None: ...

    async def ask(self, question: str) -> str: ...


class Agent(Protocol):
    name: str
    limits: Limits

    async def build(self, prd: str, ctx: AgentContext) -> str:
        """Build the project; return the final (submission) message, or raise AgentStop."""
        ...
