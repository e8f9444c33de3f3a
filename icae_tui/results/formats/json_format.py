"""The JSON report: build_report's dict as published in schemas/report-v3.schema.json."""

from __future__ import annotations

import json
import re
from typing import Any

from icae_tui.results.formats.registry import ReportFormat, register_format

_SURROGATE = re.compile("[\ud800-\udfff]")  # only ever inside a JSON string


def render_json(report: dict[str, Any]) -> str:
    text = json.dumps(report, indent=2, ensure_ascii=False)
    # A lone surrogate (bytes decoded with surrogateescape) has no UTF-8 form: as a JSON
    # escape it reads back as the same string and the file stays writable.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


register_format(
    ReportFormat(
        "json",
        "build_report's dict, as published in schemas/report-v3.schema.json",
        render_json,
        order=10,
    )
)
