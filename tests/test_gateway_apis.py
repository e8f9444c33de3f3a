"""The gateway's Anthropic Messages and OpenAI Responses faces, against a real local upstream
(no Docker): a scripted aiohttp server on 127.0.0.1 plays a Chat Completions, Messages or
Responses endpoint; the gateway serves a real Unix socket. Translated to a chat upstream,
passed through to an upstream of the same API, and replayed from a recording."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx2 as httpx  # what this openai release is built on
import openai
from aiohttp import web

from icae_tui.gateway import (
    GatewayConfig,
    ModelCall,
    ReplayUpstream,
    WireApi,
    dump_calls,
    load_calls,
    request_hash,
    serving,
)
from icae_tui.gateway import anthropic as anthropic_api
from icae_tui.gateway import responses as responses_api
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

# -- what Claude Code and Codex send --------------------------------------------------------

CLAUDE_HEADERS = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,context-management-2025-06-27",
}
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
CLAUDE_TOOLS = [
    {"name": "Bash", "description": "Run a command", "input_schema": SCHEMA},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},  # a server tool
]


def claude_request(**fields: Any) -> dict:
    """A Messages request shaped as Claude Code's: system blocks, thinking, beta features,
    metadata, and a system entry inside messages."""
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 32000,
        "system": [
            {"type": "text", "text": "You are Claude Code."},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Create hello.txt"}]},
            {"role": "system", "content": "Working directory: /workspace"},
        ],
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "output_config": {"effort": "medium"},
        "metadata": {"user_id": "user_abc_session_1"},
        **fields,
    }


CODEX_TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "Run a shell command",
        "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
    {"type": "web_search", "external_web_access": False},  # hosted: not for a chat model
]


def codex_request(**fields: Any) -> dict:
    """A Responses request shaped as Codex's: instructions, a developer message, input_text
    content, store false, reasoning settings."""
    return {
        "model": "gpt-5-codex",
        "instructions": "You are Codex.",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Sandbox: none."}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Create hello.txt"}],
            },
        ],
        "tools": CODEX_TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199-thread",
        **fields,
    }


# -- the scripted upstream ---------------------------------------------------------------


def data(obj: Any) -> str:
    return f"data: {json.dumps(obj)}\n\n"


def usage_chunk(tokens_in: int, tokens_out: int) -> dict:
    usage = {
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }
    return {**chunk({}), "choices": [], "usage": usage}


@dataclass
class Sse:
    """A scripted SSE answer: the texts written one after another."""

    events: list[str]


def chat_text_stream(*pieces: str, finish: bool = True) -> Sse:
    events = [data(chunk({"role": "assistant", "content": ""}))]
    events += [data(chunk({"content": p})) for p in pieces]
    if finish:
        events += [data(chunk({}, "stop")), data(usage_chunk(9, 2)), "data: [DONE]\n\n"]
    return Sse(events)


def chat_tool_stream(name: str, arguments: str) -> Sse:
    """A streamed tool call, its arguments in three fragments, as OpenAI sends it."""
    third = len(arguments) // 3
    fragments = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
    head = {"index": 0, "id": "call_7", "type": "function"}
    events = [
        data(chunk({"role": "assistant", "content": None})),
        data(chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})),
    ]
    events += [
        data(chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]})) for f in fragments
    ]
    events += [data(chunk({}, "tool_calls")), data(usage_chunk(20, 8)), "data: [DONE]\n\n"]
    return Sse(events)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict


@dataclass
class Upstream(ScriptedServer):
    """Answers every API's path from one script, in order: dicts are 200 JSON, `Sse` is a
    stream, `(status, headers)` is an error answer."""

    PATHS = ("/v1/chat/completions", "/v1/messages", "/v1/responses")
    script: list[Any] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(Seen(request.path, dict(request.headers), await request.json()))
        step = self.script.pop(0)
        if isinstance(step, tuple):
            status, headers = step
            return web.json_response(
                {"error": {"message": f"scripted {status}", "type": "server_error"}},
                status=status,
                headers=headers,
            )
        if isinstance(step, Sse):
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for event in step.events:
                await resp.write(event.encode())
            await resp.write_eof()
            return resp
        return web.json_response(step)


@contextlib.asynccontextmanager
async def client(gateway):
    connector = aiohttp.UnixConnector(path=str(gateway.socket_path))
    async with aiohttp.ClientSession(connector=connector) as http:
        yield http


async def post(
    http: aiohttp.ClientSession, path: str, body: dict, headers: dict[str, str]
) -> tuple[int, Any, dict[str, str]]:
    """Status, body (JSON, or the SSE text of a successful stream) and headers."""
    async with http.post(f"http://gateway{path}", json=body, headers=headers) as r:
        text = await r.text()
        streamed = body.get("stream") and r.status == 200
        return r.status, (text if streamed else json.loads(text)), dict(r.headers)


async def messages(http, gw, body: dict, key: str | None = None) -> tuple[int, Any, dict]:
    headers = {**CLAUDE_HEADERS, "x-api-key": gw.token if key is None else key}
    return await post(http, "/v1/messages?beta=true", body, headers)


async def responses(http, gw, body: dict) -> tuple[int, Any, dict]:
    return await post(http, "/v1/responses", body, {"Authorization": f"Bearer {gw.token}"})


def sse_events(text: str) -> list[tuple[str | None, dict]]:
    """(event name, data) of each SSE event, checking the name matches the data's type."""
    found = []
    for block in text.strip().split("\n\n"):
        name = None
        payload = ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                payload += line[6:]
        obj = json.loads(payload)
        assert name is None or name == obj["type"], block
        found.append((name, obj))
    return found


