"""The agent trace: a `Log` showing the run view's trace lines, written in batches.

Writing one line per widget call is ruinous with chatty agents, so the lines the view gained
are written every ~80 ms by `flush()` (the run screen's timer calls it). The view's lines are
printable already and cut at LINE_LIMIT; cases and the score have their own widgets.
"""

from __future__ import annotations

from textual.widgets import Log

from icae_tui.display.view import RunView
from icae_tui.display.wording import LINE_LIMIT

__all__ = ["LINE_LIMIT", "MAX_LINES", "TraceLog"]

MAX_LINES = 50_000
SHOWN_ELSEWHERE = frozenset({"case", "score"})  # the results table and the score line


class TraceLog(Log):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=MAX_LINES, highlight=False, **kwargs)  # type: ignore[arg-type]
        self.view: RunView | None = None
        self._cursor = 0  # of the view's lines, how many were taken

    def show(self, view: RunView) -> None:
        self.view = view
        self._cursor = 0

    @property
    def pending(self) -> int:
        """Lines the view has that are not written yet."""
        return self.view.trace_total - self._cursor if self.view is not None else 0

    def flush(self) -> None:
        """Write the lines gained since the last flush in one call."""
        if self.view is None or self._cursor == self.view.trace_total:
            return
        lines, self._cursor = self.view.trace_since(self._cursor)
        self.write_lines([line.text for line in lines if line.kind not in SHOWN_ELSEWHERE])
