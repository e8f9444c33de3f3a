"""A run's trace as one trajectory in ATIF (the Agent Trajectory Interchange Format, v1.4).

Built from the stored events, so a live run and a replayed one give the same file, for any
agent. The mapping:

- the PRD the agent was given is the first `user` step;
- what the agent says, each command (a `shell` tool call whose observation is its output and
  exit), each file it writes (`write_file`), each question it asks (`ask_user`) and its final
  message are `agent` steps;
- each answer to a question is a `user` step (who answered and from which records in
  `extra`): clarification turns are the user's side of the conversation;
- progress, refused questions past the budget, dropped events and the build are `system`
  steps; the score and the run's end go in `final_metrics.extra`.

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
    AgentSubmitted,
    AgentWrote,
    BuildChecked,
    Event,
    EventsDropped,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)

SCHEMA_VERSION = "ATIF-v1.4"
OUTPUT_CHARS = 64 * 1024  # of one command's output in its observation


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

    def step(self, ev: Event, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "timestamp": _when(ev.ts), "source": source,
                "message": message, **{k: v for k, v in fields.items() if v is not None}}  # fmt: skip
        self.steps.append(step)
        return step

    def call(self, ev: Event, name: str, arguments: dict[str, Any], message: str = "") -> str:
        call_id = f"call_{ev.seq}"
        calls = [{"tool_call_id": call_id, "function_name": name, "arguments": arguments}]
        self.step(ev, "agent", message, tool_calls=calls)
        return call_id

    def close_command(self, done: AgentCommandDone | None) -> None:
        if self.open_command is None:
            return
        text = "".join(self.output)
        if len(text) > OUTPUT_CHARS:
            text = text[:OUTPUT_CHARS] + "\n[… output cut in the trajectory …]"
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


def build_trajectory(events: list[Event]) -> dict[str, Any]:
    b = _Builder()
    started: RunStarted | None = None
    finished: RunFinished | None = None
    score: dict[str, Any] | None = None
    for ev in events:
        if not isinstance(ev, AgentOutput | AgentCommandDone):
            b.close_command(None)  # a command whose end was never stored
        match ev:
            case RunStarted():
                started = ev
                b.step(ev, "user", ev.prd, extra={"level": ev.level, "budget": ev.budget})
            case AgentSaid():
                b.step(ev, "agent", ev.text)
            case AgentCommand():
                b.call(ev, "shell", {"command": ev.command})
                b.open_command = b.steps[-1]
            case AgentOutput():
                b.output.append(ev.text)
            case AgentCommandDone():
                b.close_command(ev)
            case AgentWrote():
                b.call(ev, "write_file", {"path": ev.path, "size": ev.size})
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
                b.step(ev, "system", ev.reason, extra={"build_ok": ev.ok})
            case ScoreUpdated():
                score = ev.score.model_dump(mode="json")
            case RunFinished():
                finished = ev
    b.close_command(None)
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
        "final_metrics": {"total_steps": len(b.steps), "extra": extra},
        "extra": {
            "task": started.task_id if started else "",
            "level": started.level if started else "",
        },
    }
