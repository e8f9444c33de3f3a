"""Make untrusted text (agent output, delivery stdout) safe to show literally.

Control characters — ANSI escapes, NUL, carriage returns, C1 codes — become visible `\\xNN`
escapes, so they can neither move a terminal's cursor nor hide text. Tabs are kept.
Rich markup needs no escaping here: displays build `rich.text.Text` objects, never markup.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_KEEP_NEWLINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _escape(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"


def printable(text: str, *, keep_newlines: bool = False, limit: int | None = None) -> str:
    """One display-safe string; `limit` cuts very long lines with a visible marker."""
    pattern = _CONTROL_KEEP_NEWLINES if keep_newlines else _CONTROL
    safe = pattern.sub(_escape, text)
    if limit is not None and len(safe) > limit:
        safe = safe[:limit] + f"… [+{len(safe) - limit} chars]"
    return safe


def lines(text: str) -> list[str]:
    """`text`'s lines, as `str.splitlines()` gives them but split at "\\n" only (a "\\r"
    before it dropped): splitlines() also ends a line at U+2028, \\x0b, \\x1c…, so an excerpt
    of untrusted text would lose part of its own line. printable() shows those instead."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()  # a final newline ends the last line; it starts none
    return [part.removesuffix("\r") for part in parts]


def decode(data: bytes) -> str:
    """Bytes from a container as text; invalid UTF-8 becomes U+FFFD, never an exception."""
    return data.decode("utf-8", errors="replace")
