"""Where the gateway sends calls: a real model endpoint, or a recording."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import aiohttp

from icae_tui.errors import ConfigError, IcaeError, InfraError
from icae_tui.gateway.models import (
    API_NAMES,
    CONVERSATION_KEYS,
    GatewayConfig,
    ModelCall,
    WireApi,
    canonical,
    request_hash,
)

# Where each API's calls go, under the endpoint's base URL (which ends in /v1 or the like).
API_PATHS = {
    WireApi.CHAT: "/chat/completions",
    WireApi.MESSAGES: "/messages",
    WireApi.RESPONSES: "/responses",
}
ANTHROPIC_VERSION = "2023-06-01"


class UpstreamUnreachable(InfraError):
    """No HTTP answer at all (refused, reset, timed out): retried as an infra failure."""


class ReplayDivergence(IcaeError):
    """The request does not match the recording at this position."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


class MissingKey(ConfigError):
    """The named environment variable holding the upstream key is unset or empty."""


class UpstreamResponse(Protocol):
    @property  # read-only: an implementation may hold a narrower mapping type
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    def release(self) -> None: ...


class Upstream(Protocol):
    wire_api: WireApi  # what this upstream speaks, so what `body` is in and the reply is in

    async def send(
        self,
        body: dict[str, Any],
        *,
        original: dict[str, Any],
        api: WireApi = WireApi.CHAT,
        headers: Mapping[str, str] | None = None,
    ) -> UpstreamResponse:
        """`body` is what goes upstream (model forced, translated when `api`, the agent's
        API that `original` is in, is not `wire_api`); `headers` are the agent's headers the
        upstream also needs (e.g. anthropic-beta when passing Messages through)."""
        ...

    async def close(self) -> None: ...


class _HttpResponse:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers

    async def read(self) -> bytes:
        try:
            return await self._resp.read()
        except (aiohttp.ClientError, TimeoutError) as err:
            raise UpstreamUnreachable(f"{type(err).__name__}: {err}") from err
        finally:
            self._resp.release()

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self._resp.content.iter_any():
            yield chunk

    def release(self) -> None:
        self._resp.release()


# What a reused connection closed by the server raises: writing to it, or reading no reply.
STALE_CONNECTION = (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)


class HttpUpstream:
    """Plain HTTP to `config.base_url` in `config.wire_api`, with the real key from the named
    env variable, sent the way that API wants it."""

    def __init__(self, config: GatewayConfig) -> None:
        self.wire_api = config.wire_api
        # No variable named: an endpoint without a key (a local vLLM or Ollama server).
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        if config.api_key_env and not key:
            raise MissingKey(f"the upstream key variable {config.api_key_env} is not set")
        self._key = key
        self._url = config.base_url.rstrip("/") + API_PATHS[config.wire_api]
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=30, sock_read=config.timeout_s
        )
        self._session: aiohttp.ClientSession | None = None

    async def send(
        self,
        body: dict[str, Any],
        *,
        original: dict[str, Any],
        api: WireApi = WireApi.CHAT,
        headers: Mapping[str, str] | None = None,
    ) -> _HttpResponse:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        sent = {**(headers or {}), "Content-Type": "application/json"}
        if self.wire_api == WireApi.MESSAGES:
            sent["anthropic-version"] = ANTHROPIC_VERSION
            if self._key:
                sent["x-api-key"] = self._key
        elif self._key:
            sent["Authorization"] = f"Bearer {self._key}"
        data = canonical(body)
        try:
            try:
                resp = await self._session.post(self._url, data=data, headers=sent)
            except STALE_CONNECTION:
                # A pooled connection the server dropped while idle (llama.cpp's server keeps
                # one 5 s; an agent's command often runs longer): once more, on a fresh one.
                resp = await self._session.post(self._url, data=data, headers=sent)
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            raise UpstreamUnreachable(f"{type(err).__name__}: {err}") from err
        return _HttpResponse(resp)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


