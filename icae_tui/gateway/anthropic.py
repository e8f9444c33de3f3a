"""Anthropic Messages (what Claude Code speaks) ⇄ OpenAI Chat Completions.

Pure translation, no I/O: a Messages request becomes a Chat Completions request, and a Chat
Completions reply (one JSON body, or a stream of chunks) becomes what a Messages client
expects. Also reads usage and a summary out of Messages replies for the gateway's record when
a Messages upstream is passed through.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from typing import Any

from icae_tui.gateway.models import ModelCall

Json = dict[str, Any]

# Error types by HTTP status, as the Messages API names them (clients branch on the status,
# people read the type).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def error_body(kind: str, message: str, **extra: Any) -> Json:
    return {"type": "error", "error": {"type": kind, "message": message, **extra}}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def sse(kind: str, data: Json) -> str:
    """One Messages SSE event: an `event:` line naming the `type` its data also carries."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def error_event(message: str, kind: str = "api_error") -> str:
    """How a Messages stream that already started reports a failure."""
    return sse("error", error_body(kind, message))


# -- request: Messages → Chat Completions -------------------------------------------------


def hoist_system(body: Json) -> Json:
    """`role: "system"` entries inside `messages` (Claude Code sends some) moved to the end of
    `system`, the only place the Messages API takes them; the body is unchanged otherwise."""
    messages = body.get("messages") or []
    inline = [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
    if not inline:
        return body
    system = _blocks(body.get("system")) + [b for m in inline for b in _blocks(m.get("content"))]
    rest = [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
    return {**body, "system": [b for b in system if b.get("type") == "text"], "messages": rest}


def request_to_chat(body: Json) -> Json:
    """The Chat Completions request for a Messages request (the model is the caller's to set).

    Dropped, having no Chat Completions counterpart: thinking blocks and settings,
    context_management, output_config, metadata, cache_control, server tools (web search and
    the like), documents. `max_tokens` is dropped too: agents ask for their own vendor's
    ceiling (Claude Code 32k and more), which a chat upstream may reject outright."""
    body = hoist_system(body)
    system = _join(b.get("text") for b in _blocks(body.get("system")) if b.get("type") == "text")
    messages: list[Json] = [{"role": "system", "content": system}] if system else []
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            messages.extend(_message_to_chat(message))
    out: Json = {"messages": messages}
    tools = [_tool_to_chat(t) for t in body.get("tools") or [] if _is_custom_tool(t)]
    if tools:  # chat upstreams reject tool_choice / parallel_tool_calls without tools
        out["tools"] = tools
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            mapped = _tool_choice(choice)
            if mapped is not None:
                out["tool_choice"] = mapped
            if choice.get("disable_parallel_tool_use"):
                out["parallel_tool_calls"] = False
    for key in ("temperature", "top_p"):
        if body.get(key) is not None:
            out[key] = body[key]
    if body.get("stop_sequences"):
        out["stop"] = body["stop_sequences"]
    if body.get("stream"):
        out["stream"] = True
    return out


def _blocks(content: Any) -> list[Json]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content or [] if isinstance(b, dict)]


def _join(texts: Iterable[Any]) -> str:
    return "\n\n".join(t for t in texts if isinstance(t, str) and t)


def _message_to_chat(message: Json) -> list[Json]:
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    blocks = _blocks(content)
    if role == "assistant":  # thinking and server-tool blocks cannot go back to a chat model
        text = _join(b.get("text") for b in blocks if b.get("type") == "text")
        calls = [
            {
                "id": b.get("id"),
                "type": "function",
                "function": {
                    "name": b.get("name"),
                    "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False),
                },
            }
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        reply: Json = {"role": "assistant", "content": text or (None if calls else "")}
        if calls:
            reply["tool_calls"] = calls
        return [reply]
    # A user turn: its tool results become `tool` messages, which Chat Completions wants
    # right after the assistant's tool calls, so they go before the turn's other parts.
    out: list[Json] = []
    parts: list[Json] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_result":
            text, images = _tool_result(block)
            out.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": text})
            parts.extend(images)  # a tool message holds text only; its images follow
        elif kind == "text":
            parts.append({"type": "text", "text": block.get("text") or ""})
        elif kind == "image":
            image = _image(block)
            if image is not None:
                parts.append(image)
    if parts:
        out.append({"role": "user", "content": _chat_content(parts)})
    return out


def _tool_result(block: Json) -> tuple[str, list[Json]]:
    content = block.get("content")
    if isinstance(content, str):
        return content, []
    blocks = _blocks(content)
    images = [i for i in (_image(b) for b in blocks if b.get("type") == "image") if i is not None]
    return _join(b.get("text") for b in blocks if b.get("type") == "text"), images


def _image(block: Json) -> Json | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    elif source.get("type") == "url" and source.get("url"):
        url = source["url"]
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _chat_content(parts: list[Json]) -> str | list[Json]:
    """Plain text when there is nothing but text: every chat upstream takes a string."""
    if all(p["type"] == "text" for p in parts):
        return _join(p["text"] for p in parts)
    return parts


def _is_custom_tool(tool: Any) -> bool:
    # Server and versioned client tools (web_search_*, bash_*, ...) have a `type` and no
    # schema: nothing a chat model could be offered.
    return (
        isinstance(tool, dict)
        and tool.get("type") in (None, "custom")
        and isinstance(tool.get("input_schema"), dict)
    )


def _tool_to_chat(tool: Json) -> Json:
    function: Json = {"name": tool.get("name"), "parameters": tool["input_schema"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Json) -> str | Json | None:
    kind = choice.get("type")
    if kind == "tool" and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))


# -- reply: Chat Completions → Messages ---------------------------------------------------


def message_id(chat_id: Any) -> str:
    """Derived from the chat reply's id, so a replayed call answers the agent identically."""
    return (
        f"msg_{chat_id}" if isinstance(chat_id, str) and chat_id else f"msg_{secrets.token_hex(12)}"
    )


def stop_reason(finish_reason: str | None, tool_called: bool) -> str:
    # Some chat servers say "stop" after tool calls; a Messages client must see tool_use.
    if tool_called and finish_reason in (None, "stop", "tool_calls", "function_call"):
        return "tool_use"
    return STOP_REASONS.get(finish_reason or "stop", "end_turn")


def usage_from_chat(usage: Json) -> Json:
    """Messages counts cache reads apart from input_tokens; chat's prompt_tokens holds them."""
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return {
        "input_tokens": max(prompt - cached, 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def tool_input(arguments: Any) -> Json:
    """A tool call's JSON arguments as the `input` object; arguments that are not a JSON
    object are kept whole, so the agent (and the model, next turn) sees what went wrong."""
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_unparsed_arguments": arguments}


def reply_from_chat(reply: Json, model: str) -> Json:
    """The Messages response for a (non-streamed) Chat Completions reply."""
    choices = reply.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    content: list[Json] = []
    if isinstance(message.get("content"), str) and message["content"]:
        content.append({"type": "text", "text": message["content"]})
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{i}",
                "name": function.get("name") or "",
                "input": tool_input(function.get("arguments")),
            }
        )
    tool_called = any(b["type"] == "tool_use" for b in content)
    return {
        "id": message_id(reply.get("id")),
        "type": "message",
        "role": "assistant",
        "model": reply.get("model") or model,
        "content": content,
        "stop_reason": stop_reason(choice.get("finish_reason"), tool_called),
        "stop_sequence": None,
        "usage": usage_from_chat(reply.get("usage") or {}),
    }


class ChatToMessagesStream:
    """Chat Completions stream chunks in, Messages SSE events out.

    Messages has one content block open at a time, each started, added to and stopped; the
    chunks' text and tool-call deltas open a new block whenever their kind changes. Chat
    servers send parallel tool calls one after another, which maps one to one."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._started = False
        self._index = -1  # the open block's index, -1 before the first
        self._open: str | None = None  # "text", or "tool:<chat index>"
        self._tool_blocks: dict[int, int] = {}  # chat tool-call index → block index
        self._usage: Json = {}
        self.finish_reason: str | None = None  # set once the chat stream said it finished

    def feed(self, chunk: Json) -> list[str]:
        out = self._start(chunk)
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                if self._open != "text":
                    out += self._open_block("text", {"type": "text", "text": ""})
                out.append(self._delta(self._index, {"type": "text_delta", "text": text}))
            for call in delta.get("tool_calls") or []:
                out += self._tool_delta(call)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def finish(self) -> list[str]:
        """After the chat stream ended: close the message with its stop reason and usage."""
        out = self._start({}) + self._close()
        stop = stop_reason(self.finish_reason, bool(self._tool_blocks))
        usage = usage_from_chat(self._usage)
        out.append(
            sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": usage,
                },
            )
        )
        out.append(sse("message_stop", {"type": "message_stop"}))
        return out

    def fail(self, message: str) -> list[str]:
        return [error_event(message)]

    def _start(self, chunk: Json) -> list[str]:
        if self._started:
            return []
        self._started = True
        message: Json = {
            "id": message_id(chunk.get("id")),
            "type": "message",
            "role": "assistant",
            "model": chunk.get("model") or self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},  # chat streams count at the end
        }
        return [sse("message_start", {"type": "message_start", "message": message})]

    def _open_block(self, key: str, block: Json) -> list[str]:
        out = self._close()
        self._index += 1
        self._open = key
        event = {"type": "content_block_start", "index": self._index, "content_block": block}
        return [*out, sse("content_block_start", event)]

    def _close(self) -> list[str]:
        if self._open is None:
            return []
        self._open = None
        return [sse("content_block_stop", {"type": "content_block_stop", "index": self._index})]

    def _delta(self, index: int, delta: Json) -> str:
        return sse(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )

    def _tool_delta(self, call: Json) -> list[str]:
        out: list[str] = []
        chat_index = int(call.get("index") or 0)
        function = call.get("function") or {}
        if chat_index not in self._tool_blocks:
            block: Json = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{chat_index}",
                "name": function.get("name") or "",
                "input": {},
            }
            out += self._open_block(f"tool:{chat_index}", block)
            self._tool_blocks[chat_index] = self._index
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            partial = {"type": "input_json_delta", "partial_json": arguments}
            out.append(self._delta(self._tool_blocks[chat_index], partial))
        return out


# -- reading Messages replies (a passed-through Messages upstream) -----------------------


def _tokens_in(usage: Json) -> int:
    """All prompt tokens: Messages counts cache writes and reads apart from input_tokens."""
    return sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def summarize(call: ModelCall, reply: Json) -> None:
    """A Messages response's usage and content into the call's record."""
    usage = reply.get("usage") or {}
    call.tokens_in = _tokens_in(usage)
    call.tokens_out = int(usage.get("output_tokens") or 0)
    for block in reply.get("content") or []:
        if block.get("type") == "text":
            call.content_chars += len(block.get("text") or "")
        elif block.get("type") == "tool_use" and block.get("name"):
            call.tool_calls.append(block["name"])
    call.finish_reason = reply.get("stop_reason") or call.finish_reason


def summarize_event(call: ModelCall, event: Json) -> None:
    """One Messages stream event into the call's record."""
    kind = event.get("type")
    if kind == "message_start":
        usage = (event.get("message") or {}).get("usage") or {}
        call.tokens_in = _tokens_in(usage)
        call.tokens_out = int(usage.get("output_tokens") or 0)
    elif kind == "content_block_start":
        block = event.get("content_block") or {}
        if block.get("type") == "tool_use" and block.get("name"):
            call.tool_calls.append(block["name"])
    elif kind == "content_block_delta":
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta":
            call.content_chars += len(delta.get("text") or "")
    elif kind == "message_delta":
        usage = event.get("usage") or {}
        call.tokens_out = int(usage.get("output_tokens") or call.tokens_out)
        if usage.get("input_tokens") is not None:  # newer servers repeat the final count
            call.tokens_in = _tokens_in(usage)
        call.finish_reason = (event.get("delta") or {}).get("stop_reason") or call.finish_reason
    elif kind == "error":
        error = event.get("error") or {}
        call.kind = "infra"
        call.error = f"stream error: {error.get('type')}: {error.get('message')}"
