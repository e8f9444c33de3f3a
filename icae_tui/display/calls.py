"""What the model calls screen shows: a row per call (from its `model_call` event) and, for a
call expanded, its request's new messages and its response (from the run's model_calls.jsonl).

Plain text with style hints, like `wording`; every untrusted part (model names, tool names,
errors, message contents, bodies) is made printable and bounded here: a body can be 256 KiB,
and a display shows at most a few tens of thousands of characters of a call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from icae_tui.display.wording import Seg, count, money
from icae_tui.domain.events import ModelCallMade
from icae_tui.util.safe_text import lines as text_lines
from icae_tui.util.safe_text import printable

if TYPE_CHECKING:
    from icae_tui.gateway.models import ModelCall

COLUMNS = ("#", "model", "kind", "status", "tokens in→out", "cost", "latency", "tools",
           "retried", "error")  # fmt: skip
CELL_LIMIT = 60  # characters of a table cell
NEW_MESSAGES = 4  # of a request's new messages, the last ones shown
MESSAGE_LIMIT = 4000  # characters of one message's content
REPLY_LIMIT = 8000  # of the reply's text, taken from the response
BODY_LIMIT = 16_000  # of the response body, as recorded
RAW_REQUEST_LIMIT = 4000  # of the end of a request body that is no JSON (cut at the cap)
SSE_EVENTS = 20_000  # server-sent events read back from a streamed response, at most
NOT_RECORDED = "not recorded"


def clipped(text: object, limit: int) -> str:
    """`text` made printable (newlines kept), cut at `limit` characters with a visible
    "… [+N chars]"; cut before escaping, so a huge text costs no more than its shown part."""
    text = str(text)
    if len(text) <= limit:
        return printable(text, keep_newlines=True)
    return printable(text[:limit], keep_newlines=True) + f"… [+{len(text) - limit} chars]"


def cell(text: object, limit: int = CELL_LIMIT) -> str:
    return printable(str(text), limit=limit)


# --- the table -----------------------------------------------------------------------------


def call_cells(ev: ModelCallMade) -> list[Seg]:
    """One row of the table, a (text, style hint) per column of COLUMNS."""
    kind_hint = "good" if ev.call_kind == "ok" else "error"
    status_hint = "" if 200 <= ev.status < 300 else "warn"
    problem = ev.stop_reason or ev.error or ""
    retried = f"{ev.infra_failures} of {ev.attempts}" if ev.infra_failures else "—"
    return [
        (str(ev.index), "strong"),
        (cell(ev.model or "—"), ""),
        (cell(ev.call_kind), kind_hint),
        (str(ev.status) if ev.status else "—", status_hint),
        (f"{count(ev.tokens_in)}→{count(ev.tokens_out)}", ""),
        (money(ev.cost) if ev.cost is not None else "—", "muted"),
        (f"{ev.latency_s:.2f}s", "muted"),
        (cell(", ".join(ev.tool_calls)) if ev.tool_calls else "—", "record"),
        (retried, "warn" if ev.infra_failures else "muted"),
        (cell(problem, 200) if problem else "", "error"),
    ]


def calls_title(calls: int, live: bool) -> str:
    more = " · more as they come" if live else ""
    return f"Model calls · {calls}{more} — Enter shows a call's request and response"


# --- one call, expanded ------------------------------------------------------------------


def _content(value: Any) -> str:
    """A message's content: a string, or a list of parts (text parts joined, others named)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part, dict):
                out.append(f"[{part.get('type', 'part')}]")
            else:
                out.append(str(part))
        return "\n".join(out)
    return json.dumps(value, ensure_ascii=False)


def _tool_calls(calls: Any) -> list[str]:
    """`name(arguments)` for each tool call of an assistant message."""
    out = []
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            out.append(f"{fn.get('name', '?')}({fn.get('arguments', '')})")
    return out


def new_messages(messages: list[Any]) -> tuple[list[Any], int]:
    """A request's new messages: those after the model's last reply (all of them on the
    first call), of which the last NEW_MESSAGES; and how many messages come before them."""
    start = 0
    for i, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            start = i + 1
    if start == len(messages):  # ends with a reply (a prefilled turn): show that
        start = max(0, len(messages) - 1)
    start = max(start, len(messages) - NEW_MESSAGES)
    return messages[start:], start


def _message(message: Any) -> list[Seg]:
    if not isinstance(message, dict):
        return [(clipped(json.dumps(message, ensure_ascii=False), MESSAGE_LIMIT) + "\n", "")]
    role = str(message.get("role", "?"))
    head = f"── {role}"
    if message.get("tool_call_id"):
        head += f" (tool call {message['tool_call_id']})"
    segs: list[Seg] = [(printable(head, limit=200) + "\n", "question")]
    text = _content(message.get("content")).rstrip("\n")
    if text:
        segs.append((clipped(text, MESSAGE_LIMIT) + "\n", ""))
    for call in _tool_calls(message.get("tool_calls")):
        segs.append(("→ " + clipped(call, MESSAGE_LIMIT) + "\n", "record"))
    if not text and not message.get("tool_calls"):
        segs.append(("(empty)\n", "muted"))
    return segs


