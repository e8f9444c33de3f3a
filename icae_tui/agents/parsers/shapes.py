"""Reading hostile native output: values of the wrong type become empty ones, text is bounded
and made storable, JSON that does not parse is None. Nothing here raises on input."""

from __future__ import annotations

import json
from typing import Any

from icae_tui.util.safe_text import lines, printable

MAX_TEXT_CHARS = 64 * 1024  # of one event's text: one line cannot blow up the store
MAX_PATH_CHARS = 4096  # PATH_MAX
MAX_DETAIL_CHARS = 200  # AgentToolUsed.detail: a summary, not the input
MAX_JSON_CHARS = 16 * 1024 * 1024  # longer lines or files are not parsed (memory, time)
_INT32 = 2**31

# Keys whose value says best what a tool call is about, in order of preference.
_SUMMARY_KEYS = ("file_path", "notebook_path", "pattern", "path", "query", "url", "command",
                 "description", "prompt", "cmd")  # fmt: skip


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """At most `limit` characters (a marker says how many more there were), and storable:
    a lone surrogate (from a JSON "\\ud800" escape) would make pydantic fail to serialise
    the event, so it becomes '?'."""
    if len(text) > limit:
        text = f"{text[:limit]}… [cut: {len(text) - limit} more characters]"
    return text.encode("utf-8", "replace").decode("utf-8")


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object `text` holds, or None (not JSON, not an object, too long or deep)."""
    if len(text) > MAX_JSON_CHARS or not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def integer(value: Any) -> int | None:
    """An exit code: an int (not a bool) in the 32-bit range, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and -_INT32 <= value < _INT32:
        return value
    return None


def flag(value: Any) -> bool:
    return value is True


def content_text(value: Any) -> str:
    """A message's content: a string, or the text of a list of content blocks."""
    if isinstance(value, str):
        return value
    parts = [string(obj(block).get("text")) for block in items(value)]
    return "\n".join(part for part in parts if part)


def summary(value: Any) -> str:
    """A tool input as a short printable line: its most telling field, else compact JSON."""
    if isinstance(value, dict):
        for key in _SUMMARY_KEYS:
            if text := string(value.get(key)):
                return _short(text)
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = ""
    return _short(text)


def first_line(text: str) -> str:
    """The first non-blank line, short and printable: for `AgentEnd.detail`."""
    return _short(next((ln.strip() for ln in lines(text[:MAX_TEXT_CHARS]) if ln.strip()), ""))


def _short(text: str) -> str:
    # cut before escaping (cheap on huge input), then printable's own visible cut
    return printable(clip(text[: 4 * MAX_DETAIL_CHARS]), limit=MAX_DETAIL_CHARS)
