"""The ATIF trajectory of a run, from its stored events (no Docker)."""

from __future__ import annotations

import json

from icae_tui.cli import main
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentSubmitted,
    AgentThought,
    AgentToolUsed,
    AgentWrote,
    BuildChecked,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import Score
from icae_tui.results.trajectory import SCHEMA_VERSION, build_trajectory
from icae_tui.store.database import RunStore


def _events() -> list:
    events = [
        RunStarted(task_id="mini", task_title="t", agent="scripted:good", level="L1",
                   responder="simulated", budget=3, prd="Build a tool."),
        AgentSaid(text="Let me ask first."),
        QuestionAsked(question_id=1, text="How are errors reported?", remaining_before=3),
        QuestionAnswered(question_id=1, text="Print error=unknown_op.", record_ids=["C001"],
                         remaining=2),
        AgentWrote(path="/workspace/mini.py", size=120),
        AgentCommand(command="python3 mini.py"),
        AgentOutput(stream="stdout", text="X\n"),
        AgentOutput(stream="stderr", text="warn\x1b[2J\n"),
        AgentCommandDone(command="python3 mini.py", exit_code=0, duration_s=0.1),
        AgentCommand(command="sleep 9"),  # its end was never stored (a crash)
        QuestionsRefused(count=40, chars=800, first_id=5, last_id=44),
        AgentSubmitted(message="done"),
        BuildChecked(ok=True, exit_code=0, reason="build passed"),
        ScoreUpdated(score=Score(done=1, planned=1, overall=1.0)),
        RunFinished(status="completed"),
    ]  # fmt: skip
    for seq, ev in enumerate(events, 1):
        ev.run_id, ev.seq, ev.ts = "r1", seq, 1_700_000_000.0 + seq
    return events


def test_clarification_turns_are_user_steps_and_commands_are_tool_calls():
    t = build_trajectory(_events())
    assert t["schema_version"] == SCHEMA_VERSION and t["session_id"] == "r1"
    assert t["agent"]["name"] == "scripted:good"
    steps = t["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert [(s["source"], s["message"]) for s in steps][:3] == [
        ("user", "Build a tool."),
        ("agent", "Let me ask first."),
        ("agent", "How are errors reported?"),
    ]
    answer = steps[3]
    assert answer["source"] == "user" and answer["message"] == "Print error=unknown_op."
    assert answer["extra"]["records"] == ["C001"] and answer["extra"]["responder"] == "simulated"
    shell = next(s for s in steps if s.get("tool_calls", [{}])[0].get("function_name") == "shell")
    [call] = shell["tool_calls"]
    assert call["arguments"] == {"command": "python3 mini.py"}
    [result] = shell["observation"]["results"]
    assert result["source_call_id"] == call["tool_call_id"]
    assert result["content"] == "X\nwarn\x1b[2J\n"  # literal: displays escape, data does not
    assert shell["extra"]["exit_code"] == 0
    unfinished = [
        s for s in steps if s.get("tool_calls", [{}])[0].get("arguments") == {"command": "sleep 9"}
    ]
    assert unfinished[0]["observation"]["results"][0]["content"] == ""
    assert "extra" not in unfinished[0]
    assert [s["source"] for s in steps[-3:]] == ["system", "agent", "system"]
    assert steps[-2]["extra"] == {"submitted": True}
    assert t["final_metrics"]["total_steps"] == len(steps)
    assert t["final_metrics"]["extra"]["status"] == "completed"
    assert t["final_metrics"]["extra"]["score"]["overall"] == 1.0
    assert steps[0]["timestamp"] == "2023-11-14T22:13:21Z"
    json.dumps(t)  # serialisable as is


def test_thoughts_own_tools_and_output_outside_commands_are_agent_steps():
    events = [
        RunStarted(task_id="mini", task_title="t", agent="claude", level="L1",
                   responder="simulated", budget=3, prd="Build a tool."),
        AgentThought(text="Read the spec first."),
        AgentToolUsed(tool="Read", detail="/workspace/spec.md", ok=True),
        AgentToolUsed(tool="web_search", detail="argparse subcommands"),
        AgentOutput(stream="stdout", text="agent log 1\n"),  # a plain CLI agent's own stdout
        AgentOutput(stream="stdout", text="agent log 2\n"),
        AgentOutput(stream="stderr", text="warning\n"),
        AgentCommand(command="ls"),
        AgentOutput(stream="stdout", text="spec.md\n"),
        AgentCommandDone(command="ls", exit_code=0, duration_s=0.0),
    ]  # fmt: skip
    for seq, ev in enumerate(events, 1):
        ev.run_id, ev.seq, ev.ts = "r1", seq, 1_700_000_000.0 + seq
    steps = build_trajectory(events)["steps"]
    thought = steps[1]
    assert (thought["source"], thought["message"]) == ("agent", "")
    assert thought["reasoning_content"] == "Read the spec first."
    [read] = steps[2]["tool_calls"]
    assert read["function_name"] == "Read" and read["arguments"] == {"detail": "/workspace/spec.md"}
    assert steps[2]["extra"] == {"ok": True}
    assert steps[3]["tool_calls"][0]["function_name"] == "web_search"
    assert "extra" not in steps[3]  # the agent did not say how it went
    assert (steps[4]["source"], steps[4]["message"]) == ("agent", "agent log 1\nagent log 2\n")
    assert steps[4]["extra"] == {"stream": "stdout"}
    assert (steps[5]["message"], steps[5]["extra"]) == ("warning\n", {"stream": "stderr"})
    assert steps[6]["observation"]["results"][0]["content"] == "spec.md\n"  # nothing leaked in
    assert len(steps) == 7


def test_a_failed_build_keeps_its_whole_output_beside_its_reason():
    """Issue 38 item 10: the reason is one line; the build step's extra has the rest, as the
    run kept it (data, so literal: no escaping here)."""
    err = (
        "/workspace/x.js:3\n  const const a\nSyntaxError: Unexpected token 'const'\n\n"
        "Node.js v18.20.4\n"
    )
    events = [
        RunStarted(task_id="mini", task_title="t", agent="scripted:good", level="L1",
                   responder="simulated", budget=3, prd="Build a tool."),
        BuildChecked(ok=False, exit_code=1, stdout="npm \x1b[31m[bold]x[/]\n", stderr=err,
                     reason="build failed (exit 1): SyntaxError: Unexpected token 'const'"),
    ]  # fmt: skip
    for seq, ev in enumerate(events, 1):
        ev.run_id, ev.seq, ev.ts = "r1", seq, 1_700_000_000.0 + seq
    build = build_trajectory(events)["steps"][-1]
    assert build["source"] == "system"
    assert build["message"] == "build failed (exit 1): SyntaxError: Unexpected token 'const'"
    assert build["extra"] == {"build_ok": False, "exit_code": 1,
                              "stdout": "npm \x1b[31m[bold]x[/]\n", "stderr": err}  # fmt: skip


def test_export_from_the_cli_and_a_missing_run(tmp_path, capsys):
    store = RunStore(tmp_path / "runs.db")
    store.create_run("r1", "mini", "scripted:good", "L1", "simulated", 1.0)
    for ev in _events():
        store.append(ev)
    store.close()
    assert main(["--home", str(tmp_path), "runs", "--export", "r1", "--trajectory"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported == build_trajectory(_events())
    assert main(["--home", str(tmp_path), "runs", "--export", "nope"]) == 2
    assert "no stored run 'nope'" in capsys.readouterr().err