# -- Anthropic Messages, translated to a chat upstream ---------------------------------------


async def test_messages_plain_reply_is_translated_from_a_chat_upstream(upstream, key_env):
    upstream.script = [completion("Hello!")]
    recorded: list[ModelCall] = []
    async with serving(config(upstream), record=recorded.append) as gw, client(gw) as http:
        status, body, _ = await messages(http, gw, claude_request())
    assert status == 200
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["content"] == [{"type": "text", "text": "Hello!"}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"]["input_tokens"] == 7 and body["usage"]["output_tokens"] == 3
    (seen,) = upstream.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == f"Bearer {REAL_KEY}"
    assert "x-api-key" not in {k.lower() for k in seen.headers}
    assert seen.body == {  # nothing of thinking, metadata, max_tokens or beta features
        "model": MODEL,
        "messages": [
            {
                "role": "system",
                "content": "You are Claude Code.\n\nBe brief.\n\nWorking directory: /workspace",
            },
            {"role": "user", "content": "Create hello.txt"},
        ],
    }
    (call,) = recorded
    assert (call.api, call.upstream_api, call.kind, call.status) == ("messages", "chat", "ok", 200)
    assert (call.model, call.upstream_model, call.message_count) == ("claude-opus-5-5", MODEL, 2)
    assert (call.tokens_in, call.tokens_out, call.content_chars) == (7, 3, 6)
    assert call.request_hash == request_hash(claude_request())
    assert json.loads(call.response_body or "")["object"] == "chat.completion"  # upstream's


async def test_messages_stream_is_translated_event_by_event(upstream, key_env):
    upstream.script = [chat_text_stream("Hel", "lo")]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text, headers = await messages(http, gw, claude_request(stream=True))
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    events = sse_events(text)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert (start["role"], start["content"], start["model"]) == ("assistant", [], MODEL)
    assert events[1][1] == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    assert "".join(e["delta"]["text"] for n, e in events if n == "content_block_delta") == "Hello"
    delta = events[5][1]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert (delta["usage"]["input_tokens"], delta["usage"]["output_tokens"]) == (9, 2)
    assert upstream.seen[0].body["stream"] is True
    assert upstream.seen[0].body["stream_options"] == {"include_usage": True}
    (call,) = gw.calls()
    assert (call.stream, call.tokens_in, call.tokens_out, call.content_chars) == (True, 9, 2, 5)
    assert call.kind == "ok" and "[DONE]" in (call.response_body or "")


async def test_messages_tool_use_round_trip(upstream, key_env):
    upstream.script = [chat_tool_stream("Bash", '{"command": "echo hi > hello.txt"}'), completion()]
    first = claude_request(stream=True, tools=CLAUDE_TOOLS)
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text, _ = await messages(http, gw, first)
        events = sse_events(text)
        (block,) = [e["content_block"] for n, e in events if n == "content_block_start"]
        partial = [e["delta"] for n, e in events if n == "content_block_delta"]
        assert all(d["type"] == "input_json_delta" for d in partial)
        tool_input = json.loads("".join(d["partial_json"] for d in partial))
        assert block == {"type": "tool_use", "id": "call_7", "name": "Bash", "input": {}}
        assert tool_input == {"command": "echo hi > hello.txt"}
        (stop,) = [e for n, e in events if n == "message_delta"]
        assert stop["delta"]["stop_reason"] == "tool_use"

        history = first["messages"] + [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should write it.", "signature": "x"},
                    {"type": "text", "text": "Writing it."},
                    {**block, "input": tool_input},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_7",
                        "content": "",
                        "is_error": False,
                    },
                    {"type": "text", "text": "Go on."},
                ],
            },
        ]
        status2, body2, _ = await messages(
            http, gw, claude_request(messages=history, tools=CLAUDE_TOOLS)
        )
    assert (status, status2) == (200, 200) and body2["content"][0]["text"] == "Hello!"
    offered = upstream.seen[0].body["tools"]
    assert offered == [
        {
            "type": "function",
            "function": {"name": "Bash", "description": "Run a command", "parameters": SCHEMA},
        }
    ]  # the server tool (web_search) is not offered to a chat model
    sent = upstream.seen[1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[2] == {
        "role": "assistant",
        "content": "Writing it.",
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "Bash", "arguments": '{"command": "echo hi > hello.txt"}'},
            }
        ],
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "call_7", "content": ""}
    assert sent[4] == {"role": "user", "content": "Go on."}
    tooled, answered = gw.calls()
    assert (tooled.tool_calls, tooled.tokens_in, tooled.tokens_out) == (["Bash"], 20, 8)
    assert (tooled.tools_count, answered.message_count) == (2, 4)


