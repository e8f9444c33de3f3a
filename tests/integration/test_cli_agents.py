"""Real CLI agents, installed from the package registries into agent images, build the mini
task inside their containers (network `none`) against the test's local model server — only
through the run's gateway — ask the user with `icae-ask`, and the run is scored with their
steps parsed from their native output.

The first run on a machine installs each agent into an image (minutes: a Python venv with
litellm, or a 400 MB native binary); later runs reuse it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentStopped,
    ModelCallMade,
    QuestionAnswered,
    QuestionAsked,
)
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from tests.integration.test_model_agent import (
    KEY,
    KEY_VAR,
    USAGE,
    _chunks,
    _good_code,
    _tool,
    upstream,
)

pytestmark = pytest.mark.docker

QUESTION = "How should unknown operations be reported?"


def _agents_file(tmp_path: Path, extends: str, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(
        f'[agents.under-test]\nextends = "{extends}"\nmodel = "stub-model"\n'
        f'base_url = "{base_url}"\napi_key_env = "{KEY_VAR}"\n{extra}'
    )
    return path


async def _run(fixture_catalog, store, agents: Path, **extra: Any):
    task = fixture_catalog.tasks["mini"]
    config = RunConfig(task=task, agent="command:under-test", agent_files=(agents,), **extra)
    run = Run(config, store)
    return run, await run.execute()


def _mini_script() -> list[Any]:
    write = "cat > mini.py <<'EOF'\n" + _good_code() + "EOF"
    bash = lambda command, i: _tool("bash", json.dumps({"command": command}), f"c{i}")  # noqa: E731
    return [
        bash(f'icae-ask "{QUESTION}"', 1),
        bash(write, 2),
        bash('echo \'{"op": "upper", "text": "x"}\' | python3 mini.py', 3),
        bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo built mini.py", 4),
    ]


async def test_mini_swe_agent_builds_mini_inside_its_container(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    async with upstream(_mini_script()) as up:
        agents = _agents_file(tmp_path, "mini-swe-agent", up.base_url)
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted", stopped
    assert outcome.score.overall == 1.0
    # Its steps, parsed from its trajectory: the question, the write, the check.
    commands = [e.command for e in events if isinstance(e, AgentCommand)]
    assert commands[0] == f'icae-ask "{QUESTION}"' and "cat > mini.py" in commands[1]
    done = [e.exit_code for e in events if isinstance(e, AgentCommandDone)]
    assert done[:3] == [0, 0, 0]
    [asked] = [e for e in events if isinstance(e, QuestionAsked)]
    assert asked.text == QUESTION and asked.via == "icae-ask"
    [answer] = [e for e in events if isinstance(e, QuestionAnswered)]
    assert answer.record_ids == ["C001"]
    # Every model call went through the gateway, with the real key only upstream.
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert len(calls) == 4 and {c.call_kind for c in calls} == {"ok"}
    assert {h["Authorization"] for h, _ in up.requests} == {f"Bearer {KEY}"}
    # The native trajectory is kept beside the run's records.
    kept = store.artifacts_dir / run.run_id / "agent_logs" / "traj.json"
    assert json.loads(kept.read_text())["info"]["exit_status"] == "Submitted"
    _keep_native_log(run, store, "mini")


# --- Claude Code against a server that speaks the Anthropic Messages API -----------------


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _message_events(blocks: list[dict[str, Any]], model: str, msg_id: str) -> str:
    """One reply as the Messages API streams it: text in one delta, tool input in two."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}})]  # fmt: skip
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start, deltas = (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": block["text"]}],
            )
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": part}
                      for part in (raw[: len(raw) // 2], raw[len(raw) // 2 :])]  # fmt: skip
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": start}))  # fmt: skip
        out += [_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                             "delta": d}) for d in deltas]  # fmt: skip
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
               "stop_sequence": None}, "usage": {"output_tokens": 20}}))  # fmt: skip
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


class MessagesUpstream:
    """Plays the conversation by its length (the number of assistant turns so far), so a
    retried request gets the same reply; requests without tools (Claude Code's side calls,
    e.g. a title) get a short text."""

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.turns = turns
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        blocks = [{"type": "text", "text": "ok"}]
        if body.get("tools"):
            done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            blocks = self.turns[min(done, len(self.turns) - 1)]
        msg_id = f"msg_{len(self.requests)}"  # one id a reply: Claude Code joins equal ids
        events = _message_events(blocks, body.get("model", ""), msg_id)
        if not body.get("stream"):
            content = [{k: v for k, v in b.items()} for b in blocks]
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            return web.json_response({"id": msg_id, "type": "message", "role": "assistant",
                "model": body.get("model", ""), "content": content, "stop_reason": stop,
                "usage": {"input_tokens": 100, "output_tokens": 20}})  # fmt: skip
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(events.encode())
        return resp


@contextlib.asynccontextmanager
async def serving_post(path: str, handler) -> AsyncIterator[str]:
    """A local HTTP server answering POST `path` with `handler`; yields its /v1 base URL."""
    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def messages_upstream(
    turns: list[list[dict[str, Any]]],
) -> AsyncIterator[tuple[MessagesUpstream, str]]:
    up = MessagesUpstream(turns)
    async with serving_post("/v1/messages", up.messages) as base_url:
        yield up, base_url


def _claude_turns() -> list[list[dict[str, Any]]]:
    write = "cat > mini.py <<'EOF'\n" + _good_code() + "EOF"
    bash = lambda command, i: [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash",  # noqa: E731
                                "input": {"command": command, "description": f"step {i}"}}]  # fmt: skip
    return [
        bash(f'icae-ask "{QUESTION}"', 1),
        bash(write, 2),
        bash('echo \'{"op": "upper", "text": "x"}\' | python3 mini.py', 3),
        [{"type": "text", "text": "Built mini.py."}],
    ]


