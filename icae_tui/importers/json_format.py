"""JSON as a source tree wrote it: which `json.dumps` settings reproduce a file byte for
byte, so an export can write the same bytes again from the parsed data.

ICAE-EVAL's files are `json.dumps(data, indent=2, ensure_ascii=False)` (no newline at the
end); other settings are tried too. A file no setting reproduces (hand-formatted, duplicate
keys, …) has no format: the import keeps it verbatim.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict


class JsonFormat(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    indent: int | None = 2
    ensure_ascii: bool = False
    newline: bool = False  # a "\n" after the closing bracket
    compact: bool = False  # with indent None: separators (",", ":")


ICAE = JsonFormat()
OURS = JsonFormat(newline=True)  # a task folder's JSON files


def dump(data: Any, fmt: JsonFormat) -> bytes:
    separators = (",", ":") if fmt.compact else None
    text = json.dumps(data, indent=fmt.indent, ensure_ascii=fmt.ensure_ascii, separators=separators)
    return (text + ("\n" if fmt.newline else "")).encode()


def _candidates(raw: bytes) -> list[JsonFormat]:
    newline = raw.endswith(b"\n")
    ascii_only = raw.isascii()
    lines = raw.split(b"\n", 2)
    guess: int | None = None
    if len(lines) > 1 and lines[1].startswith(b" "):
        guess = len(lines[1]) - len(lines[1].lstrip(b" "))
    indents: list[int | None] = [guess] if guess is not None else []
    indents += [i for i in (2, 4, 1, None) if i not in indents]
    out = []
    for indent in indents:
        for ensure_ascii in (ascii_only, not ascii_only):
            for compact in (False, True) if indent is None else (False,):
                out.append(JsonFormat(indent=indent, ensure_ascii=ensure_ascii, newline=newline,
                                      compact=compact))  # fmt: skip
    return out


def detect(raw: bytes, data: Any) -> JsonFormat | None:
    """The format that writes `data` as exactly `raw`, or None."""
    for fmt in _candidates(raw):
        if dump(data, fmt) == raw:
            return fmt
    return None


def parse(raw: bytes) -> Any:
    """The JSON of a file's bytes; ValueError says where it is broken."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