async def test_messages_non_streamed_tool_use(upstream, key_env):
    upstream.script = [tool_completion("Bash", {"command": "ls"})]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, body, _ = await messages(http, gw, claude_request(tools=CLAUDE_TOOLS))
    assert status == 200 and body["stop_reason"] == "tool_use"
    assert body["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "ls"}}
    ]


async def test_messages_limit_refusal_is_an_anthropic_error(upstream, key_env):
    upstream.script = [completion()]
    async with serving(config(upstream, max_calls=1)) as gw, client(gw) as http:
        first, _, _ = await messages(http, gw, claude_request())
        second, body, headers = await messages(http, gw, claude_request())
        wrong, unauthorized, _ = await messages(http, gw, claude_request(), key="nope")
    assert (first, second, wrong) == (200, 429, 401)
    assert body == {
        "type": "error",
        "error": {"type": "limit_reached", "message": "model-call limit of 1 reached"},
    }
    assert headers["x-should-retry"] == "false"
    assert unauthorized["type"] == "error" and unauthorized["error"]["type"] == "unauthorized"
    assert len(upstream.seen) == 1
    assert [c.kind for c in gw.calls()] == ["ok", "limit"]


async def test_messages_429_is_retried_and_a_4xx_is_an_anthropic_error(upstream, key_env):
    upstream.script = [(429, {"Retry-After": "0"}), completion(), (400, {})]
    waits = Sleeps()
    async with serving(config(upstream), sleep=waits) as gw, client(gw) as http:
        status, body, _ = await messages(http, gw, claude_request())
        bad, error, _ = await messages(http, gw, claude_request())
    assert status == 200 and body["content"][0]["text"] == "Hello!"
    assert waits.waits == [0.0]
    retried, refused = gw.calls()
    assert (retried.kind, retried.attempts) == ("ok", 2)
    assert [(f.attempt, f.status) for f in retried.infra_failures] == [(1, 429)]
    assert bad == 400 and refused.kind == "agent_error"
    assert error == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "scripted 400"},
    }


