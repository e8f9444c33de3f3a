"""Where the gateway sends calls: a real OpenAI-compatible endpoint, or a recording."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import aiohttp

from icae_tui.gateway.models import GatewayConfig, ModelCall, canonical, request_hash


class UpstreamUnreachable(Exception):
    """No HTTP answer at all (refused, reset, timed out): retried as an infra failure."""


class ReplayDivergence(Exception):
    """The request does not match the recording at this position."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


class MissingKey(Exception):
    """The named environment variable holding the upstream key is unset or empty."""


class UpstreamResponse(Protocol):
    status: int
    headers: Mapping[str, str]

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    def release(self) -> None: ...


class Upstream(Protocol):
    async def send(self, body: dict[str, Any], *, original: dict[str, Any]) -> UpstreamResponse:
        """`body` is what goes upstream (model forced); `original` is what the agent sent."""
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


class HttpUpstream:
    """Plain HTTP to `config.base_url`, with the real key from the named env variable."""

    def __init__(self, config: GatewayConfig) -> None:
        # No variable named: an endpoint without a key (a local vLLM or Ollama server).
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        if config.api_key_env and not key:
            raise MissingKey(f"the upstream key variable {config.api_key_env} is not set")
        self._key = key
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=30, sock_read=config.timeout_s
        )
        self._session: aiohttp.ClientSession | None = None

    async def send(self, body: dict[str, Any], *, original: dict[str, Any]) -> _HttpResponse:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        try:
            resp = await self._session.post(self._url, data=canonical(body), headers=headers)
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
    replayable recording (same canonical hash of messages + tools, same stream flag).
    Calls that never got an upstream answer (limits, infra, divergence) are skipped."""

    def __init__(self, calls: list[ModelCall]) -> None:
        self._calls = [c for c in calls if c.kind in ("ok", "agent_error")]
        for c in self._calls:
            if not c.replayable:
                raise ValueError(f"recorded call {c.index} cannot be replayed (body truncated)")
        self._next = 0

    @property
    def remaining(self) -> int:
        return len(self._calls) - self._next

    async def send(self, body: dict[str, Any], *, original: dict[str, Any]) -> _RecordedResponse:
        position = self._next + 1
        if self._next >= len(self._calls):
            raise ReplayDivergence(
                position, f"call {position}: the recording has only {len(self._calls)} call(s)"
            )
        rec = self._calls[self._next]
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
    import json

    try:
        old = json.loads(rec.request_body or "{}")
    except ValueError:
        old = {}
    parts = []
    old_msgs, new_msgs = old.get("messages") or [], body.get("messages") or []
    if canonical(old_msgs) != canonical(new_msgs):
        if len(old_msgs) != len(new_msgs):
            parts.append(f"{len(new_msgs)} messages, recorded {len(old_msgs)}")
        else:
            first = next(
                i for i, (a, b) in enumerate(zip(old_msgs, new_msgs, strict=True))
                if canonical(a) != canonical(b)
            )  # fmt: skip
            parts.append(f"message {first} differs")
    if canonical(old.get("tools") or []) != canonical(body.get("tools") or []):
        parts.append("tools differ")
    return "; ".join(parts) or "request hash differs from the recording"
