"""`claude-stream-json`: Claude Code's `--output-format stream-json --verbose` stdout.

One JSON object per line: `assistant` lines carry one content block each (text, thinking,
tool_use), `user` lines the tool_result blocks answering them, the `result` line how the
session ended (the agent itself: the README's Agents section).

Bash is the shell: its tool_use is an AgentCommand at once and its tool_result the output
and end. Every other tool waits for its tool_result, so the event can say whether it worked
(a failed Edit wrote nothing: it is an AgentToolUsed with ok=False, not an AgentWrote). A
tool that starts a subagent is shown before the subagent's first line; tools still waiting
at the `result` line are shown then, with ok unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icae_tui.agents.parsers.base import AgentEnd, exited
from icae_tui.agents.parsers.plain import output_line
from icae_tui.agents.parsers.shapes import (
    MAX_PATH_CHARS,
    clip,
    content_text,
    first_line,
    flag,
    integer,
    items,
    json_object,
    obj,
    string,
    summary,
)
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentThought,
    AgentToolUsed,
    AgentWrote,
    Event,
)
from icae_tui.domain.states import StopReason, Stream

SHELL_TOOL = "Bash"
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
MAX_WAITING = 1024  # tool calls awaiting their result; a flood beyond is shown unanswered

# `result` subtypes other than success (found in the binary) → why the agent stopped
ERROR_SUBTYPES = {
    "error_max_turns": StopReason.STEP_LIMIT,
    "error_max_budget_usd": StopReason.MODEL_LIMIT,
    "error_during_execution": StopReason.AGENT_ERROR,
    "error_max_structured_output_retries": StopReason.AGENT_ERROR,
}


@dataclass(frozen=True)
class _Call:
    """A tool call awaiting its result: only what its event needs (inputs can be huge)."""

    tool: str
    detail: str
    command: str = ""  # Bash
    path: str = ""  # write tools
    size: int = 0  # Write: the content's bytes


class ClaudeStreamJson:
    files: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._waiting: dict[str, _Call] = {}
        self._end: AgentEnd | None = None
        self._retrying = False  # the last thing Claude said was an API retry

    def line(self, text: str) -> list[Event]:
        msg = json_object(text)
        if msg is None:
            return [output_line(text)] if text.strip() else []
        match msg.get("type"):
            case "assistant":
                self._retrying = False
                return self._assistant(msg)
            case "user":
                self._retrying = False
                return self._user(msg)
            case "result":
                self._end = _result(msg)
                return self._flush(list(self._waiting))
            case "system":
                self._retrying = msg.get("subtype") == "api_retry"
        return []  # system init/status lines, partial stream events, unknown types

    def file(self, name: str, content: bytes) -> list[Event]:
        return []

    def end(self, exit_code: int | None) -> AgentEnd:
        if self._end is not None:
            return self._end
        if self._retrying:
            return AgentEnd(False, "", StopReason.INFRA_ERROR,
                            f"{exited('claude', exit_code)} while retrying the model API")  # fmt: skip
        return AgentEnd(False, "", StopReason.AGENT_ERROR,
                        f"{exited('claude', exit_code)} without a result")  # fmt: skip

    # --- lines ------------------------------------------------------------------------

    def _assistant(self, msg: dict[str, Any]) -> list[Event]:
        parent = string(msg.get("parent_tool_use_id"))
        events = self._flush([parent]) if parent in self._waiting else []  # a subagent's
        for block in items(obj(msg.get("message")).get("content")):
            block = obj(block)
            match block.get("type"):
                case "text":
                    if (said := string(block.get("text"))).strip():
                        events.append(AgentSaid(text=clip(said)))
                case "thinking":
                    if (thought := string(block.get("thinking"))).strip():
                        events.append(AgentThought(text=clip(thought)))
                case "tool_use":
                    events += self._tool_use(block)
        return events

    def _tool_use(self, block: dict[str, Any]) -> list[Event]:
        call = _call(summary(string(block.get("name"))) or "?", obj(block.get("input")))
        events: list[Event] = []
        if call.tool == SHELL_TOOL:
            events.append(AgentCommand(command=call.command))
        call_id = string(block.get("id"))
        if not call_id:  # no result can ever match it
            return events if call.tool == SHELL_TOOL else [_done(call, None)]
        if len(self._waiting) >= MAX_WAITING:
            events += self._flush([next(iter(self._waiting))])
        self._waiting[call_id] = call
        return events

    def _user(self, msg: dict[str, Any]) -> list[Event]:
        results = [
            b for b in map(obj, items(obj(msg.get("message")).get("content")))
            if b.get("type") == "tool_result"
        ]  # fmt: skip
        # stdout and stderr apart, when the line answers one Bash call
        streams = obj(msg.get("tool_use_result")) if len(results) == 1 else {}
        events: list[Event] = []
        for block in results:
            call = self._waiting.pop(string(block.get("tool_use_id")), None)
            if call is None:  # unknown, or shown already (a subagent's tool)
                continue
            ok = not flag(block.get("is_error"))
            if call.tool != SHELL_TOOL:
                events.append(_done(call, ok))
                continue
            if isinstance(streams.get("stdout"), str):
                outputs = [(Stream.STDOUT, streams["stdout"]), (Stream.STDERR, string(streams.get("stderr")))]  # fmt: skip
            else:
                outputs = [(Stream.STDOUT, content_text(block.get("content")))]
            events += [AgentOutput(stream=s, text=clip(t)) for s, t in outputs if t]
            events.append(AgentCommandDone(command=call.command, exit_code=0 if ok else 1,
                                           duration_s=0.0))  # fmt: skip
        return events

    def _flush(self, call_ids: list[str]) -> list[Event]:
        """Show calls whose result has not come (yet): ok unknown."""
        events: list[Event] = []
        for call_id in call_ids:
            call = self._waiting.pop(call_id)
            if call.tool != SHELL_TOOL:  # a command was shown already, its end is unknown
                events.append(_done(call, None))
        return events


def _call(tool: str, args: dict[str, Any]) -> _Call:
    if tool == SHELL_TOOL:
        return _Call(tool, summary(args), command=clip(string(args.get("command"))))
    if tool in WRITE_TOOLS:
        path = string(args.get("file_path")) or string(args.get("notebook_path"))
        content = args.get("content")
        size = len(content.encode("utf-8", "replace")) if isinstance(content, str) else 0
        return _Call(tool, summary(args), path=clip(path, MAX_PATH_CHARS), size=size)
    return _Call(tool, summary(args))


def _done(call: _Call, ok: bool | None) -> Event:
    """A tool call's event: a write unless it failed, any other tool with how it went."""
    if call.tool in WRITE_TOOLS and ok is not False:
        return AgentWrote(path=call.path, size=call.size)
    return AgentToolUsed(tool=call.tool, detail=call.detail, ok=ok)


def _result(msg: dict[str, Any]) -> AgentEnd:
    subtype = string(msg.get("subtype"))
    text = string(msg.get("result"))
    turns = integer(msg.get("num_turns"))
    after = f" after {turns} turns" if turns is not None else ""
    if subtype == "success" and not flag(msg.get("is_error")):
        return AgentEnd(True, clip(text), None, f"claude: success{after}")
    if subtype == "success":  # is_error: the session broke off, e.g. the API failed
        api = text.lstrip().startswith("API Error")
        reason = StopReason.INFRA_ERROR if api else StopReason.AGENT_ERROR
        return AgentEnd(False, clip(text), reason, f"claude: error{after}: {first_line(text)}")
    errors = [e for e in map(string, items(msg.get("errors"))) if e]
    why = f": {first_line(errors[0])}" if errors else ""
    reason = ERROR_SUBTYPES.get(subtype, StopReason.AGENT_ERROR)
    name = first_line(subtype) or "result without a subtype"
    return AgentEnd(False, clip(text), reason, f"claude: {name}{after}{why}")
