"""The results table: one row per case of the run view, in planned order, updated in place.

Its columns fit its width: the priority columns (case, verdict, the two exit codes) keep
their whole width; the flexible ones (reason, then pattern) share the rest and are cut with
"…" (the case details, Enter, have them whole), or left out when there is no room for them.
The exit columns get short labels when the priority columns do not fit otherwise. Whenever
the fit changes (a resize, longer case ids or verdicts), the table is drawn again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.widgets import DataTable

from icae_tui.display.view import CaseRow, RunView
from icae_tui.display.wording import PENDING
from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.safe_text import printable
from icae_tui.ui.text import clip, exit_text, safe, verdict_text

ORDER = ("case", "pattern", "verdict", "reason", "oracle", "delivery")
LABELS = {
    "case": "case",
    "pattern": "pattern",
    "verdict": "verdict",
    "reason": "reason",
    "oracle": "oracle exit",
    "delivery": "delivery exit",
}
SHORT_LABELS = {"oracle": "oracle", "delivery": "delivery"}
PRIORITY = ("case", "verdict", "oracle", "delivery")  # always whole
EXIT_WIDTH = len("timeout")  # the widest exit cell (exit_text)
# The verdicts a row usually shows fit this; a wider one (oracle_nondeterministic) widens it.
VERDICT_WIDTH = max(len(v.value) for v in Verdict if v.counted)
MIN_FLEX = 6  # a flexible column narrower than this is left out
REASON_WANTS = 40  # the pattern gets what is left beyond this much for the reason
TEXT_LIMIT = 1000  # characters of a pattern or reason kept in a cell before cutting


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int


def fit(natural: dict[str, int], width: int, padding: int) -> tuple[Column, ...]:
    """The columns shown, in order, and their widths for a table `width` cells wide (0: not
    laid out yet, every column at its natural width). `natural`: each column's widest cell,
    label excluded; `padding`: the cells a column takes beside its content."""
    labels = dict(LABELS)

    def whole(key: str) -> int:
        return max(natural.get(key, 0), cell_len(labels[key]))

    if width <= 0:
        return tuple(Column(k, labels[k], whole(k)) for k in ORDER)
    fixed = sum(whole(k) + padding for k in PRIORITY)
    if fixed > width:
        labels |= SHORT_LABELS
        fixed = sum(whole(k) + padding for k in PRIORITY)
    widths = {k: whole(k) for k in PRIORITY}
    rest = width - fixed
    if rest >= 2 * (padding + MIN_FLEX):
        room = rest - 2 * padding
        pattern = min(whole("pattern"), max(MIN_FLEX, room - REASON_WANTS, room * 2 // 5))
        widths |= {"pattern": pattern, "reason": room - pattern}  # the reason fills the line
    elif rest >= padding + MIN_FLEX:
        widths["reason"] = rest - padding
    return tuple(Column(k, labels[k], widths[k]) for k in ORDER if k in widths)


class ResultsTable(DataTable[Text]):
    """Drawn from the view on `flush()` (batched by the run screen's timer)."""

    BINDINGS = [Binding("enter", "select_cursor", "Case details")]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.view: RunView | None = None
        self.results: dict[str, CaseResult] = {}  # the results drawn, by case id
        self.planned: list[str] = []  # the rows drawn, in order
        self.fitted: tuple[Column, ...] = ()
        self._rows: dict[str, CaseRow] = {}
        self._rev = -1

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self, event: events.Resize) -> None:
        with self.app.batch_update():
            self._fit()

    def show(self, view: RunView) -> None:
        self.view = view

    # --- drawing ----------------------------------------------------------------------------

    def flush(self) -> None:
        view = self.view
        if view is None or view.cases_rev == self._rev:
            return
        self._rev = view.cases_rev
        with self.app.batch_update():
            new: list[CaseRow] = []
            changed: list[CaseRow] = []
            for case_id, row in view.cases.items():
                if case_id not in self._rows:
                    new.append(row)
                elif self._rows[case_id] is not row:
                    changed.append(row)
                self._rows[case_id] = row
                if row.result is not None:
                    self.results[case_id] = row.result
            if not self._fit():  # the same columns: only what changed is drawn
                for row in new:
                    self.planned.append(row.case_id)
                    self.add_row(*self._cells(row), key=row.case_id)
                for row in changed:
                    for column, value in zip(self.fitted, self._cells(row), strict=True):
                        self.update_cell(row.case_id, column.key, value)
        self.border_title = "Results" + (f" · {s}" if (s := view.results_summary()) else "")

    def _width(self) -> int:
        """The cells the columns may take: the content's, less a vertical scrollbar (kept
        free whether it shows or not, so that it showing does not change the fit)."""
        return max(0, self.content_size.width - self.styles.scrollbar_size_vertical)

    def _natural(self) -> dict[str, int]:
        rows = self._rows.values()

        def widest(values: Iterable[str]) -> int:
            return max((cell_len(printable(v)) for v in values), default=0)

        verdicts = [r.verdict for r in rows if r.verdict]
        return {
            "case": widest(r.case_id for r in rows),
            "pattern": min(widest(r.pattern for r in rows), TEXT_LIMIT),
            "verdict": max(VERDICT_WIDTH, len(PENDING), widest(verdicts)),
            "reason": min(widest(r.reason for r in rows), TEXT_LIMIT),
            "oracle": EXIT_WIDTH,
            "delivery": EXIT_WIDTH,
        }

    def _fit(self) -> bool:
        """Fit the columns to the width; True when that drew the table again (every row)."""
        layout = fit(self._natural(), self._width(), 2 * self.cell_padding)
        if layout == self.fitted:
            return False
        self.fitted = layout
        cursor = self.cursor_row
        self.clear(columns=True)
        for column in layout:
            self.add_column(column.label, key=column.key, width=column.width)
        self.planned = list(self._rows)
        for row in self._rows.values():
            self.add_row(*self._cells(row), key=row.case_id)
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1), animate=False)
        return True

    def _cells(self, row: CaseRow) -> list[Text]:
        """The row's cells for the columns shown; free text cut to its column's width."""
        r = row.result
        oracle, delivery = (r.oracle, r.delivery) if r is not None else (None, None)
        done = r is not None
        cells = {
            "case": safe(row.case_id),
            "pattern": row.pattern,
            "verdict": verdict_text(r.verdict) if r is not None else Text(PENDING, style="dim"),
            "reason": r.reason if r is not None else "",
            "oracle": exit_text(oracle.exit_code, oracle.timed_out) if oracle else None,
            "delivery": exit_text(delivery.exit_code, delivery.timed_out) if delivery else None,
        }
        out: list[Text] = []
        for column in self.fitted:
            value = cells[column.key]
            if isinstance(value, str):
                style = "dim" if column.key == "pattern" else ""
                value = clip(value[:TEXT_LIMIT], column.width, style)
            elif value is None:
                value = Text("—") if done else Text("")
            out.append(value)
        return out

    # --- reading ----------------------------------------------------------------------------

    def summary(self) -> str:
        """e.g. "12 accepted · 3 wrong_answer · 55 pending"."""
        return self.view.results_summary() if self.view is not None else ""

    def verdicts(self) -> list[str]:
        """The verdict column as plain strings, in row order (for tests and summaries)."""
        return [str(self.get_cell(case_id, "verdict")) for case_id in self.planned]
