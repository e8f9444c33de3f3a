"""A run's trace as one trajectory in ATIF (the Agent Trajectory Interchange Format, v1.4).

Built from the stored events, so a live run and a replayed one give the same file, for any
agent. The mapping:

- the PRD the agent was given is the first `user` step;
- what the agent says, each command (a `shell` tool call whose observation is its output and
  exit), each file it writes (`write_file`), each question it asks (`ask_user`), each other
  tool of its own (a tool call of that tool's name, its input summary as `detail`), its
  reasoning (an empty message with the text in `reasoning_content`) and its final message
  are `agent` steps; output outside any command (a CLI agent's own stdout) is an agent step
  too, consecutive chunks of one stream in one step;
- each answer to a question is a `user` step (who answered and from which records in
  `extra`): clarification turns are the user's side of the conversation;
- each model call's figures (model, tokens in/out, cost) go on the next agent step as ATIF
  `model_name` and `metrics`: the gateway records a call before the agent sees its reply, so
  that step is what the reply made the agent do. A call followed by no agent action (a reply
  the agent could not use, or a call made from inside the container) is an agent step of its
  own with an empty message; totals go in `final_metrics`;
- progress, refused questions past the budget, dropped events and the build are `system`
  steps (the build's: its reason as the message; whether it passed, its exit code and the
  tails of its stdout and stderr, as the run kept them, in `extra`); the score and the run's
  end go in `final_metrics.extra`.

Command output is kept up to OUTPUT_CHARS per command (the store already bounds it); the raw
events stay in the store and `report.json`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentStopped,
    AgentSubmitted,
    AgentThought,
    AgentToolUsed,
    AgentWrote,
    BuildChecked,
    Event,
    EventsDropped,
    ModelCallMade,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.states import ModelRole

SCHEMA_VERSION = "ATIF-v1.4"
OUTPUT_CHARS = 64 * 1024  # of one command's output in its observation
_CUT = "\n[… output cut in the trajectory …]"


def _tool_version() -> str:
    try:
        return version("icae-tui")
    except PackageNotFoundError:
        return "unknown"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


class _Builder:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.open_command: dict[str, Any] | None = None  # a shell step awaiting its output
        self.output: list[str] = []
        self.stray: dict[str, Any] | None = None  # the step collecting output outside commands
        self.model_call: ModelCallMade | None = None  # its figures go on the next agent step
        self.prompt_tokens = 0  # the totals of every model call
        self.completion_tokens = 0
        self.cost: float | None = None  # None: no call had a price

    def step(self, ev: Event, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "timestamp": _when(ev.ts), "source": source,
                "message": message, **{k: v for k, v in fields.items() if v is not None}}  # fmt: skip
        if source == "agent" and self.model_call is not None:
            call, self.model_call = self.model_call, None
            step["model_name"] = call.model
            step["metrics"] = _metrics(call)
        self.steps.append(step)
        return step

    def called(self, ev: ModelCallMade) -> None:
        if self.model_call is not None:  # the previous call led to no action of its own
            self.unused_call(self.model_call)
        self.model_call = ev
        self.prompt_tokens += ev.tokens_in
        self.completion_tokens += ev.tokens_out
        if ev.cost is not None:
            self.cost = (self.cost or 0.0) + ev.cost

    def unused_call(self, call: ModelCallMade) -> None:
        self.model_call = None
        extra = {"model_call": call.index, "call_kind": call.call_kind, "status": call.status,
                 "error": call.error, "stop_reason": call.stop_reason}  # fmt: skip
        self.step(call, "agent", "", model_name=call.model, metrics=_metrics(call),
                  extra={k: v for k, v in extra.items() if v is not None})  # fmt: skip

    def call(self, ev: Event, name: str, arguments: dict[str, Any], message: str = "") -> str:
        call_id = f"call_{ev.seq}"
        calls = [{"tool_call_id": call_id, "function_name": name, "arguments": arguments}]
        self.step(ev, "agent", message, tool_calls=calls)
        return call_id

    def stray_output(self, ev: AgentOutput) -> None:
        """Output with no command open: a CLI agent's own stdout, one step per run of one
        stream (cut at OUTPUT_CHARS like a command's)."""
        step = self.stray
        if step is None or step["extra"]["stream"] != ev.stream.value:
            step = self.step(ev, "agent", "", extra={"stream": ev.stream.value})
            self.stray = step
        room = OUTPUT_CHARS - len(step["message"])
        if room > 0:
            step["message"] += ev.text[:room] + (_CUT if len(ev.text) > room else "")

    def close_command(self, done: AgentCommandDone | None) -> None:
        if self.open_command is None:
            return
        text = "".join(self.output)
        if len(text) > OUTPUT_CHARS:
            text = text[:OUTPUT_CHARS] + _CUT
        call_id = self.open_command["tool_calls"][0]["tool_call_id"]
        self.open_command["observation"] = {
            "results": [{"source_call_id": call_id, "content": text}]
        }
        if done is not None:
            self.open_command["extra"] = {
                "exit_code": done.exit_code,
                "duration_s": done.duration_s,
                "timed_out": done.timed_out,
                "pids_capped": done.pids_capped,
                "left_running": done.left_running,
            }
        self.open_command, self.output = None, []


def _cut(text: str) -> str:
    return text[:OUTPUT_CHARS] + _CUT if len(text) > OUTPUT_CHARS else text


def _metrics(call: ModelCallMade) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt_tokens": call.tokens_in, "completion_tokens": call.tokens_out}
    if call.cost is not None:
        out["cost_usd"] = call.cost
    out["extra"] = {"latency_s": call.latency_s, "attempts": call.attempts,
                    "infra_failures": call.infra_failures}  # fmt: skip
    return out


def build_trajectory(events: list[Event]) -> dict[str, Any]:
    b = _Builder()
    started: RunStarted | None = None
    finished: RunFinished | None = None
    score: dict[str, Any] | None = None
    for ev in events:
        if not isinstance(ev, AgentOutput | AgentCommandDone):
            b.close_command(None)  # a command whose end was never stored
        if not isinstance(ev, AgentOutput):
            b.stray = None
        match ev:
            case RunStarted():
                started = ev
                b.step(ev, "user", ev.prd, extra={"level": ev.level, "budget": ev.budget})
            case ModelCallMade() if ev.role is ModelRole.AGENT:  # the agent's trajectory
                b.called(ev)
            case AgentSaid():
                b.step(ev, "agent", ev.text)
            case AgentCommand():
                b.call(ev, "shell", {"command": ev.command})
                b.open_command = b.steps[-1]
            case AgentOutput() if b.open_command is None:
                b.stray_output(ev)
            case AgentOutput():
                b.output.append(ev.text)
            case AgentCommandDone():
                b.close_command(ev)
            case AgentWrote():
                b.call(ev, "write_file", {"path": ev.path, "size": ev.size})
            case AgentThought():
                b.step(ev, "agent", "", reasoning_content=ev.text)
            case AgentToolUsed():
                b.call(ev, ev.tool, {"detail": ev.detail})
                if ev.ok is not None:
                    b.steps[-1]["extra"] = {"ok": ev.ok}
            case QuestionAsked():
                b.call(ev, "ask_user", {"question": ev.text}, message=ev.text)
                b.steps[-1]["extra"] = {"question_id": ev.question_id, "via": ev.via}
            case QuestionAnswered():
                b.step(ev, "user", ev.text, extra={
                    "question_id": ev.question_id, "responder": ev.responder.value,
                    "records": ev.record_ids, "fallback": ev.fallback,
                    "over_budget": ev.over_budget, "edited": ev.edited,
                })  # fmt: skip
            case QuestionsRefused():
                b.step(ev, "system", f"{ev.count} more question(s) past the budget, refused",
                       extra={"first_id": ev.first_id, "last_id": ev.last_id})  # fmt: skip
            case EventsDropped():
                b.step(ev, "system", "store bound reached: some trace events were not kept",
                       extra=ev.model_dump(exclude={"run_id", "seq", "ts", "kind"}))  # fmt: skip
            case AgentSubmitted():
                b.step(ev, "agent", ev.message, extra={"submitted": True})
            case BuildChecked():
                b.step(ev, "system", ev.reason, extra={
                    "build_ok": ev.ok, "exit_code": ev.exit_code,
                    "stdout": _cut(ev.stdout), "stderr": _cut(ev.stderr),
                })  # fmt: skip
            case ScoreUpdated():
                score = ev.score.model_dump(mode="json")
            case AgentStopped() if b.model_call is not None:
                b.unused_call(b.model_call)
            case RunFinished():
                finished = ev
    b.close_command(None)
    if b.model_call is not None:
        b.unused_call(b.model_call)
    agent = {"name": started.agent if started else "unknown", "version": _tool_version()}
    extra: dict[str, Any] = {"score": score}
    if finished is not None:
        extra |= {"status": finished.status.value, "error": finished.error}
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": started.run_id if started else "",
        "agent": agent,
        "steps": b.steps,
        "notes": "Exported by icae-tui from the run's stored events.",
        "final_metrics": _final_metrics(b, extra),
        "extra": {
            "task": started.task_id if started else "",
            "level": started.level if started else "",
        },
    }


def _final_metrics(b: _Builder, extra: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"total_steps": len(b.steps)}
    if any(s.get("metrics") for s in b.steps):
        out["total_prompt_tokens"] = b.prompt_tokens
        out["total_completion_tokens"] = b.completion_tokens
        if b.cost is not None:
            out["total_cost_usd"] = b.cost
    return out | {"extra": extra}
