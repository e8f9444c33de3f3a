"""The agent protocol: an agent builds inside its container through an AgentContext."""

from __future__ import annotations

from typing import Protocol

from icae_tui.sandbox.containers import ExecResult


class AgentError(RuntimeError):
    """The agent's configuration is broken (unknown kind, missing solution file, …)."""


class AgentContext(Protocol):
    """What an agent may do. Every call is traced as events by the orchestrator."""

    workspace: str

    async def say(self, text: str) -> None: ...

    async def run(self, command: str, timeout_s: float = 60.0) -> ExecResult: ...

    async def write(self, path: str, content: str, mode: int = 0o644) -> None: ...

    async def ask(self, question: str) -> str: ...


class Agent(Protocol):
    name: str

    async def build(self, prd: str, ctx: AgentContext) -> str:
        """Build the project; return the final (submission) message."""
        ...