def request_segments(body: str | None, truncated: bool = False) -> list[Seg]:
    """The request's new messages (see `new_messages`); the end of the raw body when it is
    no JSON (a body cut at the recording's cap)."""
    if body is None:
        return [(f"({NOT_RECORDED})\n", "muted")]
    try:
        data = json.loads(body)
    except ValueError:
        note = "cut at the recording's cap: " if truncated else "not JSON: "
        tail = body[-RAW_REQUEST_LIMIT:]
        return [
            (f"({note}its last {len(tail)} of {len(body)} characters)\n", "warn"),
            (clipped(tail, RAW_REQUEST_LIMIT) + "\n", ""),
        ]
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):  # another wire shape (e.g. Responses' `input`)
        items = data.get("input") if isinstance(data, dict) else None
        messages = items if isinstance(items, list) else None
    if messages is None:
        return [(clipped(json.dumps(data, indent=2, ensure_ascii=False), BODY_LIMIT) + "\n", "")]
    shown, before = new_messages(messages)
    note = f"{len(messages)} message(s)"
    if before:
        note += f"; the last {len(shown)} shown: what came after the model's last reply"
    segs: list[Seg] = [(f"({note})\n", "muted")]
    for message in shown:
        segs += _message(message)
    return segs


def _sse_reply(body: str) -> tuple[str, list[str], str] | None:
    """The reply streamed as server-sent events (Chat Completions chunks): its text, its
    tool calls and its finish reason; None if the body is no such stream."""
    text: list[str] = []
    tools: dict[int, list[str]] = {}
    finish = ""
    seen = 0
    for line in text_lines(body):
        if not line.startswith("data:") or seen >= SSE_EVENTS:
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            continue
        try:
            chunk = json.loads(payload)
        except ValueError:
            continue
        seen += 1
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                index = call.get("index")
                parts = tools.setdefault(index if isinstance(index, int) else 0, ["", ""])
                fn = call.get("function")
                fn = fn if isinstance(fn, dict) else {}
                parts[0] += str(fn.get("name") or "")
                parts[1] += str(fn.get("arguments") or "")
            finish = str(choice.get("finish_reason") or finish)
    if not seen:
        return None
    calls = [f"{name}({args})" for name, args in (tools[i] for i in sorted(tools))]
    return "".join(text), calls, finish


def _reply(body: str) -> tuple[str, list[str], str] | None:
    """The reply in a response body (JSON or a stream): text, tool calls, finish reason."""
    try:
        data = json.loads(body)
    except ValueError:
        return _sse_reply(body)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message") or {}
    if not isinstance(message, dict):
        return None
    finish = str(choices[0].get("finish_reason") or "")
    return _content(message.get("content")), _tool_calls(message.get("tool_calls")), finish


def response_segments(body: str | None, truncated: bool = False) -> list[Seg]:
    """The reply the response holds (when it is read), then the body as recorded."""
    if body is None:
        return [(f"({NOT_RECORDED})\n", "muted")]
    segs: list[Seg] = []
    if (reply := _reply(body)) is not None:
        text, calls, finish = reply
        head = "reply" + (f" (finish: {finish})" if finish else "")
        segs.append((printable(head, limit=200) + "\n", "strong"))
        if text.rstrip("\n"):
            segs.append((clipped(text.rstrip("\n"), REPLY_LIMIT) + "\n", ""))
        for call in calls:
            segs.append(("→ " + clipped(call, MESSAGE_LIMIT) + "\n", "record"))
        if not text and not calls:
            segs.append(("(no text, no tool call)\n", "muted"))
        segs.append(("\n", ""))
    cap = " (cut at the recording's cap)" if truncated else ""
    segs.append((f"body, {len(body)} characters{cap}\n", "strong"))
    segs.append((clipped(body, BODY_LIMIT) + "\n", ""))
    return segs


def _failures(call: ModelCall) -> list[Seg]:
    segs: list[Seg] = []
    for failure in call.infra_failures:
        status = failure.status if failure.status is not None else "no answer"
        waited = f", waited {failure.waited_s:.1f}s" if failure.waited_s else ""
        line = f"  attempt {failure.attempt}: {status} — {failure.error}{waited}"
        segs.append((printable(line, limit=500) + "\n", "warn"))
    return segs


def call_detail(
    ev: ModelCallMade, call: ModelCall | None, problem: str = "", *, reading: bool = False
) -> list[Seg]:
    """One call expanded: its figures, then (from the recording) its request's new messages
    and its response; "not recorded" when the recording lacks it (`problem`: why), or
    `reading` while it is read."""
    segs: list[Seg] = [
        (f"call #{ev.index}", "strong"),
        (cell(f"  {ev.model or '—'} · {ev.call_kind} · status {ev.status}", 200), "muted"),
        (f" · {ev.latency_s:.2f}s · {ev.attempts} attempt(s)\n", "muted"),
    ]
    if ev.stop_reason:
        segs.append((cell(f"limit reached: {ev.stop_reason}", 500) + "\n", "error"))
    if ev.error:
        segs.append((clipped(ev.error, 2000) + "\n", "error"))
    if call is None and reading:
        segs.append(("\nreading the recorded request and response…\n", "muted"))
        return segs
    if call is None:
        why = f" — {problem}" if problem else ""
        segs.append((f"\nrequest and response {NOT_RECORDED}{cell(why, 500)}\n", "warn"))
        return segs
    segs.extend(_failures(call))
    tools = f" · {call.tools_count} tool(s)" if call.tools_count else ""
    stream = " · streamed" if call.stream else ""
    segs.append((f"\nrequest{tools}{stream}\n", "draft"))
    segs += request_segments(call.request_body, call.request_truncated)
    segs.append(("\nresponse\n", "draft"))
    segs += response_segments(call.response_body, call.response_truncated)
    return segs


def by_index(calls: Iterable[ModelCall]) -> dict[int, ModelCall]:
    return {call.index: call for call in calls}