class _RecordedResponse:
    def __init__(self, status: int, body: bytes, content_type: str) -> None:
        self.status = status
        self.headers = {"Content-Type": content_type}
        self._body = body

    async def read(self) -> bytes:
        return self._body

    async def chunks(self) -> AsyncIterator[bytes]:
        for event in self._body.split(b"\n\n"):
            if event.strip():
                yield event + b"\n\n"

    def release(self) -> None:
        pass


class ReplayUpstream:
    """Serves recorded calls back in order; the n-th forwarded request must match the n-th
    replayable recording (same agent API, same canonical hash of the request as the agent
    sent it, same stream flag). Calls that never got an upstream answer (limits, infra,
    divergence) are skipped.

    It speaks what the recorded upstream spoke, whatever the configuration says now: the
    recorded replies are the upstream's, so a translated call is translated again the same
    way, and a passed-through one is passed through."""

    def __init__(self, calls: list[ModelCall]) -> None:
        self._calls = [c for c in calls if c.kind in ("ok", "agent_error")]
        for c in self._calls:
            if not c.replayable:
                raise ValueError(f"recorded call {c.index} cannot be replayed (body truncated)")
        spoken = {c.upstream_api for c in self._calls}
        if len(spoken) > 1:
            raise ValueError(f"the recording mixes upstream APIs: {sorted(spoken)}")
        self.wire_api = spoken.pop() if spoken else WireApi.CHAT
        self._next = 0

    @property
    def remaining(self) -> int:
        return len(self._calls) - self._next

    async def send(
        self,
        body: dict[str, Any],
        *,
        original: dict[str, Any],
        api: WireApi = WireApi.CHAT,
        headers: Mapping[str, str] | None = None,
    ) -> _RecordedResponse:
        position = self._next + 1
        if self._next >= len(self._calls):
            raise ReplayDivergence(
                position, f"call {position}: the recording has only {len(self._calls)} call(s)"
            )
        rec = self._calls[self._next]
        if api != rec.api:
            raise ReplayDivergence(
                position,
                f"call {position}: the agent speaks {API_NAMES[api]}, "
                f"recorded {API_NAMES[rec.api]}",
            )
        stream = bool(original.get("stream"))
        if request_hash(original) != rec.request_hash or stream != rec.stream:
            raise ReplayDivergence(position, f"call {position}: {_difference(rec, original)}")
        self._next += 1
        assert rec.response_body is not None and rec.upstream_status is not None
        ctype = "text/event-stream" if rec.stream else "application/json"
        return _RecordedResponse(rec.upstream_status, rec.response_body.encode(), ctype)

    async def close(self) -> None:
        pass


def _difference(rec: ModelCall, body: dict[str, Any]) -> str:
    if bool(body.get("stream")) != rec.stream:
        return f"stream is {bool(body.get('stream'))}, recorded {rec.stream}"
    try:
        old = json.loads(rec.request_body or "{}")
    except ValueError:
        old = {}
    parts = []
    # the conversation: `messages` (Chat Completions, Messages) or `input` items (Responses)
    key, what = ("input", "input items") if "input" in body else ("messages", "messages")
    old_msgs, new_msgs = old.get(key) or [], body.get(key) or []
    if isinstance(old_msgs, str) or isinstance(new_msgs, str):
        old_msgs, new_msgs = [old_msgs], [new_msgs]
    if canonical(old_msgs) != canonical(new_msgs):
        if len(old_msgs) != len(new_msgs):
            parts.append(f"{len(new_msgs)} {what}, recorded {len(old_msgs)}")
        else:
            first = next(
                i for i, (a, b) in enumerate(zip(old_msgs, new_msgs, strict=True))
                if canonical(a) != canonical(b)
            )  # fmt: skip
            parts.append(f"{what[:-1]} {first} differs")
    parts += [
        f"{k} differs"
        for k in CONVERSATION_KEYS
        if k != "input" and canonical(old.get(k) or None) != canonical(body.get(k) or None)
    ]
    if canonical(old.get("tools") or []) != canonical(body.get("tools") or []):
        parts.append("tools differ")
    return "; ".join(parts) or "request hash differs from the recording"