async def test_a_translated_stream_cut_short_ends_in_an_error_event(upstream, key_env):
    upstream.script = [chat_text_stream("Hel", finish=False)]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text, _ = await messages(http, gw, claude_request(stream=True))
    events = sse_events(text)
    assert status == 200 and events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"
    (call,) = gw.calls()
    assert call.kind == "infra" and "ended before it finished" in (call.error or "")


# -- OpenAI Responses, translated to a chat upstream ------------------------------------------


async def test_responses_plain_reply_is_translated_from_a_chat_upstream(upstream, key_env):
    upstream.script = [completion("Hello!")]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, body, _ = await responses(http, gw, codex_request())
    assert status == 200
    assert (body["object"], body["status"], body["model"]) == ("response", "completed", MODEL)
    (item,) = body["output"]
    assert (item["type"], item["role"]) == ("message", "assistant")
    assert item["content"] == [{"type": "output_text", "text": "Hello!", "annotations": []}]
    assert body["usage"] == {
        "input_tokens": 7,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10,
    }
    (seen,) = upstream.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == f"Bearer {REAL_KEY}"
    assert seen.body == {  # no reasoning, store, include or hosted tools
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are Codex.\n\nSandbox: none."},
            {"role": "user", "content": "Create hello.txt"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "exec_command",
                    "description": "Run a shell command",
                    "parameters": CODEX_TOOLS[0]["parameters"],
                },
            }
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
    }
    (call,) = gw.calls()
    assert (call.api, call.upstream_api, call.kind) == ("responses", "chat", "ok")
    assert (call.message_count, call.tools_count, call.tokens_in, call.tokens_out) == (2, 2, 7, 3)


async def test_responses_stream_is_translated_event_by_event(upstream, key_env):
    upstream.script = [chat_text_stream("Hel", "lo")]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text, _ = await responses(http, gw, codex_request(stream=True))
    assert status == 200
    events = sse_events(text)
    assert [n for n, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for _, e in events] == list(range(1, 11))
    assert events[6][1]["text"] == "Hello"
    done = events[-1][1]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0]["text"] == "Hello"
    assert done["output"][0]["id"] == events[2][1]["item"]["id"]
    assert (done["usage"]["input_tokens"], done["usage"]["output_tokens"]) == (9, 2)
    assert done["usage"]["total_tokens"] == 11
    (call,) = gw.calls()
    assert (call.stream, call.tokens_in, call.tokens_out, call.content_chars) == (True, 9, 2, 5)


async def test_responses_tool_call_round_trip(upstream, key_env):
    upstream.script = [
        chat_tool_stream("exec_command", '{"cmd": "ls -la"}'),
        chat_text_stream("Done."),
    ]
    async with serving(config(upstream)) as gw, client(gw) as http:
        status, text, _ = await responses(http, gw, codex_request(stream=True))
        events = sse_events(text)
        names = [n for n, _ in events]
        assert "response.function_call_arguments.delta" in names
        (args_done,) = [e for n, e in events if n == "response.function_call_arguments.done"]
        assert args_done["arguments"] == '{"cmd": "ls -la"}'
        (item,) = [e["item"] for n, e in events if n == "response.output_item.done"]
        assert (item["type"], item["call_id"], item["name"]) == (
            "function_call",
            "call_7",
            "exec_command",
        )
        assert events[-1][1]["response"]["output"] == [item]

        request = codex_request(stream=True)
        request["input"] = request["input"] + [
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
            {key: item[key] for key in ("type", "call_id", "name", "arguments")},
            {"type": "function_call_output", "call_id": "call_7", "output": "hello.txt"},
        ]  # fmt: skip
        status2, text2, _ = await responses(http, gw, request)
    assert (status, status2) == (200, 200)
    assert sse_events(text2)[-1][1]["response"]["output"][0]["content"][0]["text"] == "Done."
    sent = upstream.seen[1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2] == {
        "role": "assistant",
        "content": "Listing.",
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "exec_command", "arguments": '{"cmd": "ls -la"}'},
            }
        ],
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "call_7", "content": "hello.txt"}
    tooled, _ = gw.calls()
    assert (tooled.tool_calls, tooled.tokens_in, tooled.tokens_out) == (["exec_command"], 20, 8)


