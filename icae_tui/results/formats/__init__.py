"""The report's formats, one module each, every one drawn from build_report's dict
(icae_tui/results/report.py, whose `render_report` / `write_report` are the entry points):
`markdown.py`, `junit.py`, `html.py` (with `svg.py`'s charts); `summary.py` counts what the
human-facing ones show, `text.py` escapes what the agent wrote."""

from __future__ import annotations

import json
import re
from typing import Any

from icae_tui.results.report import ReportFormat

_SURROGATE = re.compile("[\ud800-\udfff]")  # only ever inside a JSON string


def render(report: dict[str, Any], fmt: ReportFormat) -> str | bytes:
    """`report` (build_report's dict) in `fmt`."""
    if fmt is ReportFormat.JSON:
        text = json.dumps(report, indent=2, ensure_ascii=False)
        # A lone surrogate (bytes decoded with surrogateescape) has no UTF-8 form: as a JSON
        # escape it reads back as the same string and the file stays writable.
        return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
    if fmt is ReportFormat.MARKDOWN:
        from icae_tui.results.formats.markdown import render_markdown

        return render_markdown(report)
    if fmt is ReportFormat.JUNIT:
        from icae_tui.results.formats.junit import render_junit

        return render_junit(report)
    from icae_tui.results.formats.html import render_html

    return render_html(report)
