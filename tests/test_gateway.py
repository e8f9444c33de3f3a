"""The host-side model gateway against a real local upstream (no Docker): a scripted aiohttp
server on 127.0.0.1 plays the model endpoint; the gateway serves a real Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web

from icae_tui.gateway import (
    GatewayConfig,
    ModelCall,
    ReplayUpstream,
    dump_calls,
    load_calls,
    model_proxy_script,
    serving,
)
from icae_tui.gateway.server import PROXY_ASSET
from tests.gateway_upstream import (
    MODEL,
    REAL_KEY,
    ScriptedServer,
    chunk,
    completion,
    config,
    tool_completion,
)
from tests.polling import Sleeps

MESSAGES = [
    {"role": "system", "content": "You build projects."},
    {"role": "user", "content": "Write hello.py"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


# -- the scripted upstream ---------------------------------------------------------------


STREAM = "stream"


class Upstream(ScriptedServer):
    """Answers from a script, in order: dicts are 200 JSON completions, `STREAM` is an SSE
    answer, `(status, headers)` is an error answer."""

    def __init__(self) -> None:
        self.script: list[Any] = []
        self.seen: list[tuple[str, dict]] = []  # (Authorization header, body)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append((request.headers.get("Authorization", ""), body))
        step = self.script.pop(0)
        if isinstance(step, tuple):
            status, headers = step
            return web.json_response(
                {"error": {"message": f"scripted {status}"}}, status=status, headers=headers
            )
        if step == STREAM:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            events = [
                chunk({"role": "assistant", "content": "Hel"}),
                chunk({"content": "lo"}),
                chunk({}, "stop"),
            ]
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
                events.append({**chunk({}), "choices": [], "usage": usage})
            for ev in events:
                await resp.write(f"data: {json.dumps(ev)}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        return web.json_response(step)


@contextlib.asynccontextmanager
async def client(gateway, token: str | None = "run"):
    token = gateway.token if token == "run" else token
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    connector = aiohttp.UnixConnector(path=str(gateway.socket_path))
    async with aiohttp.ClientSession(connector=connector, headers=headers) as http:
        yield http


async def chat(http: aiohttp.ClientSession, **body: Any) -> tuple[int, Any]:
    body = {"model": "whatever-the-agent-wants", "messages": MESSAGES, **body}
    async with http.post("http://gateway/v1/chat/completions", json=body) as r:
        text = await r.text()
        return r.status, (json.loads(text) if not body.get("stream") or r.status != 200 else text)


# -- tests -------------------------------------------------------------------------------


async def test_upstream_gets_the_real_key_and_the_forced_model_and_the_call_is_recorded(
    upstream, key_env
):
    upstream.script = [completion("Hello!"), tool_completion("write_file", {"path": "hello.py"})]
    recorded: list[ModelCall] = []
    async with serving(config(upstream), record=recorded.append) as gw, client(gw) as http:
        assert REAL_KEY not in gw.token and gw.token not in REAL_KEY
        assert REAL_KEY not in json.dumps(gw.agent_env(8787))
        s1, plain = await chat(http)
        s2, tooled = await chat(http, tools=TOOLS)
    assert (s1, s2) == (200, 200)
    assert plain["choices"][0]["message"]["content"] == "Hello!"
    assert tooled["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "write_file"
    assert [auth for auth, _ in upstream.seen] == [f"Bearer {REAL_KEY}"] * 2
    assert [body["model"] for _, body in upstream.seen] == [MODEL, MODEL]
    assert upstream.seen[1][1]["tools"] == TOOLS
    first, second = recorded
    assert recorded == gw.calls()
    assert (first.index, first.kind, first.status, first.upstream_status) == (1, "ok", 200, 200)
    assert (first.model, first.upstream_model, first.message_count) == (
        "whatever-the-agent-wants",
        MODEL,
        2,
    )
    assert (first.tokens_in, first.tokens_out, first.attempts) == (7, 3, 1)
    assert first.content_chars == len("Hello!") and first.finish_reason == "stop"
    assert (second.tools_count, second.tool_calls, second.finish_reason) == (
        1,
        ["write_file"],
        "tool_calls",
    )
    assert json.loads(second.response_body or "")["choices"][0]["finish_reason"] == "tool_calls"
    assert REAL_KEY not in dump_calls(recorded)


async def test_a_missing_or_wrong_token_gets_401_and_never_reaches_upstream(upstream, key_env):
    upstream.script = [completion()]
    async with serving(config(upstream)) as gw:
        statuses = []
        for token in (None, "wrong", REAL_KEY, gw.token + "x", ""):
            async with client(gw, token) as http:
                status, body = await chat(http)
                statuses.append(status)
                assert body["error"]["type"] == "unauthorized"
        async with client(gw) as http:
            ok, _ = await chat(http)
    assert statuses == [401] * 5
    assert ok == 200
    assert len(upstream.seen) == 1 and len(gw.calls()) == 1


async def test_429_and_500_are_retried_and_recorded_as_infra_counting_one_call(upstream, key_env):
    upstream.script = [(429, {"Retry-After": "0"}), (500, {}), completion()]
    waits = Sleeps()
    async with serving(config(upstream, max_calls=1), sleep=waits) as gw, client(gw) as http:
        status, body = await chat(http)
    assert status == 200 and body["choices"][0]["message"]["content"] == "Hello!"
    assert len(upstream.seen) == 3
    (call,) = gw.calls()
    assert (call.kind, call.attempts, gw.calls_forwarded) == ("ok", 3, 1)
    assert [(f.attempt, f.status) for f in call.infra_failures] == [(1, 429), (2, 500)]
    assert waits.waits == [0.0, 0.5]  # Retry-After honoured, then back-off 0.25 * 2


async def test_retries_are_bounded_and_an_exhausted_call_is_infra(upstream, key_env):
    upstream.script = [(503, {}), (503, {})]
    waits = Sleeps()
    async with (
        serving(config(upstream, max_attempts=2), sleep=waits) as gw,
        client(gw) as http,
    ):
        status, body = await chat(http)
    assert status == 503 and len(upstream.seen) == 2
    (call,) = gw.calls()
    assert (call.kind, call.attempts, call.upstream_status) == ("infra", 2, 503)
    assert waits.waits == [0.25]


async def test_an_unreachable_upstream_is_infra_with_502(upstream, key_env):
    cfg = config(upstream, max_attempts=3)
    await upstream.stop()  # nothing listens there any more
    waits = Sleeps()
    async with serving(cfg, sleep=waits) as gw, client(gw) as http:
        status, body = await chat(http)
    assert status == 502 and body["error"]["type"] == "upstream_unavailable"
    (call,) = gw.calls()
    assert (call.kind, call.attempts, call.upstream_status) == ("infra", 3, None)
    assert [f.status for f in call.infra_failures] == [None, None, None]
    assert waits.waits == [0.25, 0.5]


async def test_a_4xx_from_upstream_is_the_agents_error_and_not_retried(upstream, key_env):
    upstream.script = [(400, {})]
    async with serving(config(upstream), sleep=Sleeps()) as gw, client(gw) as http:
        status, _ = await chat(http)
    (call,) = gw.calls()
    assert (status, call.kind, call.attempts, len(upstream.seen)) == (400, "agent_error", 1, 1)


async def test_streaming_is_relayed_and_its_usage_counted(upstream, key_env):
    upstream.script = [STREAM]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text = await chat(http, stream=True)
    assert status == 200
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Hello"
    assert all(c["choices"] for c in chunks)  # the usage chunk the agent did not ask for
    assert upstream.seen[0][1]["stream_options"] == {"include_usage": True}
    (call,) = gw.calls()
    assert (call.stream, call.tokens_in, call.tokens_out, call.content_chars) == (True, 9, 2, 5)
    assert call.finish_reason == "stop" and "[DONE]" in (call.response_body or "")


async def test_a_usage_chunk_the_agent_asked_for_is_relayed(upstream, key_env):
    upstream.script = [STREAM]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text = await chat(http, stream=True, stream_options={"include_usage": True})
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert status == 200 and chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens"] == 9


async def test_bodies_are_capped_and_a_capped_recording_is_not_replayable(upstream, key_env):
    upstream.script = [completion("x" * 500)]
    async with serving(config(upstream, body_cap=100)) as gw, client(gw) as http:
        status, body = await chat(http)
    assert status == 200 and body["choices"][0]["message"]["content"] == "x" * 500
    (call,) = gw.calls()
    assert len(call.request_body or "") == 100 and call.request_truncated
    assert len(call.response_body or "") == 100 and call.response_truncated
    assert not call.replayable
    with pytest.raises(ValueError, match="cannot be replayed"):
        ReplayUpstream([call])


async def test_the_call_limit_answers_429_with_the_reason(upstream, key_env):
    upstream.script = [completion()]
    async with serving(config(upstream, max_calls=1)) as gw, client(gw) as http:
        first, _ = await chat(http)
        second, body = await chat(http)
    assert (first, second) == (200, 429)
    assert body == {"error": {"type": "limit_reached", "message": "model-call limit of 1 reached"}}
    assert len(upstream.seen) == 1
    refused = gw.calls()[1]
    assert (refused.kind, refused.attempts, refused.stop_reason) == (
        "limit",
        0,
        "model-call limit of 1 reached",
    )
    assert gw.stop_reason == "model-call limit of 1 reached"


async def test_the_token_limit_answers_429_after_the_call_that_reached_it(upstream, key_env):
    upstream.script = [completion(tokens_in=8, tokens_out=4)]
    async with serving(config(upstream, max_tokens=10)) as gw, client(gw) as http:
        first, _ = await chat(http)
        second, body = await chat(http)
    assert (first, second) == (200, 429)
    assert body["error"]["type"] == "limit_reached"
    assert body["error"]["message"] == "token limit of 10 reached (12 used)"
    assert len(upstream.seen) == 1
    reached, refused = gw.calls()
    assert reached.stop_reason == refused.stop_reason == "token limit of 10 reached (12 used)"
    assert refused.kind == "limit"


async def test_the_cost_limit_answers_429(upstream, key_env):
    upstream.script = [completion(tokens_in=1000, tokens_out=1000)]
    prices = {"price_in_per_mtok": 1.0, "price_out_per_mtok": 3.0, "max_cost": 0.004}
    async with serving(config(upstream, **prices)) as gw, client(gw) as http:
        first, _ = await chat(http)
        second, body = await chat(http)
    assert (first, second) == (200, 429)
    assert body["error"]["message"] == "cost limit of 0.004 reached (0.004 spent)"
    assert gw.calls()[0].cost == pytest.approx(0.004)
    assert len(upstream.seen) == 1


async def test_replay_serves_the_recording_without_upstream_and_409s_on_divergence(
    upstream, key_env
):
    upstream.script = [
        completion("Hello!"),
        tool_completion("write_file", {"path": "hello.py"}),
        STREAM,
    ]
    requests = [{}, {"tools": TOOLS}, {"stream": True}]
    async with serving(config(upstream)) as gw, client(gw) as http:
        live = [await chat(http, **r) for r in requests]
    recording = dump_calls(gw.calls())
    await upstream.stop()

    replay_cfg = GatewayConfig(model=MODEL)  # no endpoint, no key
    async with (
        serving(replay_cfg, upstream=ReplayUpstream(load_calls(recording))) as gw,
        client(gw) as http,
    ):
        replayed = [await chat(http, **r) for r in requests]
        extra, extra_body = await chat(http)
    assert replayed == live
    assert [c.tokens_in for c in gw.calls()[:3]] == [7, 11, 9]
    assert extra == 409 and extra_body["error"]["type"] == "replay_divergence"
    assert extra_body["error"]["call"] == 4

    changed = [MESSAGES[0], {"role": "user", "content": "Write goodbye.py"}]
    async with (
        serving(replay_cfg, upstream=ReplayUpstream(load_calls(recording))) as gw,
        client(gw) as http,
    ):
        same, _ = await chat(http)
        status, body = await chat(http, messages=changed, tools=TOOLS)
    assert same == 200
    assert status == 409
    assert body["error"]["type"] == "replay_divergence"
    assert body["error"]["message"] == "call 2: message 1 differs"
    assert gw.calls()[1].kind == "replay_divergence"


async def test_the_gateway_folder_is_removed_on_close_and_on_cancel(upstream, key_env):
    async with serving(config(upstream)) as gw:
        folder = gw.folder
        assert gw.socket_path.exists()
    assert not folder.exists()

    holder: dict = {}

    async def hold():
        async with serving(config(upstream)) as gw:
            holder["folder"] = gw.folder
            await asyncio.Event().wait()

    task = asyncio.create_task(hold())
    while "folder" not in holder:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not holder["folder"].exists()


async def test_the_loopback_forwarder_works_with_the_openai_client(upstream, key_env):
    upstream.script = [completion("Hello!"), STREAM]
    assert model_proxy_script().startswith(b"#!/usr/bin/env python3")
    async with serving(config(upstream)) as gw:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(PROXY_ASSET),
            "--port",
            "0",
            "--socket",
            str(gw.socket_path),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line.startswith("listening 127.0.0.1:")
            port = int(line.rsplit(":", 1)[1])
            env = gw.agent_env(port)
            oa = openai.AsyncOpenAI(
                base_url=env["OPENAI_BASE_URL"],
                api_key=env["OPENAI_API_KEY"],
                max_retries=0,
                timeout=30,
            )
            done = await oa.chat.completions.create(model="anything", messages=MESSAGES)
            parts = []
            stream = await oa.chat.completions.create(
                model="anything", messages=MESSAGES, stream=True
            )
            async for piece in stream:
                parts.extend(c.delta.content or "" for c in piece.choices)
            bad = openai.AsyncOpenAI(
                base_url=env["OPENAI_BASE_URL"], api_key="nope", max_retries=0, timeout=30
            )
            with pytest.raises(openai.AuthenticationError):
                await bad.chat.completions.create(model="anything", messages=MESSAGES)
            await oa.close()
            await bad.close()
        finally:
            proc.kill()
            await proc.wait()
    assert done.choices[0].message.content == "Hello!"
    assert done.usage is not None and done.usage.prompt_tokens == 7
    assert "".join(parts) == "Hello"
    assert [c.kind for c in gw.calls()] == ["ok", "ok"]
    assert [body["model"] for _, body in upstream.seen] == [MODEL, MODEL]
