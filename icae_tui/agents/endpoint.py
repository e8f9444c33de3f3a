"""The model agent's client of the run's gateway: Chat Completions over the gateway's Unix
socket with the run's token, streamed or not. The gateway's refusals and failures become
the reason the agent stops (AgentStop)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from icae_tui.agents.base import OnDelta
from icae_tui.domain.agent import AgentStop
from icae_tui.domain.states import StopReason
from icae_tui.util.safe_text import lines as text_lines

URL = "http://gateway/v1/chat/completions"  # the host part is ignored on a Unix socket


class EndpointRefused(AgentStop):
    """The endpoint refused the request (HTTP 4xx, not a limit): the agent's fault, unless
    the agent can ask otherwise (the model agent drops a reply constraint on a 400)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(StopReason.AGENT_ERROR, detail)
        self.status = status


class GatewayEndpoint:
    def __init__(self, socket_path: Path, token: str) -> None:
        self._socket = str(socket_path)
        self._token = token
        self._session: aiohttp.ClientSession | None = None

    async def complete(
        self, body: dict[str, Any], on_delta: OnDelta | None = None
    ) -> dict[str, Any]:
        if self._session is None:
            # no total timeout (aiohttp's default is 300 s): the gateway bounds the upstream's
            # silence and the run's clock the whole; a CPU model's long reply takes minutes
            self._session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=self._socket),
                timeout=aiohttp.ClientTimeout(total=None),
            )
        headers = {"Authorization": f"Bearer {self._token}"}
        body = {**body, "stream": on_delta is not None}
        try:
            async with self._session.post(URL, json=body, headers=headers) as resp:
                if resp.status == 200 and on_delta is not None:
                    return await _assemble(resp, on_delta)
                text = await resp.text()
                data = _json(text)
                if resp.status == 200 and isinstance(data, dict):
                    return data
        except aiohttp.ClientError as err:  # the gateway went away, or the stream broke
            raise AgentStop(StopReason.INFRA_ERROR, f"model gateway: {err}") from None
        raise _refusal(resp.status, data, text)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _refusal(status: int, data: Any, text: str) -> AgentStop:
    error = data.get("error", {}) if isinstance(data, dict) else {}
    error = error if isinstance(error, dict) else {}
    message = error.get("message") or text[:300] or f"HTTP {status}"
    kind = error.get("type", "")
    if kind == "limit_reached":
        return AgentStop(StopReason.MODEL_LIMIT, message)
    if status == 429 or status >= 500 or kind == "replay_divergence":
        return AgentStop(StopReason.INFRA_ERROR, f"model endpoint: {message}")
    return EndpointRefused(status, f"model endpoint refused the request: {message}")


async def _assemble(resp: aiohttp.ClientResponse, on_delta: OnDelta) -> dict[str, Any]:
    """Read an SSE stream of chat.completion.chunk events into one non-streamed reply,
    passing each text piece on as it arrives. A stream that ends without [DONE] or with an
    error event is an infrastructure failure (the gateway records why)."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    done = False
    pending = b""
    async for chunk in resp.content.iter_any():
        pending += chunk
        *events, pending = pending.replace(b"\r\n", b"\n").split(b"\n\n")
        for event in events:
            for line in text_lines(event.decode("utf-8", "replace")):
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    done = True
                    continue
                data = _json(payload)
                if not isinstance(data, dict):
                    continue
                if "error" in data:
                    raise _refusal(502, data, payload)
                for choice in data.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if piece := delta.get("content"):
                        content.append(piece)
                        await on_delta(piece)
                    for tc in delta.get("tool_calls") or []:
                        _merge_tool_call(calls, tc)
                    finish = choice.get("finish_reason") or finish
    if not done and finish is None:
        raise AgentStop(StopReason.INFRA_ERROR, "model endpoint: the stream ended early")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def _merge_tool_call(calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    """Tool calls stream in pieces keyed by index: the id and name once, the arguments in
    fragments to concatenate."""
    index = delta.get("index", len(calls))
    call = calls.setdefault(
        index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
    )
    call["id"] = delta.get("id") or call["id"]
    fn = delta.get("function") or {}
    if fn.get("name") and not call["function"]["name"]:
        call["function"]["name"] = fn["name"]
    call["function"]["arguments"] += fn.get("arguments") or ""
