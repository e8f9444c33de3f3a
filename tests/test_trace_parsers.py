"""Trace parsers: each CLI agent's native output as trace events, and how its run ended.

Most fixtures under tests/fixtures/native_logs/ were WRITTEN BY HAND from the formats
documented in each parser's docstring (icae_tui/agents/parsers/; and, for mini-swe-agent's tool
messages and exit statuses, its source at a83fcae). The `real-run.*` ones were PRODUCED BY REALLY RUNNING the
agents (Claude Code 2.1.332, Codex CLI 0.171.0, mini-swe-agent 2.4.6, Aider 0.86.2) in
tests/integration/test_cli_agents.py against its local model servers, kept with
ICAE_KEEP_NATIVE_LOGS=DIR. No Docker here.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from icae_tui.agents.config import TraceParser
from icae_tui.agents.parsers import AgentEnd, NativeTrace, parser_for
from icae_tui.agents.parsers.shapes import MAX_TEXT_CHARS
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentThought,
    AgentToolUsed,
    AgentWrote,
    Event,
    parse_event,
)
from icae_tui.domain.states import StopReason

LOGS = Path(__file__).parent / "fixtures" / "native_logs"


def _lines(parser: NativeTrace, path: Path) -> list[Event]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [ev for line in text.splitlines() for ev in parser.line(line)]


def _brief(events: list[Event]) -> list[tuple[Any, ...]]:
    """Each event as a tuple of what matters, to compare whole sequences."""
    out: list[tuple[Any, ...]] = []
    for ev in events:
        match ev:
            case AgentSaid() | AgentThought():
                out.append((ev.kind, ev.text))
            case AgentCommand():
                out.append((ev.kind, ev.command))
            case AgentOutput():
                out.append((ev.kind, ev.stream.value, ev.text))
            case AgentCommandDone():
                out.append((ev.kind, ev.command, ev.exit_code, ev.timed_out))
            case AgentWrote():
                out.append((ev.kind, ev.path, ev.size))
            case AgentToolUsed():
                out.append((ev.kind, ev.tool, ev.detail, ev.ok))
            case _:
                out.append((ev.kind,))
    return out


def test_every_format_has_a_fresh_parser():
    for kind in TraceParser:
        first, second = parser_for(kind), parser_for(kind)
        assert first is not second and type(first) is type(second)
        assert isinstance(first.files, tuple)
    assert parser_for(TraceParser.MINI_SWE_AGENT).files == ("traj.json",)
    assert parser_for(TraceParser.AIDER).files == ("chat.md",)


# --- plain ---------------------------------------------------------------------------------


def test_plain_lines_are_output_and_exit_zero_is_a_submission():
    p = parser_for(TraceParser.PLAIN)
    assert _brief(p.line("building…") + p.line("")) == [
        ("agent_output", "stdout", "building…\n"),
        ("agent_output", "stdout", "\n"),
    ]
    assert p.file("anything", b"x") == []
    assert p.end(0) == AgentEnd(True, "", None, "the agent exited with code 0")
    end = p.end(3)
    assert (end.submitted, end.reason) == (False, StopReason.AGENT_ERROR)
    assert parser_for(TraceParser.PLAIN).end(None).reason is StopReason.AGENT_ERROR


# --- Claude Code ---------------------------------------------------------------------------


def test_claude_session_thoughts_commands_tools_writes_and_result():
    # fixture written from AGENTS.md §2 (stream-json lines), not from a real run
    p = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    events = _lines(p, LOGS / "claude" / "success.jsonl")
    assert _brief(events) == [
        ("agent_thought", "The task wants hello.txt. Look around first."),
        ("agent_said", "I'll look at the files first."),
        ("agent_command", "ls"),
        ("agent_output", "stdout", "README.md"),
        ("agent_command_done", "ls", 0, False),
        ("agent_tool", "Read", "/workspace/README.md", True),
        ("agent_wrote", "/workspace/hello.txt", 3),
        ("agent_tool", "Edit", "/workspace/hello.txt", False),  # failed: it wrote nothing
        ("agent_command", "cat missing.txt"),
        ("agent_output", "stdout", "cat: missing.txt: No such file or directory"),
        ("agent_command_done", "cat missing.txt", 1, False),
        ("agent_said", "Done."),
    ]
    assert p.end(0) == AgentEnd(True, "Done.", None, "claude: success after 6 turns")


def test_claude_max_turns_is_a_step_limit_and_unanswered_tools_still_show():
    # fixture written from AGENTS.md §2 (result subtypes found in the binary)
    p = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    events = _lines(p, LOGS / "claude" / "max_turns.jsonl")
    assert _brief(events)[-1] == ("agent_tool", "Grep", "TODO", None)  # shown at the result
    assert [e.kind for e in events].count("agent_command_done") == 1
    end = p.end(1)
    assert (end.submitted, end.reason) == (False, StopReason.STEP_LIMIT)
    assert end.detail == "claude: error_max_turns after 2 turns"


def test_claude_api_failures_are_infra_and_a_missing_result_is_an_agent_error():
    p = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    p.line('{"type":"result","subtype":"success","is_error":true,"num_turns":1,'
           '"result":"API Error: 503 upstream unavailable"}')  # fmt: skip
    end = p.end(1)
    assert (end.submitted, end.reason) == (False, StopReason.INFRA_ERROR)
    assert "API Error: 503" in end.detail
    retrying = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    retrying.line('{"type":"system","subtype":"api_retry","attempt":10}')
    assert retrying.end(1).reason is StopReason.INFRA_ERROR
    crashed = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    end = crashed.end(None)
    assert (end.reason, end.detail) == (
        StopReason.AGENT_ERROR,
        "claude was stopped before it exited without a result",
    )
    budget = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    budget.line('{"type":"result","subtype":"error_max_budget_usd","errors":["over budget"]}')
    assert budget.end(1).reason is StopReason.MODEL_LIMIT
    assert budget.end(1).detail == "claude: error_max_budget_usd: over budget"


def test_claude_a_subagent_tool_shows_before_the_subagent_works():
    p = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    task = {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1",
            "name": "Task", "input": {"description": "explore", "prompt": "look"}}]}}  # fmt: skip
    inner = {"type": "assistant", "parent_tool_use_id": "t1", "message": {"content": [
        {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "ls"}}]}}  # fmt: skip
    answer = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "found it"}]}}  # fmt: skip
    events = p.line(json.dumps(task)) + p.line(json.dumps(inner)) + p.line(json.dumps(answer))
    assert _brief(events) == [("agent_tool", "Task", "explore", None), ("agent_command", "ls")]


# --- Codex ---------------------------------------------------------------------------------


def test_codex_session_items_become_events():
    # fixture written from AGENTS.md §3 and codex-rs/exec/src/exec_events.rs
    p = parser_for(TraceParser.CODEX_JSON)
    events = _lines(p, LOGS / "codex" / "success.jsonl")
    ls, cat = "/bin/bash -lc 'ls'", "/bin/bash -lc 'cat hello.txt'"
    assert _brief(events) == [
        ("agent_output", "stderr", "codex: Reconnecting... 1/5\n"),
        ("agent_output", "stderr", "codex: Model metadata for `my-model` not found. Defaulting "
         "to fallback metadata; this can degrade performance and cause issues.\n"),
        ("agent_thought", "Need to list files."),
        ("agent_command", ls),
        ("agent_output", "stdout", "README.md\n"),
        ("agent_command_done", ls, 0, False),
        ("agent_wrote", "/workspace/hello.txt", 0),
        ("agent_tool", "file_change", "delete /workspace/old.txt", True),
        ("agent_tool", "mcp:docs/search", "hello", True),
        ("agent_tool", "web_search", "posix file permissions", None),
        ("agent_command", cat),
        ("agent_output", "stdout", "cat: hello.txt: No such file or directory\n"),
        ("agent_command_done", cat, 1, False),
        ("agent_tool", "todo_list", "1/2 done: create hello.txt", None),
        ("agent_said", "Done."),
    ]  # fmt: skip
    assert p.end(0) == AgentEnd(True, "Done.", None, "codex: turn completed")
    end = p.end(2)  # a completed turn, but codex itself failed
    assert (end.submitted, end.reason, end.final_message) == (
        False,
        StopReason.AGENT_ERROR,
        "Done.",
    )


def test_codex_turn_failed_after_retries_is_infra():
    # fixture written from AGENTS.md §3 ("error events also carry retry notices")
    p = parser_for(TraceParser.CODEX_JSON)
    events = _lines(p, LOGS / "codex" / "turn_failed.jsonl")
    assert [e.kind for e in events][0] == "agent_said"
    end = p.end(1)
    assert (end.submitted, end.reason) == (False, StopReason.INFRA_ERROR)
    assert end.detail.startswith("codex: stream disconnected before completion")
    assert end.final_message == "Let me look around."
    other = parser_for(TraceParser.CODEX_JSON)
    other.line('{"type":"error","message":"Reconnecting... 1/5"}')  # and then it went on:
    other.line('{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Hm."}}')
    other.line('{"type":"turn.failed","error":{"message":"context window exceeded"}}')
    assert other.end(1).reason is StopReason.AGENT_ERROR
    silent = parser_for(TraceParser.CODEX_JSON)
    assert silent.end(0).detail == "codex did not complete its turn: it exited with code 0"


# --- mini-swe-agent ------------------------------------------------------------------------


def test_mini_growing_trajectory_gives_only_new_events():
    # snapshots written from AGENTS.md §1 and mini-swe-agent's source (tool messages, the
    # padded "action was not executed" answer to the submit command, exit messages)
    p = parser_for(TraceParser.MINI_SWE_AGENT)
    snap1, snap2, snap3 = ((LOGS / "mini" / f"traj_{i}.json").read_bytes() for i in (1, 2, 3))
    assert p.line("mini-swe-agent banner") == []
    assert _brief(p.file("traj.json", snap1)) == [
        ("agent_said", "Listing files."),
        ("agent_command", "ls"),
        ("agent_output", "stdout", "README.md\n"),
        ("agent_command_done", "ls", 0, False),
    ]
    assert p.file("traj.json", snap2[: len(snap2) // 2]) == []  # read while being written
    assert p.file("other.log", snap2) == []
    create = "printf 'hi\\n' > hello.txt && cat hello.txt"
    assert _brief(p.file("traj.json", snap2)) == [
        ("agent_said", "I think the file is there already."),  # the reply that had no command
        ("agent_output", "stderr", "mini-swe-agent: FormatError: No tool calls found in the "
         "response. Every response MUST include at least one tool call.\n"),
        ("agent_said", "Creating the file."),
        ("agent_command", create),
        ("agent_output", "stdout", "hi\n"),
        ("agent_command_done", create, 0, False),
        ("agent_command", "sleep 60"),
        ("agent_output", "stderr", "An error occurred while executing the command: Command "
         "'sleep 60' timed out after 30 seconds\n"),
        ("agent_command_done", "sleep 60", -1, True),
    ]  # fmt: skip
    assert p.file("traj.json", snap2) == []  # the same snapshot again
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 'hello.txt created'"
    assert _brief(p.file("traj.json", snap3)) == [
        ("agent_said", "Submitting."),
        ("agent_command", submit),
        ("agent_command_done", submit, 0, False),  # not executed: it submitted, no failure
    ]
    assert p.end(0) == AgentEnd(True, "hello.txt created\n", None, "mini-swe-agent: Submitted")


def test_mini_exit_statuses():
    # fixture written from mini-swe-agent's source (agents/default.py: LimitsExceeded)
    p = parser_for(TraceParser.MINI_SWE_AGENT)
    p.file("traj.json", (LOGS / "mini" / "limits_exceeded.json").read_bytes())
    assert p.end(0) == AgentEnd(False, "", StopReason.STEP_LIMIT, "mini-swe-agent: LimitsExceeded")

    def ended(extra: dict[str, Any]) -> AgentEnd:
        q = parser_for(TraceParser.MINI_SWE_AGENT)
        q.file("traj.json", json.dumps({"messages": [{"role": "exit", "content": "",
                                                      "extra": extra}]}).encode())  # fmt: skip
        return q.end(1)

    assert ended({"exit_status": "TimeExceeded"}).reason is StopReason.TIME_LIMIT
    api = ended({"exit_status": "APIConnectionError", "exception_str": "Connection refused\nat…"})
    assert (api.reason, api.detail) == (
        StopReason.INFRA_ERROR,
        "mini-swe-agent: APIConnectionError: Connection refused",
    )
    assert ended({"exit_status": "RepeatedFormatError"}).reason is StopReason.AGENT_ERROR
    never = parser_for(TraceParser.MINI_SWE_AGENT).end(137)
    assert (never.reason, never.detail) == (
        StopReason.AGENT_ERROR,
        "mini-swe-agent exited with code 137 without an exit status",
    )


# --- Aider ---------------------------------------------------------------------------------


def test_aider_chat_history_replies_edits_and_its_own_lines():
    # fixture written from AGENTS.md §4 and aider/io.py (how each kind of line is written)
    p = parser_for(TraceParser.AIDER)
    assert p.line("> Applied edit to hello.txt") == []  # stdout repeats the file: not parsed
    events = p.file("chat.md", (LOGS / "aider" / "chat.md").read_bytes())
    assert _brief(events) == [
        ("agent_output", "stdout", "Aider v0.86.2\nModel: openai/my-model with whole edit "
         "format\nGit repo: none\nRepo-map: disabled\nAdded hello.txt to the chat.\n"),
        ("agent_said", "I'll create the file.\n\nhello.txt\n```\nhi\n```"),
        ("agent_wrote", "hello.txt", 0),
        ("agent_said", "Now a script to check it:\n\ncheck.sh\n```\ncat hello.txt\n```"),
        ("agent_wrote", "check.sh", 0),
        ("agent_output", "stdout", "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: n\n"),
    ]  # fmt: skip
    end = p.end(0)
    assert (end.submitted, end.final_message) == (True, _brief(events)[3][1])
    failed = parser_for(TraceParser.AIDER)
    failed.file("chat.md", (LOGS / "aider" / "chat.md").read_bytes())
    assert (failed.end(1).submitted, failed.end(1).reason) == (False, StopReason.AGENT_ERROR)
    assert failed.end(1).detail == "aider exited with code 1"


def test_aider_appended_in_pieces_gives_the_same_events():
    whole = (LOGS / "aider" / "chat.md").read_bytes()
    once = parser_for(TraceParser.AIDER).file("chat.md", whole)
    p = parser_for(TraceParser.AIDER)
    pieces = [ev for end in range(0, len(whole) + 1, 7) for ev in p.file("chat.md", whole[:end])]
    pieces += p.file("chat.md", whole)

    def merged(events: list[Event]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for b in _brief(events):  # output runs may split differently: join them
            if out and b[0] == out[-1][0] == "agent_output":
                out[-1] = (*out[-1][:2], out[-1][2] + b[2])
            else:
                out.append(b)
        return out

    assert merged(pieces) == merged(once)


def test_aider_without_a_reply_is_no_submission():
    # fixture written from aider/io.py and base_coder.py (litellm errors, retry notices)
    p = parser_for(TraceParser.AIDER)
    p.file("chat.md", (LOGS / "aider" / "api_error.md").read_bytes())
    end = p.end(0)  # aider exits 0 after a --message even when the API failed
    assert (end.submitted, end.reason) == (False, StopReason.INFRA_ERROR)
    assert "APIConnectionError" in end.detail


# --- hostile input -------------------------------------------------------------------------

HOSTILE_LINES = [
    "not json at all",
    "{",
    "[1, 2, 3]",
    "42",
    '"a string"',
    "null",
    "{}",
    '{"type": 5}',
    '{"type": "assistant", "message": []}',
    '{"type": "assistant", "message": {"content": "just a string"}}',
    '{"type": "assistant", "message": {"content": [1, null, {"type": "tool_use", "input": [1]},'
    ' {"type": "tool_use", "id": "x", "name": "Write", "input": {"content": 5}}]}}',
    '{"type": "assistant", "message": {"content": [{"type": "text", "text": "lone \\ud800"}]}}',
    '{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": {}}]}}',
    '{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "x",'
    ' "is_error": "yes", "content": [{"type": "image"}]}]}, "tool_use_result": {"stdout": 1}}',
    '{"type": "result", "subtype": [], "num_turns": 1e400, "result": {}}',
    '{"type": "item.started", "item": {"type": "command_execution", "id": [], "command": 1}}',
    '{"type": "item.completed", "item": []}',
    '{"type": "item.completed", "item": {"type": "command_execution", "exit_code": "x"}}',
    '{"type": "item.completed", "item": {"type": "command_execution", "exit_code": 99999999999}}',
    '{"type": "item.completed", "item": {"type": "file_change", "changes": [1, {"path": 2}]}}',
    '{"type": "item.completed", "item": {"type": "todo_list", "items": [null, {"text": 1}]}}',
    '{"type": "item.completed", "item": {"type": ["x"]}}',
    '{"type": "turn.failed", "error": "flat"}',
    '{"type": "error"}',
    "[" * 100_000,  # nesting deeper than the recursion limit
    "\x1b[2J\x00\u2028 controls",
    "x" * (2 * MAX_TEXT_CHARS),  # a huge line
    '{"type": "assistant", "message": {"content": [{"type": "text", "text": "'
    + "y" * (3 * MAX_TEXT_CHARS)
    + '"}]}}',
    b"\xff\xfe invalid \xc3\x28 utf-8".decode("utf-8", errors="replace"),
]

HOSTILE_FILES = [
    b"",
    b"\xff\xfe\x00 binary",
    b"{",
    b"[]",
    b'{"messages": {}}',
    b'{"messages": [1, "x", null, {"role": "tool", "extra": []},'
    b' {"role": "assistant", "extra": {"actions": [{"command": 5}, 7]}},'
    b' {"role": "tool", "extra": {"returncode": "0", "raw_output": ["x"]}},'
    b' {"role": "user", "extra": {"interrupt_type": "FormatError", "response": {"choices": 1}}},'
    b' {"role": "exit", "extra": {"exit_status": ["Submitted"]}}], "info": []}',
    b'{"messages": [{"role": "assistant", "content": "lone \\udc00"}]}',
    b"> Applied edit to \xff\n#### \n" + b"z" * (3 * MAX_TEXT_CHARS) + b"\n> x\n",
    b"\n".join([b"> line"] * 5000) + b"\n",
]


def _check(events: list[Event]) -> None:
    for ev in events:
        payload = ev.model_dump_json()  # storable: no lone surrogate left
        assert type(parse_event(payload)) is type(ev)
        for name in ("text", "command", "path", "detail", "tool"):
            assert len(getattr(ev, name, "")) <= MAX_TEXT_CHARS + 64


@pytest.mark.parametrize("kind", list(TraceParser))
def test_hostile_input_never_raises_and_stays_bounded(kind):
    p = parser_for(kind)
    for line in HOSTILE_LINES:
        _check(p.line(line))
    for name in (*p.files, "unknown.txt"):
        for blob in HOSTILE_FILES:
            _check(p.file(name, blob))
    for code in (0, 1, None):
        assert isinstance(p.end(code), AgentEnd)


def _mutate(value: Any, rng: random.Random) -> Any:
    """The same shape with some values replaced by values of the wrong type."""
    wrong = [None, 7, -1.5, "s", [], {}, [None], {"type": 3}, True]
    if rng.random() < 0.15:
        return rng.choice(wrong)
    if isinstance(value, dict):
        return {k: _mutate(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_mutate(v, rng) for v in value]
    return value


@pytest.mark.parametrize("kind", list(TraceParser))
def test_fixtures_with_values_of_the_wrong_type_never_raise(kind):
    rng = random.Random(1234)
    jsonl = [*(LOGS / "claude").glob("*.jsonl"), *(LOGS / "codex").glob("*.jsonl")]
    lines = [json.loads(line) for path in jsonl for line in path.read_text().splitlines()]
    trajectories = [json.loads(path.read_text()) for path in (LOGS / "mini").glob("*.json")]
    for _ in range(40):
        p = parser_for(kind)
        for line in lines:
            _check(p.line(json.dumps(_mutate(line, rng))))
        for doc in trajectories:
            _check(p.file("traj.json", json.dumps(_mutate(doc, rng)).encode()))
        assert isinstance(p.end(rng.choice([0, 1, None])), AgentEnd)


# --- logs of real runs ---------------------------------------------------------------------

ASKED = 'icae-ask "How should unknown operations be reported?"'


def _commands(events: list[Event]) -> list[str]:
    return [ev.command for ev in events if isinstance(ev, AgentCommand)]


def test_real_claude_code_run():
    parser = parser_for(TraceParser.CLAUDE_STREAM_JSON)
    events = _lines(parser, LOGS / "claude" / "real-run.jsonl")
    assert _commands(events)[0] == ASKED and "cat > mini.py" in _commands(events)[1]
    done = [ev.exit_code for ev in events if isinstance(ev, AgentCommandDone)]
    assert done == [0, 0, 0]
    answers = [ev.text for ev in events if isinstance(ev, AgentOutput)]
    assert any("error=unknown_op" in text for text in answers)  # the user's answer
    assert parser.end(0) == AgentEnd(True, "Built mini.py.", None, parser.end(0).detail)


def test_real_codex_run():
    parser = parser_for(TraceParser.CODEX_JSON)
    events = _lines(parser, LOGS / "codex" / "real-run.jsonl")
    commands = _commands(events)
    assert ASKED in commands[0] and "cat > mini.py" in commands[1]
    said = [ev.text for ev in events if isinstance(ev, AgentSaid)]
    assert said == ["Built mini.py."]
    end = parser.end(0)
    assert end.submitted and end.final_message == "Built mini.py."


def test_real_mini_swe_agent_run():
    parser = parser_for(TraceParser.MINI_SWE_AGENT)
    events = parser.file("traj.json", (LOGS / "mini" / "real-run.json").read_bytes())
    commands = _commands(events)
    assert commands[0] == ASKED and "cat > mini.py" in commands[1]
    assert [ev.exit_code for ev in events if isinstance(ev, AgentCommandDone)][:3] == [0, 0, 0]
    end = parser.end(0)
    assert end.submitted and "built mini.py" in end.final_message


def test_real_aider_run_asks_then_writes():
    parser = parser_for(TraceParser.AIDER)
    events = parser.file("chat.md", (LOGS / "aider" / "real-run.md").read_bytes())
    said = [ev.text for ev in events if isinstance(ev, AgentSaid)]
    assert said[0].endswith("ASK: How should unknown operations be reported?")
    assert [ev.path for ev in events if isinstance(ev, AgentWrote)] == ["mini.py"]
    assert parser.end(0).submitted