async def test_claude_code_builds_mini_through_the_messages_api(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    async with messages_upstream(_claude_turns()) as (up, base_url):
        agents = _agents_file(tmp_path, "claude-code", base_url)
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted", stopped
    assert outcome.score.overall == 1.0
    commands = [e.command for e in events if isinstance(e, AgentCommand)]
    assert commands[:2] == [f'icae-ask "{QUESTION}"', _claude_turns()[1][0]["input"]["command"]]
    [asked] = [e for e in events if isinstance(e, QuestionAsked)]
    assert asked.text == QUESTION
    submitted = [e.message for e in events if e.kind == "agent_submitted"]
    assert submitted == ["Built mini.py."]
    # Passed through to the Messages upstream, the real key added there and nowhere else.
    assert {h.get("x-api-key") for h, _ in up.requests} == {KEY}
    assert {b["model"] for _, b in up.requests} == {"stub-model"}
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert len(calls) >= 4 and {c.call_kind for c in calls} == {"ok"}
    assert (store.artifacts_dir / run.run_id / "agent_logs" / "stdout.log").is_file()
    _keep_native_log(run, store, "claude")


# --- Codex CLI and Aider against a Chat Completions server ---------------------------------


class ChatByTurns:
    """A Chat Completions server whose reply depends on the request (`reply(body)`), so an
    agent's side calls and retries do not shift a scripted queue; streamed or not."""

    def __init__(self, reply: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.reply = reply
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        message = self.reply(body)
        if not body.get("stream"):
            return web.json_response({"id": f"c{len(self.requests)}", "object": "chat.completion",
                "created": 0, "model": body["model"], "choices": [{"index": 0,
                "message": message, "finish_reason": "stop"}], "usage": USAGE})  # fmt: skip
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunks = _chunks(message)
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({"choices": [], "usage": USAGE})
        for chunk in chunks:
            chunk |= {"id": f"c{len(self.requests)}", "object": "chat.completion.chunk",
                      "created": 0, "model": body["model"]}  # fmt: skip
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp


@contextlib.asynccontextmanager
async def chat_upstream(
    reply: Callable[[dict[str, Any]], dict[str, Any]],
) -> AsyncIterator[tuple[ChatByTurns, str]]:
    up = ChatByTurns(reply)
    async with serving_post("/v1/chat/completions", up.completions) as base_url:
        yield up, base_url


def _codex_reply(body: dict[str, Any]) -> dict[str, Any]:
    """Codex's shell tool, whichever its version offers; the turn from the tool results."""
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    if not tools:
        return {"role": "assistant", "content": "ok"}
    done = sum(1 for m in body["messages"] if m.get("role") == "tool")
    commands = [
        c for c in (f'icae-ask "{QUESTION}"', "cat > mini.py <<'EOF'\n" + _good_code() + "EOF")
    ]
    if done >= len(commands):
        return {"role": "assistant", "content": "Built mini.py."}
    command = commands[done]
    if "exec_command" in tools:
        name, args = "exec_command", {"cmd": command}
    else:
        name, args = "shell", {"command": ["bash", "-lc", command]}
    return _tool(name, json.dumps(args), f"call_{done}")


async def test_codex_builds_mini_through_the_responses_api_translated(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    async with chat_upstream(_codex_reply) as (up, base_url):
        agents = _agents_file(tmp_path, "codex", base_url, 'wire_api = "chat"\n')
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted", stopped
    assert outcome.score.overall == 1.0
    [asked] = [e for e in events if isinstance(e, QuestionAsked)]
    assert asked.text == QUESTION
    commands = [e.command for e in events if isinstance(e, AgentCommand)]
    assert any("icae-ask" in c for c in commands) and any("mini.py" in c for c in commands)
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert calls and {c.call_kind for c in calls} == {"ok"}
    assert {h["Authorization"] for h, _ in up.requests} == {f"Bearer {KEY}"}
    _keep_native_log(run, store, "codex")


def _aider_reply(body: dict[str, Any]) -> dict[str, Any]:
    """Aider cannot run icae-ask: it asks with an ASK: line, and gets the answer as the next
    message; then it writes the file in its `whole` edit format."""
    last = str(body["messages"][-1].get("content") or "")
    if "question(s) left" not in last:
        return {"role": "assistant", "content": f"I need to know one thing.\nASK: {QUESTION}"}
    return {"role": "assistant", "content": "mini.py\n```\n" + _good_code() + "```\n"}


async def test_aider_asks_with_an_ask_line_and_builds_mini(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    async with chat_upstream(_aider_reply) as (up, base_url):
        agents = _agents_file(tmp_path, "aider", base_url)
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted", stopped
    [asked] = [e for e in events if isinstance(e, QuestionAsked)]
    assert asked.text == QUESTION
    wrote = [e.path for e in events if e.kind == "agent_wrote"]
    assert any(p.endswith("mini.py") for p in wrote)
    assert outcome.score.overall == 1.0
    _keep_native_log(run, store, "aider")


def _keep_native_log(run, store, agent: str) -> None:
    """With ICAE_KEEP_NATIVE_LOGS=DIR, a real run's native logs are copied there: where the
    parser fixtures of tests/fixtures/native_logs/<agent>/real-* come from."""
    target = os.environ.get("ICAE_KEEP_NATIVE_LOGS")
    if not target:
        return
    source = store.artifacts_dir / run.run_id / "agent_logs"
    shutil.copytree(source, Path(target) / agent, dirs_exist_ok=True)
