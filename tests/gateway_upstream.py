"""The gateway tests' model endpoint: a scripted aiohttp server on 127.0.0.1 (a free port)
standing in for the upstream, and the gateway's config pointed at it. Each test module's
`Upstream` says how it answers; the `upstream` and `key_env` fixtures (tests/conftest.py)
serve it and put its key where the config says."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from icae_tui.gateway import GatewayConfig

KEY_ENV = "ICAE_TEST_UPSTREAM_KEY"
REAL_KEY = "sk-real-key-never-in-the-container"
MODEL = "forced-model-1"


# --- what an upstream answers -----------------------------------------------------------------


def completion(text: str = "Hello!", tokens_in: int = 7, tokens_out: int = 3) -> dict:
    """A Chat Completions reply: `text`, its usage."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
    }


def tool_completion(name: str, arguments: dict) -> dict:
    """A Chat Completions reply calling the tool `name` with `arguments`."""
    body = completion(tokens_in=11, tokens_out=5)
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def chunk(delta: dict, finish: str | None = None) -> dict:
    """One chunk of a streamed Chat Completions reply."""
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


# --- the server -------------------------------------------------------------------------------


class ScriptedServer:
    """Serves POSTs at `PATHS` with `_answer` (a subclass's) on 127.0.0.1; `url` is its base
    (http://127.0.0.1:PORT/v1) once started."""

    PATHS: tuple[str, ...] = ("/v1/chat/completions",)
    runner: web.AppRunner | None = None
    url: str = ""

    async def start(self) -> None:
        app = web.Application()
        for path in self.PATHS:
            app.router.add_post(path, self._answer)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/v1"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError


def config(upstream: ScriptedServer, **settings: Any) -> GatewayConfig:
    """The gateway's config for `upstream`: its model forced, its key read from KEY_ENV, a
    back-off of 0.25 s (recorded, never waited: the tests' sleeps are `Sleeps`)."""
    return GatewayConfig(
        base_url=upstream.url, model=MODEL, api_key_env=KEY_ENV, backoff_base_s=0.25, **settings
    )
