"""Trace parsers: a CLI agent's native output (stdout lines, log files) as trace events.

One module per format; `parser_for` gives a fresh, stateful parser for one run.
"""

from __future__ import annotations

from collections.abc import Callable

from icae_tui.agents.config import TraceParser
from icae_tui.agents.parsers.aider import AiderChatHistory
from icae_tui.agents.parsers.base import AgentEnd, NativeTrace
from icae_tui.agents.parsers.claude import ClaudeStreamJson
from icae_tui.agents.parsers.codex import CodexJson
from icae_tui.agents.parsers.mini import MiniSweAgentTrajectory
from icae_tui.agents.parsers.plain import PlainTrace

PARSERS: dict[TraceParser, Callable[[], NativeTrace]] = {
    TraceParser.PLAIN: PlainTrace,
    TraceParser.CLAUDE_STREAM_JSON: ClaudeStreamJson,
    TraceParser.CODEX_JSON: CodexJson,
    TraceParser.MINI_SWE_AGENT: MiniSweAgentTrajectory,
    TraceParser.AIDER: AiderChatHistory,
}


def parser_for(kind: TraceParser) -> NativeTrace:
    """A new parser for one run of an agent whose output is in format `kind`."""
    return PARSERS[kind]()


__all__ = ["PARSERS", "AgentEnd", "NativeTrace", "parser_for"]
