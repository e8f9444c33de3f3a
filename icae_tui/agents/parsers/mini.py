"""`mini-swe-agent`: its trajectory file (`-o traj.json`), written again after every step.

Top-level `messages` (system, user, assistant, tool, exit) and `info`. Assistant messages name
their commands in `extra.actions`, tool messages carry `extra.raw_output` and
`extra.returncode`, the `exit` message `extra.exit_status` and `extra.submission`. See
SWE-agent/mini-swe-agent `agents/default.py`, `environments/local.py`,
`models/utils/actions_toolcall.py` (the agent itself: the README's Agents section).

Each snapshot holds all messages so far: only those past the previous snapshot's count become
events. A snapshot that does not parse (read while being written) yields nothing; the next
one has everything. When the agent submits, the submitting command's answer is padded as
"action was not executed" (returncode -1): it did run, exited 0, and its output is the
submission, so it is no failure. Stdout lines are not parsed: the file has it all.
"""

from __future__ import annotations

from typing import Any

from icae_tui.agents.parsers.base import AgentEnd, exited
from icae_tui.agents.parsers.plain import output_line
from icae_tui.agents.parsers.shapes import (
    clip,
    content_text,
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
    Event,
)
from icae_tui.domain.states import StopReason, Stream
from icae_tui.util.safe_text import decode

TRAJECTORY = "traj.json"
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger trajectory is not parsed (said once)

EXIT_REASONS = {
    "LimitsExceeded": StopReason.STEP_LIMIT,  # its step or cost limit
    "TimeExceeded": StopReason.TIME_LIMIT,
}
# exit statuses that are the model API's failure after litellm's retries (exception names)
INFRA_STATUSES = frozenset({
    "APIConnectionError", "APIError", "APITimeoutError", "BadGatewayError",
    "InternalServerError", "RateLimitError", "ServiceUnavailableError", "Timeout",
})  # fmt: skip


