"""The built-in model agent builds the mini task in its real container, through the run's
model gateway, against a local OpenAI-compatible server that plays a scripted conversation:
a clarification question, a 429 and a 500 (retried by the gateway), a tool call that writes
the code, a malformed tool call, a text-only turn, and the submission. Then the recorded
calls replay the run with no server at all."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from icae_tui.display.plain import PlainPrinter
from icae_tui.display.view import RunView
from icae_tui.domain.events import (
    AgentCommandDone,
    AgentSaid,
    AgentStopped,
    AgentStreamed,
    ModelCallMade,
    QuestionAnswered,
)
from icae_tui.results.trajectory import build_trajectory
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from tests.conftest import FIXTURE_TASKS

pytestmark = pytest.mark.docker

KEY_VAR = "ICAE_TEST_MODEL_KEY"
KEY = "sk-real-key-that-must-stay-on-the-host-4242"


def _good_code() -> str:
    steps = yaml.safe_load((FIXTURE_TASKS / "mini" / "solutions" / "good.yaml").read_text())
    return next(s["write"]["content"] for s in steps["steps"] if "write" in s)


def _tool(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _script() -> list[Any]:
    write = "cat > mini.py <<'EOF'\n" + _good_code() + "EOF"
    return [
        _tool("ask_user", json.dumps({"question": "How should unknown operations be reported?"}), "c1"),
        429,
        500,
        _tool("bash", json.dumps({"command": write}), "c2"),
        _tool("bash", "{not json", "c3"),
        {"role": "assistant", "content": "Let me try it.\n```bash\necho '{\"op\": \"upper\", \"text\": \"x\"}' | python3 mini.py\n```"},
        _tool("submit", json.dumps({"message": "mini.py is done"}), "c4"),
    ]  # fmt: skip


USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def _chunks(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply as a server streams it: the text in small pieces, each tool call's id and
    name first and its arguments in two fragments."""
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    text = step.get("content") or ""
    deltas += [{"content": text[i : i + 7]} for i in range(0, len(text), 7)]
    for i, call in enumerate(step.get("tool_calls") or []):
        args = call["function"]["arguments"]
        half = len(args) // 2
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        deltas += [{"tool_calls": [{"index": i, "function": {"arguments": part}}]}
                   for part in (args[:half], args[half:])]  # fmt: skip
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks


class Upstream:
    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.base_url = ""

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        step = self.script.pop(0) if self.script else _tool("submit", '{"message": "x"}', "cz")
        if isinstance(step, int):
            return web.json_response({"error": {"message": "busy"}}, status=step,
                                     headers={"Retry-After": "0"})  # fmt: skip
        if body.get("stream"):
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            chunks = _chunks(step)
            if (body.get("stream_options") or {}).get("include_usage"):
                chunks.append({"choices": [], "usage": USAGE})
            for chunk in chunks:
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            return resp
        return web.json_response({
            "id": f"up-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": step, "finish_reason": "stop"}],
            "usage": USAGE,
        })  # fmt: skip


@contextlib.asynccontextmanager
async def upstream(script: list[Any]) -> AsyncIterator[Upstream]:
    up = Upstream(script)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    up.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield up
    finally:
        await runner.cleanup()


def _agents_file(tmp_path: Path, base_url: str, limits: str = "", extra: str = "") -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(
        f'[agents.stub]\nkind = "model"\nmodel = "stub-model"\nbase_url = "{base_url}"\n'
        f'api_key_env = "{KEY_VAR}"\n{extra}' + (f"limits = {{ {limits} }}\n" if limits else "")
    )
    return path


async def _run(fixture_catalog, store, agents: Path, **extra: Any):
    task = fixture_catalog.tasks["mini"]
    config = RunConfig(task=task, agent="model:stub", agent_files=(agents,), pace_s=0, **extra)
    run = Run(config, store)
    return run, await run.execute()


