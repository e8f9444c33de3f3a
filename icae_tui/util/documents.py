"""TOML and JSON parsed with a bound on nesting.

The standard parsers recurse once per level, so a file of ten thousand `[` (a batch spec,
an agents file, a line of a task's teachings) ends in a `RecursionError` rather than a
message, and a document a few hundred levels deep parses here but not where it is read
again (pydantic's JSON parser stops at about 200 levels). Both become `TooDeep`, a
`ValueError`, which each reader words as its own error naming the file."""

from __future__ import annotations

import json
import tomllib
from typing import Any

MAX_DEPTH = 100  # levels of tables and arrays; real files nest a handful


class TooDeep(ValueError):
    """A document nests deeper than MAX_DEPTH levels."""

    def __init__(self) -> None:
        super().__init__(f"nested more than {MAX_DEPTH} levels deep")


def depth_within(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether `value`'s dicts and lists nest at most `limit` levels (walked without
    recursion, so any depth is measured)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def load_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads`, with TooDeep for a document nested too deep for it or for us."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise TooDeep() from None
    if not depth_within(data):
        raise TooDeep()
    return data


def load_json(text: str | bytes) -> Any:
    """`json.loads`, with TooDeep for a document nested too deep for it or for us."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    if not depth_within(data):
        raise TooDeep()
    return data
