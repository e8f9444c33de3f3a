"""The gateway's configuration and its record of one model call (JSON-serializable)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from icae_tui.domain.agent import WireApi as WireApi  # re-exported: the gateway's API
from icae_tui.domain.states import ModelRole
from icae_tui.util.safe_text import lines as text_lines

BODY_CAP = 256 * 1024  # characters kept of each request/response body in a ModelCall

CallKind = Literal["ok", "agent_error", "infra", "limit", "replay_divergence"]


API_NAMES = {
    WireApi.CHAT: "OpenAI Chat Completions",
    WireApi.MESSAGES: "Anthropic Messages",
    WireApi.RESPONSES: "OpenAI Responses",
}


class GatewayConfig(BaseModel):
    """One run's model endpoint and limits. The key itself is never stored here: only the
    NAME of the host environment variable that holds it."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = ""  # e.g. https://api.openai.com/v1 ("/chat/completions" etc. appended)
    model: str  # forced upstream, whatever the agent asks for
    # What the upstream speaks. An agent speaking the same API is passed through; any other
    # agent API is translated, which only a Chat Completions upstream supports.
    wire_api: WireApi = WireApi.CHAT
    api_key_env: str = ""  # name of the host environment variable holding the real key
    price_in_per_mtok: float | None = None  # currency per million prompt tokens
    price_out_per_mtok: float | None = None  # currency per million completion tokens
    max_calls: int | None = None
    max_tokens: int | None = None  # prompt + completion tokens over the run
    max_cost: float | None = None
    max_attempts: int = Field(default=4, ge=1)  # upstream attempts per call (retries + 1)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=8.0, ge=0)
    retry_after_max_s: float = Field(default=60.0, ge=0)
    timeout_s: float = Field(default=300.0, gt=0)  # upstream read timeout
    body_cap: int = Field(default=BODY_CAP, ge=0)

    @model_validator(mode="after")
    def _cost_needs_prices(self) -> GatewayConfig:
        if self.max_cost is not None and (
            self.price_in_per_mtok is None or self.price_out_per_mtok is None
        ):
            raise ValueError("max_cost needs price_in_per_mtok and price_out_per_mtok")
        return self

    def cost(self, tokens_in: int, tokens_out: int) -> float | None:
        if self.price_in_per_mtok is None or self.price_out_per_mtok is None:
            return None
        return (tokens_in * self.price_in_per_mtok + tokens_out * self.price_out_per_mtok) / 1e6


class InfraFailure(BaseModel):
    """One failed upstream attempt (HTTP 429/5xx or no connection): the infrastructure's
    fault, never the agent's."""

    model_config = ConfigDict(extra="forbid")

    attempt: int
    status: int | None = None  # None: no HTTP answer at all
    error: str
    waited_s: float = 0.0  # back-off before the next attempt (0 when none followed)


class ModelCall(BaseModel):
    """One agent request to the gateway, however many upstream attempts it took.

    kind: ok (upstream 2xx) · agent_error (upstream 4xx other than 429: the request was bad)
    · infra (retries exhausted, no connection, or the stream broke) · limit (refused by the
    run's limits, never forwarded) · replay_divergence (replay had no matching recording).
    Bodies are kept up to `GatewayConfig.body_cap` characters each (`*_truncated` says when
    cut); a truncated call cannot be replayed.
    """

    model_config = ConfigDict(extra="forbid")

    index: int  # 1-based, in arrival order (per role: each role has its own gateway)
    role: ModelRole = ModelRole.AGENT
    kind: CallKind
    started_at: float
    latency_s: float = 0.0
    api: WireApi = WireApi.CHAT  # what the agent spoke (request_body is in it)
    upstream_api: WireApi = WireApi.CHAT  # what the upstream spoke (response_body is in it)
    # request summary
    model: str = ""  # as the agent asked
    upstream_model: str = ""  # as forwarded (forced)
    message_count: int = 0
    tools_count: int = 0
    stream: bool = False
    request_hash: str = ""  # canonical hash of the conversation + tools (what replay matches)
    # outcome
    status: int = 0  # what the agent got
    upstream_status: int | None = None  # the last upstream answer's status, None if none
    attempts: int = 0  # upstream attempts (0 when never forwarded)
    infra_failures: list[InfraFailure] = Field(default_factory=list)
    error: str | None = None
    stop_reason: str | None = None  # a limit this call hit (refused, or reached by it)
    # response summary
    finish_reason: str | None = None
    content_chars: int = 0
    tool_calls: list[str] = Field(default_factory=list)  # function names called
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    # bodies (capped)
    request_body: str | None = None
    request_truncated: bool = False
    # the UPSTREAM's answer, JSON text or raw SSE text (a translated call's agent-side reply
    # is made again from it, so replay serves it through the same translation)
    response_body: str | None = None
    response_truncated: bool = False

    @property
    def replayable(self) -> bool:
        return (
            self.kind in ("ok", "agent_error")
            and self.upstream_status is not None
            and self.response_body is not None
            and not self.response_truncated
        )


_CALLS = TypeAdapter(list[ModelCall])


def dump_call(call: ModelCall) -> str:
    """One call as a JSON line: a run's recording is appended a line per call, as it ends."""
    return call.model_dump_json() + "\n"


def dump_calls(calls: list[ModelCall]) -> str:
    return "".join(dump_call(c) for c in calls)


def load_calls(text: str | bytes) -> list[ModelCall]:
    """A recording: JSON lines (one call each), or a JSON array of calls. A last line cut
    short by a crash is left out; a broken line elsewhere is an error."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if text.lstrip().startswith("["):
        return _CALLS.validate_json(text)
    lines = [line for line in text_lines(text) if line.strip()]
    calls = []
    for i, line in enumerate(lines, 1):
        try:
            calls.append(ModelCall.model_validate_json(line))
        except ValueError as err:
            if i == len(lines) and not text.endswith("\n"):
                break  # the write that was under way when the run died
            raise ValueError(f"line {i}: {err}") from None
    return calls


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# Besides messages and tools, what holds the conversation in the other APIs: Messages has
# `system` outside the messages, Responses has `instructions` and `input`.
CONVERSATION_KEYS = ("system", "instructions", "input")


def request_hash(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the request's conversation and tools, as the agent sent
    it (nothing else: not the model, sampling or metadata). A Chat Completions request hashes
    as it always did (only messages + tools), so older recordings still replay."""
    key = {"messages": body.get("messages") or [], "tools": body.get("tools") or []}
    key.update({k: body[k] for k in CONVERSATION_KEYS if body.get(k)})
    return hashlib.sha256(canonical(key).encode()).hexdigest()


def cap(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)
