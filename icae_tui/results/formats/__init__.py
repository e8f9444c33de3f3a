"""The report's formats, one module each, every one drawn from build_report's dict
(icae_tui/results/report.py, whose `render_report` / `write_report` are the entry points)
and registered by name in `registry.py`: `json_format.py`, `markdown.py`, `junit.py`,
`html.py` (with `svg.py`'s charts); `summary.py` counts what the human-facing ones show,
`text.py` escapes what the agent wrote."""
