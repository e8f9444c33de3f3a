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

from icae_tui.domain.agent import AgentNeeds, AgentStop, CommandResult, Limits
from icae_tui.domain.events import Event
from icae_tui.domain.states import Stream
from icae_tui.errors import ConfigError

__all__ = [
    "Agent",
    "AgentContext",
    "AgentError",
    "AgentNeeds",
    "AgentStop",
    "ChatEndpoint",
    "CommandResult",
    "Limits",
    "OnDelta",
    "OnOutput",
]

OnDelta = Callable[[str], Awaitable[None]]  # a piece of the reply's text, as it streams in
OnOutput = Callable[[Stream, bytes], Awaitable[None]]  # a chunk of a quiet command's output


class AgentError(ConfigError):
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
    env: dict[str, str]  # what a program in the box needs to reach the run's gateway
    steps: int  # counted by step()

    async def step(self) -> None:
        """Count one step; raise AgentStop when the step or time limit is reached."""
        ...

    async def trace(self, event: Event) -> None:
        """The event sink: an agent's own events (e.g. what it streamed) join the trace."""
        ...

    async def say(self, text: str, *, streamed: bool = False) -> None: ...

    async def run(
        self,
        command: str,
        timeout_s: float = 60.0,
        *,
        env: dict[str, str] | None = None,
        on_output: OnOutput | None = None,
        flood_bytes: int | None = None,
    ) -> CommandResult:
        """Run a command in the workspace. With `on_output` it is quiet: no command events,
        its output goes to `on_output` (a CLI agent's native log, which its parser turns
        into events). Past `flood_bytes` of output it is stopped (`CommandResult.flooded`)."""
        ...

    async def read(self, path: str, limit: int) -> bytes | None:
        """A file of the container (its first `limit` bytes), None when there is none."""
        ...

    async def keep(self, name: str, data: bytes, *, append: bool = False) -> None:
        """Keep a raw log beside the run's records (e.g. a CLI agent's native output)."""
        ...

    def remaining_s(self) -> float | None:
        """Seconds left before the time limit (None: no limit)."""
        ...

    async def write(
        self, path: str, content: str, mode: int = 0o644, *, quiet: bool = False
    ) -> None:
        """Write a file; `quiet` for the run's own files (a prompt, a config): no event."""
        ...

    async def ask(self, question: str) -> str: ...


class Agent(Protocol):
    name: str
    limits: Limits
    needs: AgentNeeds  # what the run must give it: a gateway, an image, how to pause it

    async def build(self, prd: str, ctx: AgentContext) -> str:
        """Build the project; return the final (submission) message, or raise AgentStop."""
        ...
