"""The score's charts in the terminal — what the HTML report draws (icae_tui/results/formats/html.py),
from the same figures (icae_tui/results/formats/summary.py): the pass rate per command pattern and per
tier over the counted cases, the verdict distribution over every case, and the clarification
timeline (when each question was asked and answered, seconds into the run). Drawn with
textual-plotext; `g` on the run screen opens it, `r` redraws it from the run's events so far.
Under them, once the diagnostics made it, the combined score and its formula.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from icae_tui.domain.events import Event
from icae_tui.results.formats.summary import SCORED_LABEL, Summary, summarise
from icae_tui.results.report import build_report
from icae_tui.ui.keymap import keyed
from icae_tui.ui.widgets.footer import Footer
from icae_tui.util.safe_text import printable

LABEL_WIDTH = 14  # a pattern's name on an axis


def _label(text: str) -> str:
    shown = printable(text, limit=LABEL_WIDTH * 4).replace("\n", " ")
    return shown if len(shown) <= LABEL_WIDTH else shown[: LABEL_WIDTH - 1] + "…"


def _percent(rate: float | None) -> float:
    return round(100 * rate, 1) if rate is not None else 0.0


class ScoreChartsScreen(Screen[None]):
    DEFAULT_CSS = """
    ScoreChartsScreen Grid { grid-size: 2 2; grid-gutter: 0 1; }
    ScoreChartsScreen PlotextPlot { border: round $panel; height: 1fr; }
    ScoreChartsScreen #combined { height: auto; padding: 0 1; display: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "charts",
        [
            Binding("escape", "app.pop_screen", "Back"),
            Binding("q", "app.pop_screen", "Back", show=False),
            Binding("r", "redraw", "Redraw"),
        ],
    )

    def __init__(self, events: Callable[[], list[Event]]) -> None:
        """`events`: the run's events so far (asked again on each redraw)."""
        super().__init__()
        self.events = events

    def compose(self) -> ComposeResult:
        with Grid():
            yield PlotextPlot(id="by-pattern")
            yield PlotextPlot(id="by-tier")
            yield PlotextPlot(id="verdicts")
            yield PlotextPlot(id="timeline")
        yield Static(id="combined", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Score charts"
        self.action_redraw()

    def action_redraw(self) -> None:
        summary = summarise(build_report(self.events()))
        self.sub_title = f"{printable(summary.task)} · {printable(summary.agent)}"
        self._patterns(summary)
        self._tiers(summary)
        self._verdicts(summary)
        self._timeline(summary)
        combined = self.query_one("#combined", Static)
        text = combined_text(summary.review)
        combined.update(text)
        combined.display = bool(text)

    def _plot(self, widget_id: str, title: str) -> PlotextPlot:
        widget = self.query_one(f"#{widget_id}", PlotextPlot)
        widget.border_title = title
        widget.plt.clear_data()
        widget.plt.clear_figure()
        return widget

    def _patterns(self, summary: Summary) -> None:
        widget = self._plot("by-pattern", f"Pass rate per pattern · {SCORED_LABEL} · %")
        rows = [r for r in summary.patterns if r.scored.total]
        if rows:
            widget.plt.bar([_label(r.pattern) for r in rows],
                           [_percent(r.scored.rate) for r in rows], orientation="horizontal", width=0.3)  # fmt: skip
            widget.plt.xlim(0, 100)
        else:
            widget.plt.title("no counted case yet")
        widget.refresh()

    def _tiers(self, summary: Summary) -> None:
        widget = self._plot("by-tier", "Pass rate per tier · %")
        tiers = [(t, tally) for t, tally in summary.tiers.items() if tally.total]
        if tiers:
            # horizontal, as the others: a label per row never collides with the next (below
            # each other, plotext dropped one of three at 80 columns)
            widget.plt.bar([f"{t} {tally.passed}/{tally.total}" for t, tally in tiers],
                           [_percent(tally.rate) for _, tally in tiers],
                           orientation="horizontal", width=0.3)  # fmt: skip
            widget.plt.xlim(0, 100)
        else:
            widget.plt.title("no case judged yet")
        widget.refresh()

    def _verdicts(self, summary: Summary) -> None:
        widget = self._plot("verdicts", "Verdicts · every case")
        if summary.verdicts:
            counts = [n for _, n in summary.verdicts]
            widget.plt.bar([_label(v) for v, _ in summary.verdicts], counts,
                           orientation="horizontal", width=0.3)  # fmt: skip
            top = max(counts)
            widget.plt.xticks(list(range(0, top + 1, max(1, top // 8))))  # whole cases
        else:
            widget.plt.title("no case judged yet")
        widget.refresh()

    def _timeline(self, summary: Summary) -> None:
        widget = self._plot("timeline", "Clarifications · seconds into the run")
        asked = [(t.asked_s, t.id) for t in summary.turns if t.asked_s is not None]
        answered = [(t.answered_s, t.id) for t in summary.turns if t.answered_s is not None]
        if asked:
            widget.plt.scatter([s for s, _ in asked], [q for _, q in asked], marker="?",
                               label="asked")  # fmt: skip
            if answered:
                widget.plt.scatter([s for s, _ in answered], [q for _, q in answered],
                                   marker="●", label="answered")  # fmt: skip
            widget.plt.ylabel("Q")
        else:
            widget.plt.title("no question asked")
        widget.refresh()


def combined_text(review: dict[str, Any] | None) -> str:
    """The combined score's line (evaluation/review.py), as the reports say it; "" without."""
    if not review or review.get("combined") is None:
        return ""
    w = review.get("weights") or {}
    parts = ", ".join(printable(str(k), limit=40) for k in review.get("components") or {})
    return (f"combined {_pct_text(review['combined'])} = {w.get('execution', 0):g} × execution "
            f"{_pct_text(review.get('execution'))} + {w.get('review', 0):g} × review "
            f"{_pct_text(review.get('review'))} (the review: the mean of {parts or 'none'})")  # fmt: skip


def _pct_text(rate: object) -> str:
    return f"{100 * rate:.1f}%" if isinstance(rate, int | float) else "—"
