"""The host-side model gateway: every model call of a run goes through it.

It serves OpenAI-compatible Chat Completions (`POST /v1/chat/completions`, plain and SSE
streaming, tool calls passed through) on a per-run Unix socket, and forwards each call to
the configured upstream with the model forced to the configured one. The agent holds only a
per-run token; the real key stays on the host and is added here. Every call is recorded
(`ModelCall`), the run's limits (calls, tokens, cost) are enforced with HTTP 429, and upstream
429/5xx/connection failures are retried with back-off before any byte reaches the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from icae_tui.gateway.models import GatewayConfig, InfraFailure, ModelCall, cap, request_hash
from icae_tui.gateway.upstream import (
    HttpUpstream,
    ReplayDivergence,
    Upstream,
    UpstreamResponse,
    UpstreamUnreachable,
)

SOCKET_NAME = "model.sock"
FOLDER_PREFIX = "icae-model-"  # then `<owner pid>-`, as the clarification socket's folder
CONTAINER_DIR = "/run/icae-model"
PROXY_ASSET = Path(__file__).parent / "assets" / "icae-model-proxy"
RETRYABLE = frozenset({429, 500, 502, 503, 504})
REQUEST_MAX = 32 * 1024 * 1024  # long conversations are big

Recorder = Callable[[ModelCall], Any]  # may return an awaitable


def model_proxy_script() -> bytes:
    return PROXY_ASSET.read_bytes()


def _error(status: int, kind: str, message: str, **headers: str) -> web.Response:
    return web.json_response(
        {"error": {"type": kind, "message": message}}, status=status, headers=headers or None
    )


class ModelGateway:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        upstream: Upstream | None = None,
        record: Recorder | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.config = config
        self.upstream: Upstream = upstream if upstream is not None else HttpUpstream(config)
        self.token = secrets.token_urlsafe(32)  # the agent's credential; never the real key
        self._record = record
        self._sleep = sleep
        self._calls: list[ModelCall] = []
        self._next_index = 0
        self.calls_forwarded = 0
        self.tokens_used = 0
        self.cost_spent = 0.0
        self.stop_reason: str | None = None  # the first limit reached, if any
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def socket_path(self) -> Path:
        return self.folder / SOCKET_NAME

    @property
    def bind(self) -> str:
        return f"{self.folder}:{CONTAINER_DIR}:ro"

    def agent_env(self, port: int) -> dict[str, str]:
        """What an ordinary OpenAI client inside the container needs (with the forwarder)."""
        return {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": self.token,
            "OPENAI_MODEL": self.config.model,
        }

    def calls(self) -> list[ModelCall]:
        return list(self._calls)

    async def start(self) -> None:
        app = web.Application(client_max_size=REQUEST_MAX)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.UnixSite(self._runner, str(self.socket_path)).start()
        os.chmod(self.socket_path, 0o666)

    async def close(self) -> None:
        try:
            try:
                if self._runner is not None:
                    await self._runner.cleanup()
            finally:
                await self.upstream.close()
        finally:  # even when cancelled meanwhile: the folder must not outlive the run
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- limits ----------------------------------------------------------------------------

    def _limit_reason(self) -> str | None:
        c = self.config
        if c.max_calls is not None and self.calls_forwarded >= c.max_calls:
            return f"model-call limit of {c.max_calls} reached"
        if c.max_tokens is not None and self.tokens_used >= c.max_tokens:
            return f"token limit of {c.max_tokens} reached ({self.tokens_used} used)"
        if c.max_cost is not None and self.cost_spent >= c.max_cost:
            return f"cost limit of {c.max_cost:g} reached ({self.cost_spent:.6g} spent)"
        return None

    # -- handlers --------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), self.token.encode()
        )

    async def _models(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "unauthorized", "a valid run token is required")
        return web.json_response(
            {"object": "list",
             "data": [{"id": self.config.model, "object": "model", "owned_by": "icae"}]}
        )  # fmt: skip

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return _error(
                401,
                "unauthorized",
                "a valid run token is required",
                **{"WWW-Authenticate": "Bearer"},
            )
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "invalid_request_error", "a JSON body with 'messages' is required")
        self._next_index += 1
        raw = json.dumps(body, ensure_ascii=False)
        req_text, req_cut = cap(raw, self.config.body_cap)
        call = ModelCall(
            index=self._next_index,
            kind="ok",
            started_at=time.time(),
            model=str(body.get("model") or ""),
            upstream_model=self.config.model,
            message_count=len(body["messages"]),
            tools_count=len(body.get("tools") or []),
            stream=bool(body.get("stream")),
            request_hash=request_hash(body),
            request_body=req_text,
            request_truncated=req_cut,
        )
        t0 = time.monotonic()
        try:
            return await self._serve(request, body, call)
        except Exception as err:  # a gateway fault is not the agent's: kept as infra, re-raised
            call.kind, call.status = "infra", call.status or 500
            call.error = call.error or f"gateway error: {type(err).__name__}: {err}"
            raise
        finally:
            call.latency_s = time.monotonic() - t0
            self._calls.append(call)
            if self._record is not None:
                result = self._record(call)
                if inspect.isawaitable(result):
                    await result

    async def _serve(
        self, request: web.Request, body: dict[str, Any], call: ModelCall
    ) -> web.StreamResponse:
        reason = self._limit_reason()
        if reason is not None:
            self.stop_reason = self.stop_reason or reason
            call.kind, call.stop_reason, call.status = "limit", reason, 429
            return _error(429, "limit_reached", reason)
        self.calls_forwarded += 1  # reserved before any await: concurrent calls cannot overrun

        out = dict(body, model=self.config.model)
        if call.stream:  # usage is needed to count tokens; dropped again if not asked for
            out["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        client_wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        resp: UpstreamResponse | None = None
        failed_body = b""
        for attempt in range(1, self.config.max_attempts + 1):
            call.attempts = attempt
            resp = None
            try:
                resp = await self.upstream.send(out, original=body)
            except UpstreamUnreachable as err:
                failure = InfraFailure(attempt=attempt, error=str(err))
            except ReplayDivergence as err:
                call.kind, call.status, call.error = "replay_divergence", 409, str(err)
                return web.json_response(
                    {"error": {"type": "replay_divergence", "call": err.index,
                               "message": str(err)}},
                    status=409,
                )  # fmt: skip
            else:
                if resp.status not in RETRYABLE:
                    break
                failed_body = await resp.read()
                failure = InfraFailure(
                    attempt=attempt, status=resp.status, error=_short(failed_body, resp.status)
                )
            call.infra_failures.append(failure)
            if attempt == self.config.max_attempts:
                break
            failure.waited_s = self._wait(attempt, resp)
            await self._sleep(failure.waited_s)

        if resp is None:
            last = call.infra_failures[-1].error
            call.kind, call.status = "infra", 502
            call.error = f"upstream unreachable after {call.attempts} attempt(s): {last}"
            return _error(502, "upstream_unavailable", call.error)
        call.upstream_status = resp.status
        if resp.status in RETRYABLE:
            call.kind, call.status = "infra", resp.status
            call.error = f"upstream failed {call.attempts} time(s); last: HTTP {resp.status}"
            return self._passthrough(call, resp, failed_body)

        if call.stream and 200 <= resp.status < 300:
            return await self._stream(request, call, resp, client_wants_usage)
        try:
            data = await resp.read()
        except UpstreamUnreachable as err:
            call.kind, call.status, call.error = "infra", 502, f"upstream body lost: {err}"
            return _error(502, "upstream_unavailable", call.error)
        if not 200 <= resp.status < 300:
            call.kind = "agent_error"
            call.error = _short(data, resp.status)
        else:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                self._summarize(call, json.loads(data))
            self._account(call)
        return self._passthrough(call, resp, data)

    def _passthrough(self, call: ModelCall, resp: UpstreamResponse, data: bytes) -> web.Response:
        call.status = resp.status
        call.response_body, call.response_truncated = cap(
            data.decode("utf-8", "replace"), self.config.body_cap
        )
        ctype = resp.headers.get("Content-Type", "application/json").split(";")[0]
        return web.Response(body=data, status=resp.status, content_type=ctype)

    async def _stream(
        self,
        request: web.Request,
        call: ModelCall,
        resp: UpstreamResponse,
        client_wants_usage: bool,
    ) -> web.StreamResponse:
        out = web.StreamResponse(status=resp.status, headers={"Cache-Control": "no-cache"})
        out.content_type = "text/event-stream"
        kept: list[str] = []
        kept_len = 0
        pending = b""
        call.status = resp.status
        await out.prepare(request)  # from here on nothing can be retried
        try:
            async for chunk in resp.chunks():
                pending += chunk
                *events, pending = pending.replace(b"\r\n", b"\n").split(b"\n\n")
                for event in events:
                    text = event.decode("utf-8", "replace") + "\n\n"
                    if kept_len < self.config.body_cap:
                        kept.append(text)
                    kept_len += len(text)
                    if self._stream_event(call, text) or client_wants_usage:
                        await out.write(text.encode())
            if pending.strip():
                await out.write(pending)
                kept.append(pending.decode("utf-8", "replace"))
            # no write_eof here: aiohttp ends the response after the handler returns, so the
            # call is recorded before the agent sees its reply end (a trace in call order)
        except Exception as err:  # upstream or agent side: the status is already sent
            call.kind = "infra"
            call.error = f"stream broke after it started: {type(err).__name__}: {err}"
        finally:
            resp.release()
            call.response_body, call.response_truncated = cap("".join(kept), self.config.body_cap)
            call.response_truncated = call.response_truncated or kept_len > self.config.body_cap
            self._account(call)
        return out

    def _stream_event(self, call: ModelCall, event: str) -> bool:
        """Take one SSE event into the call's summary; False for a usage-only chunk that the
        gateway asked for itself (the agent did not)."""
        forward = True
        for line in event.splitlines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                continue
            try:
                chunk = json.loads(payload)
            except ValueError:
                continue
            if not isinstance(chunk, dict):
                continue
            usage = chunk.get("usage")
            if isinstance(usage, dict):
                call.tokens_in = int(usage.get("prompt_tokens") or 0)
                call.tokens_out = int(usage.get("completion_tokens") or 0)
                if not chunk.get("choices"):
                    forward = False
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                call.content_chars += len(delta.get("content") or "")
                for tc in delta.get("tool_calls") or []:
                    name = (tc.get("function") or {}).get("name")
                    if name:
                        call.tool_calls.append(name)
                if choice.get("finish_reason"):
                    call.finish_reason = choice["finish_reason"]
        return forward

    @staticmethod
    def _summarize(call: ModelCall, data: dict[str, Any]) -> None:
        usage = data.get("usage") or {}
        call.tokens_in = int(usage.get("prompt_tokens") or 0)
        call.tokens_out = int(usage.get("completion_tokens") or 0)
        for choice in data.get("choices") or []:
            msg = choice.get("message") or {}
            call.content_chars += len(msg.get("content") or "")
            for tc in msg.get("tool_calls") or []:
                name = (tc.get("function") or {}).get("name")
                if name:
                    call.tool_calls.append(name)
            call.finish_reason = choice.get("finish_reason") or call.finish_reason

    def _account(self, call: ModelCall) -> None:
        call.cost = self.config.cost(call.tokens_in, call.tokens_out)
        self.tokens_used += call.tokens_in + call.tokens_out
        self.cost_spent += call.cost or 0.0
        reason = self._limit_reason()
        if reason is not None and call.stop_reason is None:
            call.stop_reason = reason  # reached by this call: the next one is refused
            self.stop_reason = self.stop_reason or reason

    def _wait(self, attempt: int, resp: UpstreamResponse | None) -> float:
        c = self.config
        if resp is not None:
            after = _retry_after(resp.headers.get("Retry-After"))
            if after is not None:
                return min(after, c.retry_after_max_s)
        return min(c.backoff_base_s * 2 ** (attempt - 1), c.backoff_max_s)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    return None


def _short(data: bytes, status: int) -> str:
    text = data.decode("utf-8", "replace").strip()
    return f"HTTP {status}: {text[:500]}" if text else f"HTTP {status}"


@contextlib.asynccontextmanager
async def serving(
    config: GatewayConfig,
    *,
    upstream: Upstream | None = None,
    record: Recorder | None = None,
    sleep: Callable[[float], Any] = asyncio.sleep,
):
    gateway = ModelGateway(config, upstream=upstream, record=record, sleep=sleep)
    try:  # a cancel during start must still remove the folder
        await gateway.start()
        yield gateway
    finally:
        await gateway.close()