async def test_responses_limit_refusal_and_a_retried_429(upstream, key_env):
    upstream.script = [(503, {}), completion(tokens_in=8, tokens_out=4)]
    waits = Sleeps()
    async with (
        serving(config(upstream, max_tokens=10), sleep=waits) as gw,
        client(gw) as http,
    ):
        first, _, _ = await responses(http, gw, codex_request())
        second, body, headers = await responses(http, gw, codex_request())
    assert (first, second) == (200, 429)
    assert body == {
        "error": {"type": "limit_reached", "message": "token limit of 10 reached (12 used)"}
    }
    assert headers["x-should-retry"] == "false"
    assert waits.waits == [0.25] and len(upstream.seen) == 2
    served, refused = gw.calls()
    assert (served.attempts, served.tokens_in + served.tokens_out) == (2, 12)
    assert refused.kind == "limit"


async def test_the_openai_sdk_consumes_the_translated_responses_stream(upstream, key_env):
    upstream.script = [
        chat_text_stream("Hel", "lo"),
        chat_tool_stream("exec_command", '{"cmd": "ls"}'),
        completion("Plain."),
    ]
    async with serving(config(upstream)) as gw:
        http = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(gw.socket_path)))
        oa = openai.AsyncOpenAI(
            base_url="http://gateway/v1", api_key=gw.token, http_client=http, max_retries=0
        )
        request = codex_request()
        del request["model"]
        stream = await oa.responses.create(model="anything", stream=True, **request)
        kinds, text = [], ""
        async for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
            if event.type == "response.completed":
                completed = event.response
        async with oa.responses.stream(model="anything", **request) as helper:
            async for _ in helper:
                pass
            final = await helper.get_final_response()
        plain = await oa.responses.create(model="anything", **request)
        await oa.close()
    assert text == "Hello" and kinds[0] == "response.created"
    assert completed.output_text == "Hello"
    assert completed.usage is not None and completed.usage.total_tokens == 11
    (call,) = final.output
    assert (call.type, call.name, call.arguments, call.call_id) == (
        "function_call",
        "exec_command",
        '{"cmd": "ls"}',
        "call_7",
    )
    assert plain.output_text == "Plain." and plain.usage is not None
    assert [c.kind for c in gw.calls()] == ["ok", "ok", "ok"]


# -- pass-through to an upstream speaking the agent's API --------------------------------------


def anthropic_stream() -> Sse:
    def ev(obj: dict) -> str:
        return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n"

    usage = {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}
    start = {"id": "msg_up", "type": "message", "role": "assistant", "model": MODEL,
             "content": [], "usage": usage}  # fmt: skip
    return Sse(
        [
            ev({"type": "message_start", "message": start}),
            ev({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ev({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Hi"}}),
            ev({"type": "content_block_stop", "index": 0}),
            ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 12}}),
            ev({"type": "message_stop"}),
        ]
    )  # fmt: skip


async def test_messages_pass_through_to_a_messages_upstream(upstream, key_env):
    upstream.script = [anthropic_stream()]
    cfg = config(upstream, wire_api=WireApi.MESSAGES)
    async with serving(cfg) as gw, client(gw) as http:
        status, text, _ = await messages(http, gw, claude_request(stream=True))
    assert status == 200 and text == "".join(anthropic_stream().events)
    (seen,) = upstream.seen
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == REAL_KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["anthropic-beta"] == CLAUDE_HEADERS["anthropic-beta"]
    assert "Authorization" not in seen.headers
    expected = claude_request(stream=True)
    assert seen.body["model"] == MODEL
    assert seen.body["messages"] == expected["messages"][:1]  # the system entry moved ...
    assert seen.body["system"][-1] == {"type": "text", "text": "Working directory: /workspace"}
    for key in ("thinking", "context_management", "output_config", "metadata", "max_tokens"):
        assert seen.body[key] == expected[key]  # ... everything else as the agent sent it
    (call,) = gw.calls()
    assert (call.api, call.upstream_api, call.kind) == ("messages", "messages", "ok")
    assert (call.tokens_in, call.tokens_out, call.content_chars) == (105, 12, 2)
    assert call.finish_reason == "end_turn"


def responses_stream() -> Sse:
    item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}  # fmt: skip
    usage = {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 30},
             "output_tokens": 6, "output_tokens_details": {"reasoning_tokens": 4},
             "total_tokens": 46}  # fmt: skip
    response = {"id": "resp_up", "object": "response", "status": "completed", "model": MODEL,
                "output": [item], "usage": usage}  # fmt: skip
    events = [
        {"type": "response.created", "sequence_number": 1,
         "response": {**response, "status": "in_progress", "output": [], "usage": None}},
        {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
         "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.output_text.delta", "sequence_number": 3, "output_index": 0,
         "item_id": "msg_1", "content_index": 0, "delta": "Hi"},
        {"type": "response.output_item.done", "sequence_number": 4, "output_index": 0,
         "item": item},
        {"type": "response.completed", "sequence_number": 5, "response": response},
    ]  # fmt: skip
    return Sse([f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events])


