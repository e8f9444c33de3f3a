"""The results table: one row per case of the run view, in planned order, updated in place."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from icae_tui.display.view import CaseRow, RunView
from icae_tui.display.wording import PENDING
from icae_tui.domain.results import CaseResult
from icae_tui.ui.text import clip, exit_text, safe, verdict_text

COLUMNS = (
    ("case", "case", None),
    ("pattern", "pattern", None),
    ("verdict", "verdict", 13),
    ("reason", "reason", None),
    ("oracle", "oracle exit", 11),
    ("delivery", "delivery exit", 13),
)
PATTERN_WIDTH = 28
REASON_WIDTH = 52  # the full reason is in the case details (Enter)


class ResultsTable(DataTable[Text]):
    """Drawn from the view on `flush()` (batched by the run screen's timer)."""

    BINDINGS = [Binding("enter", "select_cursor", "Case details")]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.view: RunView | None = None
        self.results: dict[str, CaseResult] = {}  # the results drawn, by case id
        self.planned: list[str] = []  # the rows drawn, in order
        self._rows: dict[str, CaseRow] = {}
        self._rev = -1

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def show(self, view: RunView) -> None:
        self.view = view

    def flush(self) -> None:
        view = self.view
        if view is None or view.cases_rev == self._rev:
            return
        self._rev = view.cases_rev
        with self.app.batch_update():
            for case_id, row in view.cases.items():
                if case_id not in self._rows:
                    self._add(row)
                elif self._rows[case_id] is not row:
                    self._update(row)
                self._rows[case_id] = row
        self.border_title = "Results" + (f" · {s}" if (s := view.results_summary()) else "")

    def _add(self, row: CaseRow) -> None:
        self.planned.append(row.case_id)
        self.add_row(
            safe(row.case_id),
            clip(row.pattern, PATTERN_WIDTH, "dim"),
            Text(PENDING, style="dim"),
            Text(""),
            Text(""),
            Text(""),
            key=row.case_id,
        )
        if row.result is not None:
            self._update(row)

    def _update(self, row: CaseRow) -> None:
        r = row.result
        cells = {"pattern": clip(row.pattern, PATTERN_WIDTH, "dim")}
        if r is not None:
            self.results[row.case_id] = r
            oracle, delivery = r.oracle, r.delivery
            cells |= {
                "verdict": verdict_text(r.verdict),
                "reason": clip(r.reason, REASON_WIDTH),
                "oracle": exit_text(oracle.exit_code, oracle.timed_out) if oracle else Text("—"),
                "delivery": exit_text(delivery.exit_code, delivery.timed_out)
                if delivery
                else Text("—"),
            }
        for column, value in cells.items():
            wide = column in ("reason", "pattern")  # the free-text columns may grow
            self.update_cell(row.case_id, column, value, update_width=wide)

    def summary(self) -> str:
        """e.g. "12 accepted · 3 wrong_answer · 55 pending"."""
        return self.view.results_summary() if self.view is not None else ""

    def verdicts(self) -> list[str]:
        """The verdict column as plain strings, in row order (for tests and summaries)."""
        return [str(self.get_cell(case_id, "verdict")) for case_id in self.planned]