async def test_the_model_agent_builds_mini_through_the_gateway(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    async with upstream(_script()) as up:
        run, outcome = await _run(fixture_catalog, store, _agents_file(tmp_path, up.base_url))
    assert outcome.status == "completed", outcome.error
    assert outcome.score.overall == 1.0
    events = store.events(run.run_id)
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert [c.call_kind for c in calls] == ["ok"] * 5
    assert [c.infra_failures for c in calls] == [0, 2, 0, 0, 0]  # the 429 and the 500
    assert [c.tool_calls for c in calls] == [["ask_user"], ["bash"], ["bash"], [], ["submit"]]
    [answer] = [e for e in events if isinstance(e, QuestionAnswered)]
    assert answer.record_ids == ["C001"]
    done = [e for e in events if isinstance(e, AgentCommandDone)]
    assert [d.exit_code for d in done] == [0, 0]  # the write, then the text-only turn's test
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted" and stopped.steps == 5
    # The text-only turn streamed into the trace in pieces, then whole; shown once.
    streamed = [e.text for e in events if isinstance(e, AgentStreamed)]
    [said] = [e for e in events if isinstance(e, AgentSaid)]
    assert said.streamed and said.text.startswith("Let me try it.")
    assert len(streamed) > 1 and "".join(streamed) == said.text
    lines = [line.text for line in RunView.from_events(events).trace if line.kind == "said"]
    assert lines.count("agent › Let me try it.") == 1
    # The trajectory: each model call's figures on the agent step it led to, and the totals.
    trajectory = build_trajectory(events)
    metered = [s for s in trajectory["steps"] if "metrics" in s]
    assert len(metered) == 5 and {s["source"] for s in metered} == {"agent"}
    assert {s["model_name"] for s in metered} == {"stub-model"}
    assert metered[0]["tool_calls"][0]["function_name"] == "ask_user"
    assert trajectory["final_metrics"]["total_prompt_tokens"] == 500
    assert trajectory["final_metrics"]["total_completion_tokens"] == 100
    # The malformed call was answered with what went wrong, and the model went on.
    fourth = up.requests[5][1]["messages"][-1]
    assert fourth["role"] == "tool" and "must be a JSON object" in fourth["content"]
    # The upstream saw the real key and the configured model; nothing else did.
    assert {h["Authorization"] for h, _ in up.requests} == {f"Bearer {KEY}"}
    assert {b["model"] for _, b in up.requests} == {"stub-model"}
    stored = (store.artifacts_dir / run.run_id / "model_calls.jsonl").read_text()
    assert KEY not in stored and KEY not in json.dumps([e.model_dump() for e in events])

    # Replayed from the recording, with no upstream at all: the same delivery and score.
    monkeypatch.delenv(KEY_VAR)
    replay, again = await _run(fixture_catalog, store, _agents_file(tmp_path, "http://127.0.0.1:9/v1"),
                               model_replay=run.run_id)  # fmt: skip
    assert again.status == "completed", again.error
    assert again.score.overall == 1.0
    assert [r.verdict for r in again.results] == [r.verdict for r in outcome.results]
    replayed = [e for e in store.events(replay.run_id) if isinstance(e, ModelCallMade)]
    assert [c.tool_calls for c in replayed] == [c.tool_calls for c in calls]
    # The header's and the headless summary's figures come from the same view.
    view = RunView.from_events(events)
    assert (view.model.calls, view.model.tokens_in, view.model.tokens_out) == (5, 500, 100)
    assert view.model.infra_failures == 2
    out = io.StringIO()
    PlainPrinter(out).summary(events)
    assert "model: 5 call(s) · 500→100 tokens · 2 upstream failure(s) retried" in out.getvalue()


PRICED = "price_in_per_mtok = 1000.0\nprice_out_per_mtok = 1000.0\n"  # $0.12 a stub call


@pytest.mark.parametrize(
    ("limits", "extra", "reason"),
    [
        ("max_steps = 2", "", "step_limit"),
        ("max_model_calls = 1", "", "model_limit"),
        ("max_tokens = 150", "", "model_limit"),
        ("max_cost_usd = 0.2", PRICED, "model_limit"),
        ("max_seconds = 1", "", "time_limit"),
    ],  # fmt: skip
)
async def test_each_limit_stops_the_agent_with_its_reason(
    fixture_catalog, store, tmp_path, monkeypatch, limits, extra, reason
):
    monkeypatch.setenv(KEY_VAR, KEY)
    # Replies not streamed here: the other path of the agent and the gateway.
    command = "sleep 60" if "seconds" in limits else "true"  # the time limit ends the sleep
    script = [_tool("bash", json.dumps({"command": command}), f"c{i}") for i in range(5)]
    async with upstream(script) as up:
        agents = _agents_file(tmp_path, up.base_url, limits, extra + "stream = false\n")
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error  # what is there is judged
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == reason, stopped
    assert not outcome.score.build_ok  # nothing was written: the build gate fails
    assert not [e for e in events if isinstance(e, AgentStreamed)]
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    if "cost" in limits:  # two calls spent $0.24, past $0.20: the third was refused
        assert [c.cost for c in calls[:2]] == [0.12, 0.12]
        assert calls[1].stop_reason and calls[2].call_kind == "limit"
    started = next(e for e in events if e.kind == "run_started")
    assert started.limits.model_dump(exclude_none=True).keys() >= {limits.split()[0]}


async def test_missing_key_and_missing_recording_are_clear_failures(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.delenv(KEY_VAR, raising=False)
    agents = _agents_file(tmp_path, "http://127.0.0.1:9/v1")
    _, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "failed" and KEY_VAR in outcome.error
    _, outcome = await _run(fixture_catalog, store, agents, model_replay="no-such-run")
    assert outcome.status == "failed" and "no recorded model calls" in outcome.error


INSIDE = r"""
import json, os, urllib.request
body = json.dumps({"model": "anything", "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                             {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                              "Content-Type": "application/json"})
print("inside:", json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])
try:
    urllib.request.urlopen("http://127.0.0.1:9/", timeout=2)
except OSError:
    print("no other way out")
"""

LOOK_FOR_KEY = (
    f"(env; cat /proc/1/environ; grep -rs '{KEY}' /etc /root /tmp /workspace /usr/local /dev/shm "
    "/run) | grep -c 'sk-real-key' || true"
)


async def test_a_program_inside_the_container_reaches_the_model_only_through_the_gateway(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    script = [
        _tool("bash", json.dumps({"command": "python3 - <<'EOF'\n" + INSIDE + "EOF"}), "c1"),
        {"role": "assistant", "content": "hello from inside"},  # what the inside call gets
        _tool("bash", json.dumps({"command": LOOK_FOR_KEY}), "c2"),
        _tool("submit", json.dumps({"message": "done"}), "c3"),
    ]
    async with upstream(script) as up:
        run, outcome = await _run(fixture_catalog, store, _agents_file(tmp_path, up.base_url))
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    output = "".join(e.text for e in events if e.kind == "agent_output")
    assert "inside: hello from inside" in output
    assert "no other way out" in output  # network none: the gateway is the only way
    assert output.strip().splitlines()[-1] == "0"  # the key: in no variable, no file
    # The inside call went through the gateway: recorded, with the real key added upstream.
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert len(calls) == 4 and {c.model for c in calls} == {"stub-model"}
    assert {h["Authorization"] for h, _ in up.requests} == {f"Bearer {KEY}"}
