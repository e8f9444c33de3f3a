"""The host-side model gateway: every model call of a run goes through it.

It serves, on a per-run Unix socket, the three APIs coding agents speak: OpenAI Chat
Completions (`POST /v1/chat/completions`), Anthropic Messages (`POST /v1/messages`, Claude
Code) and OpenAI Responses (`POST /v1/responses`, Codex CLI), plain and SSE streaming, with
tool calls. Each call goes to the configured upstream with the model forced to the configured
one: passed through when the upstream speaks the agent's API, else translated to and from
Chat Completions (`anthropic`, `responses`). The agent holds only a per-run token; the real
key stays on the host and is added here. Every call is recorded (`ModelCall`), the run's
limits (calls, tokens, cost) are enforced with HTTP 429, and upstream 429/5xx/connection
failures are retried with back-off before any byte reaches the agent. Errors reach the agent
in its own API's error shape.
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
from collections.abc import AsyncIterator, Awaitable, Callable
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from icae_tui.gateway import anthropic, responses
from icae_tui.gateway.models import (
    API_NAMES,
    GatewayConfig,
    InfraFailure,
    ModelCall,
    WireApi,
    cap,
    request_hash,
)
from icae_tui.gateway.upstream import (
    API_PATHS,
    HttpUpstream,
    ReplayDivergence,
    Upstream,
    UpstreamResponse,
    UpstreamUnreachable,
)
from icae_tui.sandbox.base import Channel
from icae_tui.util.safe_text import lines as text_lines

SOCKET_NAME = "model.sock"
FOLDER_PREFIX = "icae-model-"  # then `<owner pid>-`, as the clarification socket's folder
CONTAINER_DIR = "/run/icae-model"
PROXY_ASSET = Path(__file__).parent / "assets" / "icae-model-proxy"
RETRYABLE = frozenset({429, 500, 502, 503, 504, 529})  # 529: Anthropic's "overloaded"
REQUEST_MAX = 32 * 1024 * 1024  # long conversations are big
# The agent's headers a passed-through call needs upstream: Claude Code's request features
# (context_management, ...) are refused by Anthropic without their beta names.
FORWARDED_HEADERS = {WireApi.MESSAGES: ("anthropic-beta",)}

Recorder = Callable[[ModelCall], Any]  # may return an awaitable
Json = dict[str, Any]


def model_proxy_script() -> bytes:
    return PROXY_ASSET.read_bytes()


def _error(
    api: WireApi,
    status: int,
    kind: str,
    message: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> web.Response:
    """An error in the agent's API's own shape (the OpenAI APIs share theirs)."""
    if api == WireApi.MESSAGES:
        body = anthropic.error_body(kind, message, **extra)
    else:
        body = {"error": {"type": kind, "message": message, **extra}}
    return web.json_response(body, status=status, headers=headers)


def _valid(api: WireApi, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if api == WireApi.RESPONSES:
        return isinstance(body.get("input"), list | str)
    return isinstance(body.get("messages"), list)


_REQUIRED = {
    WireApi.CHAT: "'messages'",
    WireApi.MESSAGES: "'messages'",
    WireApi.RESPONSES: "'input'",
}


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
    def box_channel(self) -> Channel:
        """The socket's folder as the agent's box sees it (read-only: the agent cannot
        write to the host through it)."""
        return Channel(host_path=self.folder, box_path=CONTAINER_DIR)

    def agent_env(self, port: int) -> dict[str, str]:
        """What ordinary OpenAI and Anthropic clients inside the container need (with the
        forwarder). Claude Code appends /v1/messages itself, hence no /v1 for Anthropic; it
        sends ANTHROPIC_API_KEY as x-api-key."""
        return {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": self.token,
            "OPENAI_MODEL": self.config.model,
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": self.token,
        }

    def calls(self) -> list[ModelCall]:
        return list(self._calls)

    async def start(self) -> None:
        app = web.Application(client_max_size=REQUEST_MAX)
        for api, path in API_PATHS.items():
            # under /v1 as the SDKs call them, and bare for a base URL given without /v1
            app.router.add_post(f"/v1{path}", self._handler(api))
            app.router.add_post(path, self._handler(api))
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
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
        """The run token as `Authorization: Bearer` (OpenAI clients, ANTHROPIC_AUTH_TOKEN) or
        as `x-api-key` (Anthropic clients with ANTHROPIC_API_KEY)."""
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        offered = [presented.strip()] if scheme.lower() == "bearer" else []
        offered.append(request.headers.get("x-api-key", "").strip())
        expected = self.token.encode()
        return any(t and hmac.compare_digest(t.encode(), expected) for t in offered)

    async def _models(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(WireApi.CHAT, 401, "unauthorized", "a valid run token is required")
        return web.json_response(
            {"object": "list",
             "data": [{"id": self.config.model, "object": "model", "owned_by": "icae"}]}
        )  # fmt: skip

    def _handler(self, api: WireApi) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._call(request, api)

        return handle

    async def _call(self, request: web.Request, api: WireApi) -> web.StreamResponse:
        if not self._authorized(request):
            return _error(
                api,
                401,
                "unauthorized",
                "a valid run token is required",
                {"WWW-Authenticate": "Bearer"},
            )
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not _valid(api, body):
            return _error(
                api, 400, "invalid_request_error", f"a JSON body with {_REQUIRED[api]} is required"
            )
        self._next_index += 1
        raw = json.dumps(body, ensure_ascii=False)
        req_text, req_cut = cap(raw, self.config.body_cap)
        conversation = body.get("input" if api == WireApi.RESPONSES else "messages")
        call = ModelCall(
            index=self._next_index,
            kind="ok",
            started_at=time.time(),
            api=api,
            upstream_api=self.upstream.wire_api,
            model=str(body.get("model") or ""),
            upstream_model=self.config.model,
            message_count=len(conversation) if isinstance(conversation, list) else 1,
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

    async def _serve(self, request: web.Request, body: Json, call: ModelCall) -> web.StreamResponse:
        api, upstream_api = call.api, call.upstream_api
        translated = api != upstream_api
        if translated and upstream_api != WireApi.CHAT:
            call.kind, call.status = "infra", 501
            call.error = (
                f"the agent speaks {API_NAMES[api]} and the upstream {API_NAMES[upstream_api]}: "
                f"only {API_NAMES[WireApi.CHAT]} upstreams are translated to"
            )
            return _error(api, 501, "unsupported_api", call.error)
        reason = self._limit_reason()
        if reason is not None:
            self.stop_reason = self.stop_reason or reason
            call.kind, call.stop_reason, call.status = "limit", reason, 429
            # the limit is final: the OpenAI and Anthropic SDKs then do not retry
            return _error(api, 429, "limit_reached", reason, {"x-should-retry": "false"})
        self.calls_forwarded += 1  # reserved before any await: concurrent calls cannot overrun

        out = self._upstream_body(body, call)
        forwarded = () if translated else FORWARDED_HEADERS.get(api, ())
        headers = {name: request.headers[name] for name in forwarded if name in request.headers}
        resp: UpstreamResponse | None = None
        failed_body = b""
        for attempt in range(1, self.config.max_attempts + 1):
            call.attempts = attempt
            resp = None
            try:
                resp = await self.upstream.send(out, original=body, api=api, headers=headers)
            except UpstreamUnreachable as err:
                failure = InfraFailure(attempt=attempt, error=str(err))
            except ReplayDivergence as err:
                call.kind, call.status, call.error = "replay_divergence", 409, str(err)
                return _error(api, 409, "replay_divergence", str(err), call=err.index)
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
            return _error(api, 502, "upstream_unavailable", call.error)
        call.upstream_status = resp.status
        if resp.status in RETRYABLE:
            call.kind, call.status = "infra", resp.status
            call.error = f"upstream failed {call.attempts} time(s); last: HTTP {resp.status}"
            return self._reply(call, resp, failed_body)

        if call.stream and 200 <= resp.status < 300:
            return await self._stream(request, call, resp, self._relay(body, call))
        try:
            data = await resp.read()
        except UpstreamUnreachable as err:
            call.kind, call.status, call.error = "infra", 502, f"upstream body lost: {err}"
            return _error(api, 502, "upstream_unavailable", call.error)
        if not 200 <= resp.status < 300:
            call.kind = "agent_error"
            call.error = _short(data, resp.status)
            return self._reply(call, resp, data)
        try:
            reply = json.loads(data)
            if not isinstance(reply, dict):
                raise ValueError("not a JSON object")
        except ValueError:
            reply = None
        if reply is not None:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                _SUMMARIZE[upstream_api](call, reply)
        self._account(call)
        if not translated:
            return self._reply(call, resp, data)
        if reply is None:
            call.kind, call.status = "infra", 502
            call.error = f"upstream reply is not a Chat Completions reply: {_short(data, 200)}"
            self._keep(call, data)
            return _error(api, 502, "upstream_invalid", call.error)
        agent_reply = (
            anthropic.reply_from_chat(reply, self.config.model)
            if api == WireApi.MESSAGES
            else responses.reply_from_chat(reply, self.config.model)
        )
        self._keep(call, data)
        call.status = resp.status
        return web.json_response(agent_reply, status=resp.status)

    def _upstream_body(self, body: Json, call: ModelCall) -> Json:
        """What goes upstream: the agent's request with the model forced, in the upstream's
        API (translated to Chat Completions when the agent speaks another)."""
        api, upstream_api = call.api, call.upstream_api
        if api == WireApi.MESSAGES:  # system entries inside messages: not valid upstream
            out = (
                anthropic.request_to_chat(body)
                if upstream_api == WireApi.CHAT
                else dict(anthropic.hoist_system(body))
            )
        elif api == WireApi.RESPONSES and upstream_api == WireApi.CHAT:
            out = responses.request_to_chat(body)
        else:
            out = dict(body)
        out["model"] = self.config.model
        if call.stream and upstream_api == WireApi.CHAT:
            # usage is needed to count tokens; dropped again when the agent did not ask for it
            asked = body.get("stream_options") if api == WireApi.CHAT else None
            out["stream_options"] = {**(asked or {}), "include_usage": True}
        return out

    def _relay(self, body: Json, call: ModelCall) -> _Relay:
        if call.api != call.upstream_api:
            translator: _Translator = (
                anthropic.ChatToMessagesStream(self.config.model)
                if call.api == WireApi.MESSAGES
                else responses.ChatToResponsesStream(self.config.model)
            )
            return _TranslatedRelay(call, translator)
        if call.api == WireApi.CHAT:
            wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return _ChatRelay(call, wants_usage)
        return _PassedRelay(call)

    def _keep(self, call: ModelCall, data: bytes) -> None:
        call.response_body, call.response_truncated = cap(
            data.decode("utf-8", "replace"), self.config.body_cap
        )

    def _reply(self, call: ModelCall, resp: UpstreamResponse, data: bytes) -> web.Response:
        """The upstream's answer as is (a translated call's errors in the agent's shape)."""
        call.status = resp.status
        self._keep(call, data)
        if call.api != call.upstream_api and not 200 <= resp.status < 300:
            return self._translated_error(call.api, resp.status, data)
        ctype = resp.headers.get("Content-Type", "application/json").split(";")[0]
        return web.Response(body=data, status=resp.status, content_type=ctype)

    @staticmethod
    def _translated_error(api: WireApi, status: int, data: bytes) -> web.Response:
        """A Chat Completions upstream's error for a translated call, in the agent's shape:
        the OpenAI APIs share the error shape, so only Messages needs a new body."""
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = None
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if api == WireApi.RESPONSES and isinstance(error, dict):
            return web.Response(body=data, status=status, content_type="application/json")
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str) or not message:
            message = _short(data, status)
        if api == WireApi.MESSAGES:
            return _error(api, status, anthropic.error_type(status), message)
        return _error(api, status, "upstream_error", message)

    async def _stream(
        self,
        request: web.Request,
        call: ModelCall,
        resp: UpstreamResponse,
        relay: _Relay,
    ) -> web.StreamResponse:
        out = web.StreamResponse(status=resp.status, headers={"Cache-Control": "no-cache"})
        out.content_type = "text/event-stream"
        kept: list[str] = []
        kept_len = 0
        pending = b""
        call.status = resp.status
        await out.prepare(request)  # from here on nothing can be retried

        async def take(text: str) -> None:
            nonlocal kept_len
            if kept_len < self.config.body_cap:
                kept.append(text)
            kept_len += len(text)
            piece = relay.event(text)
            if piece:
                await out.write(piece.encode())

        try:
            async for chunk in resp.chunks():
                pending += chunk
                *events, pending = pending.replace(b"\r\n", b"\n").split(b"\n\n")
                for event in events:
                    await take(event.decode("utf-8", "replace") + "\n\n")
            if pending.strip():
                await take(pending.decode("utf-8", "replace"))
            tail = relay.end(None)
            if tail:
                await out.write(tail.encode())
            # no write_eof here: aiohttp ends the response after the handler returns, so the
            # call is recorded before the agent sees its reply end (a trace in call order)
        except Exception as err:  # upstream or agent side: the status is already sent
            call.kind = "infra"
            call.error = f"stream broke after it started: {type(err).__name__}: {err}"
            with contextlib.suppress(Exception):  # tell the agent, if it is still there
                tail = relay.end(call.error)
                if tail:
                    await out.write(tail.encode())
        finally:
            resp.release()
            call.response_body, call.response_truncated = cap("".join(kept), self.config.body_cap)
            call.response_truncated = call.response_truncated or kept_len > self.config.body_cap
            self._account(call)
        return out

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
        return float(min(c.backoff_base_s * 2 ** (attempt - 1), c.backoff_max_s))


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


