"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 only.

`behaviour(request_json)` decides each completion: its content (a str), or a `Choice` (content
and log-probabilities), or an `aiohttp.web.Response` sent as it is (an HTTP error); every
request is kept in `requests` so tests can check what the model was shown.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Choice:
    content: str
    logprobs: dict[str, Any] | None = None  # the choice's `logprobs`, as llama.cpp gives it


class OpenAIStub:
    def __init__(self, behaviour: Callable[[dict[str, Any]], Any]) -> None:
        self.behaviour = behaviour
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        out = self.behaviour(body)
        if isinstance(out, web.Response):
            return out
        choice = out if isinstance(out, Choice) else Choice(out)
        return web.json_response(
            {
                "id": f"stub-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stub"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": choice.content},
                        "logprobs": choice.logprobs,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


@contextlib.asynccontextmanager
async def serve(behaviour: Callable[[dict[str, Any]], Any]) -> AsyncIterator[OpenAIStub]:
    stub = OpenAIStub(behaviour)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", stub._completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # noqa: SLF001 - the bound port
    stub.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield stub
    finally:
        await runner.cleanup()


def candidate_ids(request: dict[str, Any]) -> list[str]:
    """The record ids offered in the prompt (lines like `[C001] text`)."""
    user = request["messages"][-1]["content"]
    return [line[1 : line.index("]")] for line in user.splitlines() if line.startswith("[")]


def as_json(records: list[str], answer: str = "") -> str:
    return json.dumps({"records": records, "answer": answer})