async def test_responses_pass_through_to_a_responses_upstream(upstream, key_env):
    upstream.script = [responses_stream()]
    cfg = config(upstream, wire_api=WireApi.RESPONSES)
    async with serving(cfg) as gw, client(gw) as http:
        status, text, _ = await post(
            http, "/responses", codex_request(stream=True), {"Authorization": f"Bearer {gw.token}"}
        )  # relative to a base URL given without /v1
    assert status == 200 and text == "".join(responses_stream().events)
    (seen,) = upstream.seen
    assert seen.path == "/v1/responses"
    assert seen.headers["Authorization"] == f"Bearer {REAL_KEY}"
    assert seen.body == {**codex_request(stream=True), "model": MODEL}  # web_search kept
    (call,) = gw.calls()
    assert (call.api, call.upstream_api, call.tokens_in, call.tokens_out) == (
        "responses",
        "responses",
        40,
        6,
    )
    assert (call.content_chars, call.finish_reason) == (2, "completed")


async def test_an_api_that_cannot_be_translated_is_refused_in_the_agents_shape(upstream, key_env):
    cfg = config(upstream, wire_api=WireApi.MESSAGES)
    async with serving(cfg) as gw, client(gw) as http:
        status, body, _ = await responses(http, gw, codex_request())
        chat_status, chat_body, _ = await post(
            http,
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}]},
            {"Authorization": f"Bearer {gw.token}"},
        )
    assert (status, chat_status) == (501, 501) and upstream.seen == []
    assert body["error"]["type"] == "unsupported_api"
    assert "OpenAI Responses" in body["error"]["message"]
    assert "Anthropic Messages" in body["error"]["message"]
    assert chat_body["error"]["type"] == "unsupported_api"
    assert [(c.kind, c.attempts) for c in gw.calls()] == [("infra", 0), ("infra", 0)]
    assert gw.calls_forwarded == 0


# -- replay ------------------------------------------------------------------------------------


async def test_messages_and_responses_calls_replay_without_upstream(upstream, key_env):
    upstream.script = [
        completion("Hello!"),
        chat_tool_stream("Bash", '{"command": "ls"}'),
        chat_text_stream("Hel", "lo"),
        tool_completion("exec_command", {"cmd": "ls"}),
    ]

    async def session(gw) -> list:
        async with client(gw) as http:
            return [
                await messages(http, gw, claude_request()),
                await messages(http, gw, claude_request(stream=True, tools=CLAUDE_TOOLS)),
                await responses(http, gw, codex_request(stream=True)),
                await responses(http, gw, codex_request()),
            ]

    async with serving(config(upstream)) as gw:
        live = await session(gw)
    recording = dump_calls(gw.calls())
    await upstream.stop()

    replay_cfg = GatewayConfig(model=MODEL)  # no endpoint, no key
    async with serving(replay_cfg, upstream=ReplayUpstream(load_calls(recording))) as gw:
        replayed = await session(gw)
    assert [(s, b) for s, b, _ in replayed] == [(s, b) for s, b, _ in live]
    assert [c.kind for c in gw.calls()] == ["ok"] * 4
    assert [(c.tokens_in, c.tokens_out) for c in gw.calls()] == [(7, 3), (20, 8), (9, 2), (11, 5)]

    async with (
        serving(replay_cfg, upstream=ReplayUpstream(load_calls(recording))) as gw,
        client(gw) as http,
    ):
        other = codex_request()  # a Responses call where the recording has a Messages one
        status, body, _ = await responses(http, gw, other)
        same, _, _ = await messages(http, gw, claude_request())
        changed = claude_request(stream=True, tools=CLAUDE_TOOLS, system="Another prompt.")
        diverged, why, _ = await messages(http, gw, changed)
    assert status == 409 and body["error"]["type"] == "replay_divergence"
    assert (
        "the agent speaks OpenAI Responses, recorded Anthropic Messages" in body["error"]["message"]
    )
    assert same == 200
    assert diverged == 409 and why["type"] == "error"
    assert why["error"] == {
        "type": "replay_divergence",
        "message": "call 2: system differs",
        "call": 2,
    }


