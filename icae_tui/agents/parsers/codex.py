"""`codex-json`: Codex CLI's `exec --json` stdout (JSONL).

Top-level events `thread.started`, `turn.started`, `item.started|updated|completed`,
`turn.completed`, `turn.failed` and `error`; items carry a `type` (agent_message, reasoning,
command_execution, file_change, mcp_tool_call, …). See openai/codex
`codex-rs/exec/src/exec_events.rs` (the agent itself: the README's Agents section).

A command shows when it starts (item.started), its output and exit when it completes; every
other item once completed (a to-do list completes with the turn). `error` events also carry
retry notices ("Reconnecting... 2/5"): shown, never fatal. Whether a failure is the
endpoint's or the agent's is read from its message (connection, retry, 429/5xx → infra).
"""

from __future__ import annotations

import re
from typing import Any

from icae_tui.agents.parsers.base import AgentEnd, exited
from icae_tui.agents.parsers.plain import output_line
from icae_tui.agents.parsers.shapes import (
    MAX_PATH_CHARS,
    clip,
    first_line,
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

_RETRY_NOTICE = re.compile(r"\s*(Reconnecting|Retrying)\b", re.IGNORECASE)
_INFRA = re.compile(
    r"reconnect|retr(y|ies)|disconnected|connection|timed? ?out|unavailable|overloaded"
    r"|rate.?limit|\b(401|403|429|5\d\d)\b",
    re.IGNORECASE,
)
_STATUS_OK = {"completed": True, "failed": False}  # in progress, declined…: not said


class CodexJson:
    files: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._started: set[str] = set()  # command items shown at item.started
        self._last_message = ""
        self._completed = False  # the turn completed (and nothing failed after)
        self._failure = ""  # the error that ended the turn
        self._retried = False  # retry notices since the last item: a failure now is infra

    def line(self, text: str) -> list[Event]:
        msg = json_object(text)
        if msg is None:
            return [output_line(text)] if text.strip() else []
        item = obj(msg.get("item"))
        if string(msg.get("type")).startswith("item."):
            self._retried = False  # the endpoint answered again: earlier retries worked
        match msg.get("type"):
            case "item.started" if item.get("type") == "command_execution":
                self._started.add(string(item.get("id")))
                return [AgentCommand(command=clip(string(item.get("command"))))]
            case "item.completed":
                return self._item(item)
            case "turn.completed":
                self._completed, self._failure = True, ""
            case "turn.failed":
                return self._failed(string(obj(msg.get("error")).get("message")), "turn failed: ")
            case "error":
                message = string(msg.get("message"))
                if _RETRY_NOTICE.match(message):
                    self._retried = True
                    return [output_line(f"codex: {message}", Stream.STDERR)]
                return self._failed(message, "")
        return []

    def file(self, name: str, content: bytes) -> list[Event]:
        return []

    def end(self, exit_code: int | None) -> AgentEnd:
        if self._completed and exit_code == 0:
            return AgentEnd(True, self._last_message, None, "codex: turn completed")
        if self._failure:
            infra = self._retried or _INFRA.search(self._failure[:4096]) is not None
            reason = StopReason.INFRA_ERROR if infra else StopReason.AGENT_ERROR
            return AgentEnd(False, self._last_message, reason,
                            f"codex: {first_line(self._failure)} ({exited('codex', exit_code)})")  # fmt: skip
        done = "completed its turn but" if self._completed else "did not complete its turn:"
        return AgentEnd(False, self._last_message, StopReason.AGENT_ERROR,
                        f"codex {done} {exited('it', exit_code)}")  # fmt: skip

    def _failed(self, message: str, prefix: str) -> list[Event]:
        self._completed, self._failure = False, message or "unknown error"
        return [output_line(f"codex: {prefix}{message}", Stream.STDERR)]

    def _item(self, item: dict[str, Any]) -> list[Event]:
        kind = string(item.get("type"))
        match kind:
            case "agent_message":
                text = string(item.get("text"))
                self._last_message = clip(text)
                return [AgentSaid(text=self._last_message)] if text.strip() else []
            case "reasoning":
                text = string(item.get("text"))
                return [AgentThought(text=clip(text))] if text.strip() else []
            case "command_execution":
                return self._command(item)
            case "file_change":
                return _file_change(item)
            case "error":  # non-fatal, e.g. unknown model metadata
                return [output_line(f"codex: {string(item.get('message'))}", Stream.STDERR)]
        return [_tool(kind, item)]

    def _command(self, item: dict[str, Any]) -> list[Event]:
        command = clip(string(item.get("command")))
        events: list[Event] = []
        item_id = string(item.get("id"))
        if item_id in self._started:
            self._started.discard(item_id)
        else:  # its start was not seen
            events.append(AgentCommand(command=command))
        if output := string(item.get("aggregated_output")):
            events.append(AgentOutput(stream=Stream.STDOUT, text=clip(output)))
        if string(item.get("status")) == "declined":
            events.append(output_line("codex: command declined", Stream.STDERR))
        events.append(AgentCommandDone(command=command, exit_code=integer(item.get("exit_code")),
                                       duration_s=0.0))  # fmt: skip
        return events


def _file_change(item: dict[str, Any]) -> list[Event]:
    ok = _STATUS_OK.get(string(item.get("status")))
    events: list[Event] = []
    for change in map(obj, items(item.get("changes"))):
        path = clip(string(change.get("path")), MAX_PATH_CHARS)
        kind = summary(string(change.get("kind"))) or "update"
        if ok is not False and kind in ("add", "update"):
            events.append(AgentWrote(path=path, size=0))
        else:  # a deletion, or a patch that failed
            events.append(
                AgentToolUsed(tool="file_change", detail=summary(f"{kind} {path}"), ok=ok)
            )
    return events


def _tool(kind: str, item: dict[str, Any]) -> AgentToolUsed:
    """Any other item: an MCP or collab call, a web search, a to-do list, a plan…"""
    ok = _STATUS_OK.get(string(item.get("status")))
    match kind:
        case "mcp_tool_call":
            name = f"mcp:{string(item.get('server'))}/{string(item.get('tool'))}"
            return AgentToolUsed(tool=summary(name), detail=summary(item.get("arguments")), ok=ok)
        case "collab_tool_call":
            name = string(item.get("tool")) or kind
            return AgentToolUsed(
                tool=summary(name), detail=summary(string(item.get("prompt"))), ok=ok
            )
        case "web_search":
            return AgentToolUsed(tool=kind, detail=summary(string(item.get("query"))))
        case "todo_list":
            todos = [obj(t) for t in items(item.get("items"))]
            done = sum(1 for t in todos if t.get("completed") is True)
            first = string(todos[0].get("text")) if todos else ""
            return AgentToolUsed(tool=kind, detail=summary(f"{done}/{len(todos)} done: {first}"))
        case "plan":
            return AgentToolUsed(tool=kind, detail=summary(string(item.get("text"))))
    rest = {k: v for k, v in item.items() if k not in ("id", "type")}
    return AgentToolUsed(tool=summary(kind) or "?", detail=summary(rest), ok=ok)
