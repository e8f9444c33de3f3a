"""TOML values as text, for the task.toml an import writes (the standard library reads TOML
but does not write it)."""

from __future__ import annotations

import json

TomlValue = str | int | float | bool | list[str]


def toml_value(value: TomlValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + "".join(f"    {toml_value(v)},\n" for v in value) + "]"
    # a JSON string is a TOML basic string, but for DEL, which TOML wants escaped
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_table(name: str | None, values: dict[str, TomlValue | None]) -> str:
    """`[name]` and its `key = value` lines (None values left out); no header for None."""
    lines = [f"[{name}]"] if name else []
    lines += [f"{key} = {toml_value(v)}" for key, v in values.items() if v is not None]
    return "\n".join(lines) + "\n"