async def test_a_passed_through_call_replays_as_recorded(upstream, key_env):
    upstream.script = [responses_stream()]
    async with serving(config(upstream, wire_api=WireApi.RESPONSES)) as gw, client(gw) as http:
        live = await responses(http, gw, codex_request(stream=True))
    recording = load_calls(dump_calls(gw.calls()))
    assert recording[0].upstream_api == "responses"
    # the configuration now says chat: the recording's upstream still spoke Responses
    async with (
        serving(GatewayConfig(model=MODEL), upstream=ReplayUpstream(recording)) as gw,
        client(gw) as http,
    ):
        replayed = await responses(http, gw, codex_request(stream=True))
    assert replayed[:2] == live[:2]
    assert gw.calls()[0].tokens_in == 40


# -- pure translation details --------------------------------------------------------------


def test_request_hash_covers_what_each_api_keeps_outside_its_messages():
    base = claude_request()
    assert request_hash(base) != request_hash({**base, "system": "other"})
    assert request_hash(base) == request_hash({**base, "metadata": {"user_id": "other"}})
    codex = codex_request()
    assert request_hash(codex) != request_hash({**codex, "instructions": "other"})
    assert request_hash(codex) != request_hash({**codex, "input": codex["input"][:1]})
    chat = {"messages": [{"role": "user", "content": "hi"}], "tools": []}
    assert request_hash(chat) == request_hash({**chat, "model": "x", "temperature": 0})


def test_responses_input_string_and_later_developer_messages():
    out = responses_api.request_to_chat(
        {"input": "hi", "instructions": "", "tools": [], "tool_choice": "auto"}
    )
    assert out == {"messages": [{"role": "user", "content": "hi"}]}  # no tools: no tool_choice
    out = responses_api.request_to_chat(
        {
            "input": [
                {"role": "user", "content": "a"},
                {"role": "developer", "content": "mode changed"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "1"},
                {"type": "function_call_output", "call_id": "c2", "output": "2"},
            ]
        }
    )
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "system", "assistant", "tool", "tool"]
    assert [c["id"] for c in out["messages"][2]["tool_calls"]] == ["c1", "c2"]  # one turn


def test_anthropic_images_and_tool_choice_translate():
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": "AAAA"}},
                ],
            }
        ],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    }  # fmt: skip
    out = anthropic_api.request_to_chat(body)
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    assert (out["tool_choice"], out["parallel_tool_calls"]) == ("required", False)
    assert anthropic_api.tool_input("not json") == {"_unparsed_arguments": "not json"}


def test_agent_env_gives_claude_code_its_base_url_and_key():
    config_ = GatewayConfig(model=MODEL)
    from icae_tui.gateway import ModelGateway

    gw = ModelGateway(config_)
    try:
        env = gw.agent_env(8787)
    finally:
        import shutil

        shutil.rmtree(gw.folder, ignore_errors=True)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8787"  # Claude Code adds /v1/messages
    assert env["ANTHROPIC_API_KEY"] == gw.token
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:8787/v1"
    assert "ANTHROPIC_AUTH_TOKEN" not in env