def _sse_json(event: str) -> list[Any]:
    """The JSON data of one SSE event (each data line alone, as chat servers send one a line;
    `[DONE]` and anything not JSON left out)."""
    found = []
    for line in text_lines(event):
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload and payload != "[DONE]":
            with contextlib.suppress(ValueError):
                found.append(json.loads(payload))
    return found


def _chat_reply(call: ModelCall, data: Json) -> None:
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


_SUMMARIZE: dict[WireApi, Callable[[ModelCall, Json], None]] = {
    WireApi.CHAT: _chat_reply,
    WireApi.MESSAGES: anthropic.summarize,
    WireApi.RESPONSES: responses.summarize,
}


def _chat_chunk(call: ModelCall, chunk: Any) -> bool:
    """Take one Chat Completions stream chunk into the call's summary; False for a usage-only
    chunk (which the gateway may have asked for itself)."""
    if not isinstance(chunk, dict):
        return True
    if isinstance(chunk.get("error"), dict):  # some servers report a failure mid-stream
        call.kind = "infra"
        call.error = f"stream error: {chunk['error'].get('message')}"
    forward = True
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


class _Relay(Protocol):
    """Turns the upstream's SSE events into the agent's, reading them for the record."""

    def event(self, text: str) -> str:
        """What the agent gets for one upstream event ("" for nothing)."""
        ...

    def end(self, error: str | None) -> str:
        """What the agent gets after the last event, or after the stream broke (`error`)."""
        ...