class MiniSweAgentTrajectory:
    files: tuple[str, ...] = (TRAJECTORY,)

    def __init__(self) -> None:
        self._seen = 0  # messages already turned into events
        self._pending: list[tuple[str, str]] = []  # (tool_call_id, command) awaiting output
        self._exit: dict[str, Any] = {}  # the exit message's extra (or the info's)
        self._submit_shown = False
        self._too_big = False

    def line(self, text: str) -> list[Event]:
        return []

    def file(self, name: str, content: bytes) -> list[Event]:
        if name != TRAJECTORY:
            return []
        if len(content) > MAX_FILE_BYTES:
            if self._too_big:
                return []
            self._too_big = True
            return [output_line(f"mini-swe-agent: {TRAJECTORY} is too large to read "
                                f"({len(content) // 2**20} MiB)", Stream.STDERR)]  # fmt: skip
        data = json_object(decode(content))
        messages = items(data.get("messages")) if data is not None else []
        if data is None or len(messages) <= self._seen:
            return []
        new, self._seen = messages[self._seen :], len(messages)
        info = obj(data.get("info"))
        if not self._exit and string(info.get("exit_status")):  # the exit message says more
            self._exit = {"exit_status": info["exit_status"], "submission": info.get("submission")}
        submitting = any(
            _exit_status(obj(m)) == "Submitted" for m in new
        )  # the padded answer in this snapshot belongs to the submitting command
        events: list[Event] = []
        for message in map(obj, new):
            events += self._message(message, submitting)
        return events

    def end(self, exit_code: int | None) -> AgentEnd:
        status = summary(string(self._exit.get("exit_status")))
        said = first_line(string(self._exit.get("exception_str")))  # an uncaught exception's
        detail = f"mini-swe-agent: {status}" + (f": {said}" if said else "")
        if status == "Submitted":
            return AgentEnd(True, clip(string(self._exit.get("submission"))), None, detail)
        if not status:
            return AgentEnd(False, "", StopReason.AGENT_ERROR,
                            f"{exited('mini-swe-agent', exit_code)} without an exit status")  # fmt: skip
        if status in EXIT_REASONS:
            return AgentEnd(False, "", EXIT_REASONS[status], detail)
        infra = status in INFRA_STATUSES
        return AgentEnd(
            False, "", StopReason.INFRA_ERROR if infra else StopReason.AGENT_ERROR, detail
        )

    # --- messages ---------------------------------------------------------------------

    def _message(self, message: dict[str, Any], submitting: bool) -> list[Event]:
        role = message.get("role")
        extra = obj(message.get("extra"))
        if role == "assistant":
            return self._assistant(message, extra)
        if role == "tool" or (role == "user" and "returncode" in extra):  # user: text-based
            return self._observation(message, extra, submitting)
        if role == "exit":
            self._exit = extra
        elif role == "user" and (why := string(extra.get("interrupt_type"))):
            return _interrupted(why, message, extra)
        return []  # the system prompt and the task

    def _assistant(self, message: dict[str, Any], extra: dict[str, Any]) -> list[Event]:
        events: list[Event] = []
        if (said := content_text(message.get("content"))).strip():
            events.append(AgentSaid(text=clip(said)))
        self._pending = []
        for action in map(obj, items(extra.get("actions"))):
            command = clip(string(action.get("command")))
            self._pending.append((string(action.get("tool_call_id")), command))
            events.append(AgentCommand(command=command))
        return events

    def _observation(
        self, message: dict[str, Any], extra: dict[str, Any], submitting: bool
    ) -> list[Event]:
        command = self._answered(string(message.get("tool_call_id")))
        if not extra:  # an older shape: the content is {"returncode": …, "output": …}
            extra = obj(json_object(content_text(message.get("content"))))
            extra["raw_output"] = extra.get("output")
        code = integer(extra.get("returncode"))
        problem = string(extra.get("exception_info"))
        if code == -1 and "not executed" in problem:
            if not self._submit_shown and (submitting or SUBMIT_MARKER in command):
                self._submit_shown = True  # it ran and submitted: its output is the submission
                return [AgentCommandDone(command=command, exit_code=0, duration_s=0.0)]
            return [output_line("mini-swe-agent: action was not executed", Stream.STDERR),
                    AgentCommandDone(command=command, exit_code=None, duration_s=0.0)]  # fmt: skip
        events: list[Event] = []
        if output := string(extra.get("raw_output")):
            events.append(AgentOutput(stream=Stream.STDOUT, text=clip(output)))
        if problem:
            events.append(output_line(problem, Stream.STDERR))
        timed_out = string(extra.get("exception_type")) == "TimeoutExpired"
        events.append(AgentCommandDone(command=command, exit_code=code, duration_s=0.0,
                                       timed_out=timed_out))  # fmt: skip
        return events

    def _answered(self, call_id: str) -> str:
        """The command an observation answers: by its call id, else the next in order."""
        for i, (pending_id, command) in enumerate(self._pending):
            if pending_id == call_id:
                del self._pending[i]
                return command
        return self._pending.pop(0)[1] if self._pending else ""


def _exit_status(message: dict[str, Any]) -> str:
    return (
        string(obj(message.get("extra")).get("exit_status"))
        if message.get("role") == "exit"
        else ""
    )


def _interrupted(why: str, message: dict[str, Any], extra: dict[str, Any]) -> list[Event]:
    """The harness's feedback, e.g. on a reply with no command (FormatError): that reply is
    kept only in `extra.response`, so what it said is shown from there."""
    events: list[Event] = []
    [choice, *_] = items(obj(extra.get("response")).get("choices")) or [None]
    if (said := content_text(obj(obj(choice).get("message")).get("content"))).strip():
        events.append(AgentSaid(text=clip(said)))
    text = f"mini-swe-agent: {why}: {content_text(message.get('content'))}"
    events.append(AgentOutput(stream=Stream.STDERR, text=clip(text) + "\n"))
    return events
