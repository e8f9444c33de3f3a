"""A case scorer registered in a few lines shows its metric, with no other change, in the
headless output and in the JSON report (the console's results table: tests/ui/
test_scorer_plugin.py). The run is judged while it is registered and shown after it is
gone, as a stored run is: what displays need travels in the events."""

from __future__ import annotations

import io

from icae_tui.display.plain import PlainPrinter
from icae_tui.evaluation.scorers import registered
from icae_tui.results.report import build_report
from tests.scorer_run import SHOUT, judged_run, shout


def test_a_new_case_metric_shows_in_the_headless_output():
    with registered(shout):
        events = judged_run()
    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in events:
        printer(ev)
    score_lines = [line for line in out.getvalue().splitlines() if line.startswith("score:")]
    # hidden cases only: "hello" is not upper case, "ADA" is
    assert len(score_lines) == 1 and "FM 50.0%  SHOUT 50.0%  │" in score_lines[0]


def test_a_new_case_metric_shows_in_the_report():
    with registered(shout):
        events = judged_run()
    report = build_report(events)
    assert report["metrics"][-1] == SHOUT.model_dump(mode="json")
    assert [c["metrics"]["shout"] for c in report["cases"]] == [1.0, 0.0, 1.0]
    assert report["score"]["rates"]["shout"] == 0.5
    assert report["score"]["metrics"][-1]["name"] == "shout"
    assert all("exec_ok" not in c for c in report["cases"])


def test_without_the_scorer_nothing_else_changes():
    events = judged_run()
    report = build_report(events)
    assert "shout" not in report["score"]["rates"]
    assert all("shout" not in c["metrics"] for c in report["cases"])
    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in events:
        printer(ev)
    assert "SHOUT" not in out.getvalue() and "FM 50.0%  │" in out.getvalue()
