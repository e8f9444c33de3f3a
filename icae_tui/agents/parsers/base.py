"""What every trace parser offers: the `NativeTrace` protocol and the `AgentEnd` it reports.

A third-party CLI agent runs inside the container; the orchestrator feeds its parser every
stdout line and, from time to time, the whole current content of each log file the parser
names. The parser turns that native output into trace events (model usage is not among
them: the gateway records every model call itself) and, once the agent exited, says how it
ended. Input is hostile: parsers never raise on it and bound every event's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from icae_tui.domain.events import Event
from icae_tui.domain.states import StopReason


@dataclass(frozen=True)
class AgentEnd:
    """How the agent ended, by its own account (the orchestrator knows about its own
    limits, e.g. a wall clock that killed the agent, and may say otherwise)."""

    submitted: bool  # the agent said it finished
    final_message: str  # its final message, result or submission ("" if none)
    reason: StopReason | None  # when not submitted: why
    detail: str = ""  # a human sentence: what happened


class NativeTrace(Protocol):
    """One agent run's parser: stateful, one instance per run (see `parser_for`)."""

    files: tuple[str, ...]  # log files (relative to the agent's log dir) it reads

    def line(self, text: str) -> list[Event]:
        """One line of the agent's stdout (decoded, without its newline)."""
        ...

    def file(self, name: str, content: bytes) -> list[Event]:
        """The current whole content of one of `files`: only what is new since the previous
        call becomes events (the agent rewrites or appends to them while it runs)."""
        ...

    def end(self, exit_code: int | None) -> AgentEnd:
        """After the agent exited (and a last `file` call); None: it had no exit code."""
        ...


def exited(agent: str, exit_code: int | None) -> str:
    """'claude exited with code 2', or that it was stopped without one."""
    if exit_code is None:
        return f"{agent} was stopped before it exited"
    return f"{agent} exited with code {exit_code}"
