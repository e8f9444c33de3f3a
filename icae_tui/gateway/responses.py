"""OpenAI Responses (what Codex CLI speaks) ⇄ OpenAI Chat Completions.

Pure translation, no I/O: a Responses request (`instructions` + `input` items) becomes a Chat
Completions request, and a Chat Completions reply (one JSON body, or a stream of chunks)
becomes a Responses object or its stream of events. Also reads usage and a summary out of
Responses replies for the gateway's record when a Responses upstream is passed through.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from icae_tui.gateway.models import ModelCall

Json = dict[str, Any]

# A chat finish_reason that is not a normal end → the Responses `incomplete_details.reason`.
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def sse(data: Json) -> str:
    """One Responses SSE event: an `event:` line naming the `type` its data also carries."""
    return f"event: {data['type']}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def error_event(message: str, code: str = "server_error") -> str:
    """How a Responses stream that already started reports a failure (the `error` event)."""
    return sse({"type": "error", "code": code, "message": message, "param": None})


# -- request: Responses → Chat Completions ------------------------------------------------


def request_to_chat(body: Json) -> Json:
    """The Chat Completions request for a Responses request (the model is the caller's to set).

    `instructions` and the system/developer messages before the conversation become one
    system message (some chat templates take a system message only first). Dropped, having
    no Chat Completions counterpart: reasoning items and settings, hosted and custom tools
    (web_search, ...) and their calls, `include`, `store`, `text`, `prompt_cache_key`.
    `max_output_tokens` is dropped too: a chat upstream may reject an agent's ceiling."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    system: list[str] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        system.append(body["instructions"])
    messages: list[Json] = []
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or ("message" if "role" in item else None)
        role = item.get("role")
        if kind == "message" and role in ("system", "developer"):
            text = _text(item.get("content"))
            if not messages:
                system.append(text)
            elif text:
                messages.append({"role": "system", "content": text})
        elif kind == "message" and role == "assistant":
            target = _assistant(messages)
            target["content"] = _join([target["content"], _text(item.get("content"))]) or None
        elif kind == "message":
            messages.append({"role": "user", "content": _content(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""},
            }
            _assistant(messages).setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
    if any(system):
        messages.insert(0, {"role": "system", "content": _join(system)})
    for message in messages:  # an assistant turn of tool calls only has no text at all
        if (
            message["role"] == "assistant"
            and message["content"] is None
            and not message.get("tool_calls")
        ):
            message["content"] = ""
    out: Json = {"messages": messages}
    tools = [_tool_to_chat(t) for t in body.get("tools") or [] if _is_function_tool(t)]
    if tools:  # chat upstreams reject tool_choice / parallel_tool_calls without tools
        out["tools"] = tools
        choice = _tool_choice(body.get("tool_choice"))
        if choice is not None:
            out["tool_choice"] = choice
        if body.get("parallel_tool_calls") is not None:
            out["parallel_tool_calls"] = bool(body["parallel_tool_calls"])
    for key in ("temperature", "top_p"):
        if body.get(key) is not None:
            out[key] = body[key]
    if body.get("stream"):
        out["stream"] = True
    return out


def _join(texts: list[Any]) -> str:
    return "\n\n".join(t for t in texts if isinstance(t, str) and t)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return _join([p.get("text") or p.get("refusal") for p in content or [] if isinstance(p, dict)])


def _content(content: Any) -> str | list[Json]:
    """A user message's content: plain text when there is nothing but text (every chat
    upstream takes a string), else chat parts with the images."""
    if isinstance(content, str):
        return content
    parts: list[Json] = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("input_text", "output_text", "text") and part.get("text"):
            parts.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
            image: Json = {"url": part["image_url"]}
            if part.get("detail") in ("low", "high"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
    if all(p["type"] == "text" for p in parts):
        return _join([p["text"] for p in parts])
    return parts


def _assistant(messages: list[Json]) -> Json:
    """The assistant message a Responses item adds to: the last one while nothing came after
    it (a turn's text and tool calls are separate items but one chat message), else new."""
    if not messages or messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": None})
    return messages[-1]


def _is_function_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "function" and bool(tool.get("name"))


def _tool_to_chat(tool: Json) -> Json:
    function: Json = {
        "name": tool["name"],
        "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
    }
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> str | Json | None:
    if isinstance(choice, str) and choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    return None  # allowed_tools, hosted tools: left to the upstream's default


# -- reply: Chat Completions → Responses --------------------------------------------------


def response_id(chat_id: Any) -> str:
    """Derived from the chat reply's id, so a replayed call answers the agent identically."""
    if isinstance(chat_id, str) and chat_id:
        return f"resp_{chat_id}"
    return f"resp_{secrets.token_hex(12)}"


def usage_from_chat(usage: Json) -> Json:
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    details_in = usage.get("prompt_tokens_details") or {}
    details_out = usage.get("completion_tokens_details") or {}
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": int(details_in.get("cached_tokens") or 0)},
        "output_tokens": completion,
        "output_tokens_details": {
            "reasoning_tokens": int(details_out.get("reasoning_tokens") or 0)
        },
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }


def _status(finish_reason: str | None) -> tuple[str, Json | None]:
    reason = INCOMPLETE.get(finish_reason or "")
    return ("incomplete", {"reason": reason}) if reason else ("completed", None)


def _response(
    rid: str, created: int, model: str, status: str, output: list[Json], usage: Json | None
) -> Json:
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
        "error": None,
        "incomplete_details": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def _message_item(item_id: str, text: str, status: str = "completed") -> Json:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_item(item_id: str, call: Json, status: str = "completed") -> Json:
    return {"id": item_id, "type": "function_call", "status": status, **call}


def reply_from_chat(reply: Json, model: str) -> Json:
    """The Responses object for a (non-streamed) Chat Completions reply."""
    rid = response_id(reply.get("id"))
    choices = reply.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    output: list[Json] = []
    if isinstance(message.get("content"), str) and message["content"]:
        output.append(_message_item(f"msg_{rid}_0", message["content"]))
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        fields = {
            "call_id": call.get("id") or f"call_{i}",
            "name": function.get("name") or "",
            "arguments": function.get("arguments") or "",
        }
        output.append(_call_item(f"fc_{rid}_{len(output)}", fields))
    status, incomplete = _status(choice.get("finish_reason"))
    created = int(reply.get("created") or 0)
    usage = usage_from_chat(reply.get("usage") or {})
    body = _response(rid, created, reply.get("model") or model, status, output, usage)
    body["incomplete_details"] = incomplete
    return body


class ChatToResponsesStream:
    """Chat Completions stream chunks in, Responses SSE events out.

    Each output item (the assistant's text, each tool call) is added, filled with deltas and
    done, one after another; the chunks' text and tool-call deltas start a new item whenever
    their kind changes. Every event carries its `sequence_number`."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._id = ""  # set from the first chunk
        self._created = 0
        self._seq = 0
        self._output: list[Json] = []  # the items so far, the open one last
        self._open: str | None = None  # "text", or "tool:<chat index>"
        self._tools: dict[int, int] = {}  # chat tool-call index → output index
        self._text_parts: list[str] = []  # the open text item's deltas so far
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
                out += self._text(text)
            for call in delta.get("tool_calls") or []:
                out += self._tool(call)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def finish(self) -> list[str]:
        """After the chat stream ended: the last item done, then the whole response."""
        out = self._start({}) + self._close()
        status, incomplete = _status(self.finish_reason)
        response = self._snapshot(status, usage_from_chat(self._usage))
        response["incomplete_details"] = incomplete
        return [*out, self._event(f"response.{status}", response=response)]

    def fail(self, message: str) -> list[str]:
        out = self._start({})
        response = self._snapshot("failed", None)
        response["error"] = {"code": "server_error", "message": message}
        return [*out, self._event("response.failed", response=response)]

    def _event(self, kind: str, **fields: Any) -> str:
        self._seq += 1
        return sse({"type": kind, "sequence_number": self._seq, **fields})

    def _snapshot(self, status: str, usage: Json | None) -> Json:
        return _response(self._id, self._created, self._model, status, list(self._output), usage)

    def _start(self, chunk: Json) -> list[str]:
        if self._id:
            return []
        self._id = response_id(chunk.get("id"))
        self._created = int(chunk.get("created") or 0)
        self._model = chunk.get("model") or self._model
        return [
            self._event("response.created", response=self._snapshot("in_progress", None)),
            self._event("response.in_progress", response=self._snapshot("in_progress", None)),
        ]

    def _add(self, key: str, item: Json) -> list[str]:
        out = self._close()
        self._output.append(item)
        self._open = key
        index = len(self._output) - 1
        return [
            *out,
            self._event("response.output_item.added", output_index=index, item=dict(item)),
        ]

    def _text(self, text: str) -> list[str]:
        out: list[str] = []
        if self._open != "text":
            index = len(self._output)
            out += self._add("text", _message_item(f"msg_{self._id}_{index}", "", "in_progress"))
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(self._event("response.content_part.added", **self._at(), part=part))
        self._text_parts.append(text)
        out.append(self._event("response.output_text.delta", **self._at(), delta=text, logprobs=[]))
        return out

    def _tool(self, call: Json) -> list[str]:
        out: list[str] = []
        chat_index = int(call.get("index") or 0)
        function = call.get("function") or {}
        if chat_index not in self._tools:
            fields = {
                "call_id": call.get("id") or f"call_{chat_index}",
                "name": function.get("name") or "",
                "arguments": "",
            }
            item = _call_item(f"fc_{self._id}_{len(self._output)}", fields, "in_progress")
            out += self._add(f"tool:{chat_index}", item)
            self._tools[chat_index] = len(self._output) - 1
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            index = self._tools[chat_index]
            item = self._output[index]
            item["arguments"] += arguments
            out.append(
                self._event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=arguments,
                )
            )
        return out

    def _at(self) -> Json:
        """Where the open text goes: its item, output index and (only) content part."""
        index = len(self._output) - 1
        return {"item_id": self._output[index]["id"], "output_index": index, "content_index": 0}

    def _close(self) -> list[str]:
        if self._open is None:
            return []
        index = len(self._output) - 1
        item = self._output[index]
        out: list[str] = []
        if self._open == "text":
            text, self._text_parts = "".join(self._text_parts), []
            at = self._at()
            out.append(self._event("response.output_text.done", **at, text=text, logprobs=[]))
            part = {"type": "output_text", "text": text, "annotations": []}
            out.append(self._event("response.content_part.done", **at, part=part))
            item = self._output[index] = _message_item(item["id"], text)
        else:
            item["status"] = "completed"
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            )
        self._open = None
        out.append(self._event("response.output_item.done", output_index=index, item=dict(item)))
        return out


# -- reading Responses replies (a passed-through Responses upstream) ---------------------


def _usage(call: ModelCall, usage: Any) -> None:
    if isinstance(usage, dict):  # input_tokens holds the cached ones, output the reasoning
        call.tokens_in = int(usage.get("input_tokens") or 0)
        call.tokens_out = int(usage.get("output_tokens") or 0)


def _finish(response: Json) -> str | None:
    incomplete = response.get("incomplete_details") or {}
    return incomplete.get("reason") or response.get("status")


def summarize(call: ModelCall, reply: Json) -> None:
    """A Responses object's usage and output into the call's record."""
    _usage(call, reply.get("usage"))
    for item in reply.get("output") or []:
        _item(call, item)
    call.finish_reason = _finish(reply) or call.finish_reason


def _item(call: ModelCall, item: Any) -> None:
    if not isinstance(item, dict):
        return
    if item.get("type") == "message":
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "output_text":
                call.content_chars += len(part.get("text") or "")
    elif item.get("type") == "function_call" and item.get("name"):
        call.tool_calls.append(item["name"])


def summarize_event(call: ModelCall, event: Json) -> None:
    """One Responses stream event into the call's record."""
    kind = event.get("type")
    if kind == "response.output_text.delta":
        call.content_chars += len(event.get("delta") or "")
    elif kind == "response.output_item.done":
        item = event.get("item") or {}
        if item.get("type") == "function_call" and item.get("name"):
            call.tool_calls.append(item["name"])
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        response = event.get("response") or {}
        _usage(call, response.get("usage"))
        call.finish_reason = _finish(response) or call.finish_reason
        if kind == "response.failed":
            error = response.get("error") or {}
            call.kind = "infra"
            call.error = f"stream failed: {error.get('code')}: {error.get('message')}"
    elif kind == "error":
        call.kind = "infra"
        call.error = f"stream error: {event.get('code')}: {event.get('message')}"