class _ChatRelay:
    def __init__(self, call: ModelCall, wants_usage: bool) -> None:
        self.call, self.wants_usage = call, wants_usage

    def event(self, text: str) -> str:
        forward = all([_chat_chunk(self.call, c) for c in _sse_json(text)])
        return text if forward or self.wants_usage else ""

    def end(self, error: str | None) -> str:
        return ""


class _PassedRelay:
    """A Messages or Responses stream passed through as it comes."""

    def __init__(self, call: ModelCall) -> None:
        self.call = call
        messages = call.api == WireApi.MESSAGES
        self._summarize = anthropic.summarize_event if messages else responses.summarize_event
        self._error_event = anthropic.error_event if messages else responses.error_event

    def event(self, text: str) -> str:
        for data in _sse_json(text):
            if isinstance(data, dict):
                self._summarize(self.call, data)
        return text

    def end(self, error: str | None) -> str:
        return self._error_event(error) if error else ""


class _Translator(Protocol):
    finish_reason: str | None

    def feed(self, chunk: Json) -> list[str]: ...

    def finish(self) -> list[str]: ...

    def fail(self, message: str) -> list[str]: ...


class _TranslatedRelay:
    """A Chat Completions stream turned into the agent's API's events."""

    def __init__(self, call: ModelCall, translator: _Translator) -> None:
        self.call, self.translator = call, translator

    def event(self, text: str) -> str:
        out: list[str] = []
        for chunk in _sse_json(text):
            _chat_chunk(self.call, chunk)
            if isinstance(chunk, dict):
                out += self.translator.feed(chunk)
        return "".join(out)

    def end(self, error: str | None) -> str:
        if error is None and self.call.kind == "infra":
            error = self.call.error  # the upstream said it failed, mid-stream
        if error is None and self.translator.finish_reason is None:
            # a chat stream cut short must not look like a finished reply to the agent
            self.call.kind = "infra"
            self.call.error = error = "the upstream stream ended before it finished"
        if error is not None:
            return "".join(self.translator.fail(error))
        return "".join(self.translator.finish())


@contextlib.asynccontextmanager
async def serving(
    config: GatewayConfig,
    *,
    upstream: Upstream | None = None,
    record: Recorder | None = None,
    sleep: Callable[[float], Any] = asyncio.sleep,
) -> AsyncIterator[ModelGateway]:
    gateway = ModelGateway(config, upstream=upstream, record=record, sleep=sleep)
    try:  # a cancel during start must still remove the folder
        await gateway.start()
        yield gateway
    finally:
        await gateway.close()
