"""What a model judge answered: the JSON object in a Chat Completions reply's text (the SM
judge's and the critic's answers are one object each, maybe wrapped in prose or a fence)."""

from __future__ import annotations

import json
import re
from typing import Any

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)  # from the first "{" to the last "}"


def reply_object(reply: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON object in the reply's first message, or None when there is none."""
    try:
        content = reply["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        return None
    found = _OBJECT.search(content) if isinstance(content, str) else None
    if found is None:
        return None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
