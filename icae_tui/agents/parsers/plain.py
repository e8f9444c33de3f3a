"""`plain`: the agent's stdout is its trace, line by line; it finished if it exited 0."""

from __future__ import annotations

from icae_tui.agents.parsers.base import AgentEnd, exited
from icae_tui.agents.parsers.shapes import clip
from icae_tui.domain.events import AgentOutput, Event
from icae_tui.domain.states import StopReason, Stream


def output_line(text: str, stream: Stream = Stream.STDOUT) -> AgentOutput:
    """One line of output as an event (its newline back: output events are chunks)."""
    return AgentOutput(stream=stream, text=clip(text) + "\n")


class PlainTrace:
    files: tuple[str, ...] = ()

    def line(self, text: str) -> list[Event]:
        return [output_line(text)]

    def file(self, name: str, content: bytes) -> list[Event]:
        return []

    def end(self, exit_code: int | None) -> AgentEnd:
        if exit_code == 0:
            return AgentEnd(True, "", None, exited("the agent", exit_code))
        return AgentEnd(False, "", StopReason.AGENT_ERROR, exited("the agent", exit_code))
