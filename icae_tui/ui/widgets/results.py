"""The results table: one row per case of the run view, updated in place, in planned order
or sorted by a column, and filtered (display/results_filter.py: tier, pattern, verdict,
failures only, a search over case id, pattern and reason).

Its columns fit its width: the priority columns (case, verdict, the two exit codes) keep
their whole width; the flexible ones (reason, then pattern) share the rest and are cut with
"…" (the case details, Enter, have them whole), or left out when there is no room for them.
The exit columns get short labels when the priority columns do not fit otherwise. Each
metric of a scorer other than the ladder (the run's specs: CasesPlanned) gets a narrow
column after them, kept whole too. Whenever the fit changes (a resize, longer case ids or
verdicts, the run's metrics), the table is drawn again.

Widths come from this policy, never from measuring the table: a row's case id and pattern
are known when its case is planned, so a finished case changes only its verdict, reason and
exit cells (no column is measured again), and the widest values are kept as rows come in.

`ResultsPane` holds the table and its search box, and the keys that sort and filter it (they
work while the table or its search box has the focus): `/` search, `s` the next sort column
(or click a header; again: the other way), `o` the other way, `v` / `i` / `a` the next
verdict / tier / pattern, `x` failures only, Escape clears the filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Input

from icae_tui.display.metric_text import extra_specs, label, value_seg, value_width
from icae_tui.display.results_filter import (
    METRIC_SORT,
    ResultsQuery,
    cycle_filter,
    describe,
    next_sort,
    select,
    sort_by,
)
from icae_tui.display.view import CaseRow, RunView
from icae_tui.display.wording import NOT_RUN, PENDING
from icae_tui.domain.results import CaseResult, MetricSpec, Verdict
from icae_tui.ui.keymap import keyed
from icae_tui.ui.text import clip, exit_text, safe, segments, verdict_text
from icae_tui.util.safe_text import printable

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
RESULT_COLUMNS = ("verdict", "reason", "oracle", "delivery")  # what a finished case changes
METRIC_KEY = METRIC_SORT  # + the metric's name: its column's key, and its sort


def metric_key(spec: MetricSpec) -> str:
    return METRIC_KEY + spec.name


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int


def fit(
    natural: dict[str, int], width: int, padding: int, metrics: Sequence[MetricSpec] = ()
) -> tuple[Column, ...]:
    """The columns shown, in order, and their widths for a table `width` cells wide (0: not
    laid out yet, every column at its natural width). `natural`: each column's widest cell,
    label excluded; `padding`: the cells a column takes beside its content; `metrics`: the
    columns of metrics, after the others, whole."""
    labels = dict(LABELS) | {metric_key(m): label(m) for m in metrics}
    natural = natural | {metric_key(m): value_width(m) for m in metrics}
    order = (*ORDER, *(metric_key(m) for m in metrics))
    priority = (*PRIORITY, *(metric_key(m) for m in metrics))

    def whole(key: str) -> int:
        return max(natural.get(key, 0), cell_len(labels[key]))

    if width <= 0:
        return tuple(Column(k, labels[k], whole(k)) for k in order)
    fixed = sum(whole(k) + padding for k in priority)
    if fixed > width:
        labels |= SHORT_LABELS
        fixed = sum(whole(k) + padding for k in priority)
    widths = {k: whole(k) for k in priority}
    rest = width - fixed
    if rest >= 2 * (padding + MIN_FLEX):
        room = rest - 2 * padding
        pattern = min(whole("pattern"), max(MIN_FLEX, room - REASON_WANTS, room * 2 // 5))
        widths |= {"pattern": pattern, "reason": room - pattern}  # the reason fills the line
    elif rest >= padding + MIN_FLEX:
        widths["reason"] = rest - padding
    return tuple(Column(k, labels[k], widths[k]) for k in order if k in widths)


def text_width(value: str) -> int:
    return min(cell_len(printable(value[:TEXT_LIMIT])), TEXT_LIMIT)


class ResultsTable(DataTable[Text]):
    """Drawn from the view on `flush()` (batched by the run screen's timer)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select_cursor", "Case details")]

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, name=name, id=id, classes=classes)
        self.view: RunView | None = None
        self.results: dict[str, CaseResult] = {}  # the results drawn, by case id
        self.planned: list[str] = []  # every case, in planned order
        self.shown: list[str] = []  # the rows drawn, in order
        self.results_query = ResultsQuery()
        self.fitted: tuple[Column, ...] = ()
        self.metric_columns: tuple[MetricSpec, ...] = ()  # other scorers' than the ladder's
        self.natural: dict[str, int] = {
            "case": 0, "pattern": 0, "verdict": max(VERDICT_WIDTH, len(PENDING), len(NOT_RUN)),
            "reason": 0, "oracle": EXIT_WIDTH, "delivery": EXIT_WIDTH,
        }  # fmt: skip  # the widest cell of each column, kept up to date as rows come in
        self._rows: dict[str, CaseRow] = {}
        self._rev = -1

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self, event: events.Resize) -> None:
        with self.app.batch_update():
            self._fit()

    def show(self, view: RunView) -> None:
        self.view = view

    @property
    def case_rows(self) -> list[CaseRow]:
        """Every case's row as drawn last, in planned order."""
        return list(self._rows.values())

    # --- sorting and filtering ----------------------------------------------------------------

    def set_query(self, query: ResultsQuery) -> None:
        """Show the rows `query` selects, in its order."""
        if query == self.results_query:
            return
        self.results_query = query
        with self.app.batch_update():
            self._draw_rows(select(self._rows.values(), query))
        self._titles()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.set_query(sort_by(self.results_query, str(event.column_key.value)))

    # --- drawing ----------------------------------------------------------------------------

    def flush(self) -> None:
        view = self.view
        if view is None or view.cases_rev == self._rev:
            return
        self._rev = view.cases_rev
        with self.app.batch_update():
            new: list[CaseRow] = []
            changed: list[tuple[CaseRow, CaseRow]] = []
            for case_id, row in view.cases.items():
                old = self._rows.get(case_id)
                if old is None:
                    new.append(row)
                    self.planned.append(case_id)
                elif old is not row:
                    changed.append((old, row))
                self._rows[case_id] = row
                if row.result is not None:
                    self.results[case_id] = row.result
            self.metric_columns = tuple(extra_specs(view.metric_specs))
            self._measure(new, [row for _, row in changed])
            if not self._fit():  # the same columns: only what changed is drawn
                self._update(new, changed)
            if new or changed:
                self._forget_renders()
        self._titles()

    def _forget_renders(self) -> None:
        """Drop the rows and cells drawn before: DataTable keys every render it caches by
        its count of changes, so after a change none of them is drawn again, yet its caches
        (10,000 cells, 1,000 rows and lines) keep them until full: about 10 MiB of dead
        renders while cases finish. (Its styles are not keyed so: they stay.)"""
        for cache in (
            self._cell_render_cache,
            self._row_render_cache,
            self._row_renderable_cache,
            self._line_cache,
        ):
            cache.clear()

    def _update(self, new: list[CaseRow], changed: list[tuple[CaseRow, CaseRow]]) -> None:
        """New rows appended, finished ones updated in place, unless the query now selects
        other rows or another order: then the rows are drawn again."""
        if self.results_query.default:
            order = [*self.shown, *(row.case_id for row in new)]
        else:
            order = select(self._rows.values(), self.results_query)
        if order[: len(self.shown)] != self.shown:
            self._draw_rows(order)
            return
        for case_id in order[len(self.shown) :]:
            self.add_row(*self._cells(self._rows[case_id]), key=case_id)
        self.shown = order
        drawn = set(order)
        for old, row in changed:
            if row.case_id not in drawn:
                continue
            keys = set(RESULT_COLUMNS) if old.result is not row.result else set()
            keys |= {metric_key(m) for m in self.metric_columns} if keys else set()
            if old.pattern != row.pattern:
                keys.add("pattern")  # planned without patterns (runs stored before)
            for column, value in zip(self.fitted, self._cells(row), strict=True):
                if column.key in keys:
                    self.update_cell(row.case_id, column.key, value)

    def _draw_rows(self, order: list[str]) -> None:
        """Draw these rows (the columns stay); the cursor stays on its case if it is shown."""
        at = self.cursor_row
        on = self.shown[at] if 0 <= at < len(self.shown) else None
        self.clear()
        self.shown = list(order)
        for case_id in order:
            self.add_row(*self._cells(self._rows[case_id]), key=case_id)
        if self.row_count:
            row = order.index(on) if on in order else min(at, self.row_count - 1)
            self.move_cursor(row=row, animate=False)

    def _titles(self) -> None:
        summary = self.view.results_summary() if self.view is not None else ""
        self.border_title = "Results" + (f" · {summary}" if summary else "")
        self.border_subtitle = describe(self.results_query, len(self.shown), len(self.planned))

    def _width(self) -> int:
        """The cells the columns may take: the content's, less a vertical scrollbar (kept
        free whether it shows or not, so that it showing does not change the fit)."""
        return max(0, self.content_size.width - self.styles.scrollbar_size_vertical)

    def _measure(self, new: list[CaseRow], finished: list[CaseRow]) -> None:
        """Keep the widest cell of each column: case and pattern from new rows, verdict and
        reason from finished ones (a pattern that came only with its result too)."""
        n = self.natural
        for row in new:
            n["case"] = max(n["case"], text_width(row.case_id))
            n["pattern"] = max(n["pattern"], text_width(row.pattern))
        for row in finished:
            n["pattern"] = max(n["pattern"], text_width(row.pattern))
            n["verdict"] = max(n["verdict"], text_width(row.verdict))
            n["reason"] = max(n["reason"], text_width(row.reason))

    def _fit(self) -> bool:
        """Fit the columns to the width; True when that drew the table again (every row)."""
        layout = fit(self.natural, self._width(), 2 * self.cell_padding, self.metric_columns)
        if layout == self.fitted:
            return False
        self.fitted = layout
        cursor = self.cursor_row
        self.clear(columns=True)
        for column in layout:
            self.add_column(column.label, key=column.key, width=column.width)
        self.shown = select(self._rows.values(), self.results_query)
        for case_id in self.shown:
            self.add_row(*self._cells(self._rows[case_id]), key=case_id)
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1), animate=False)
        return True

    def _cells(self, row: CaseRow) -> list[Text]:
        """The row's cells for the columns shown; free text cut to its column's width."""
        r = row.result
        oracle, delivery = (r.oracle, r.delivery) if r is not None else (None, None)
        done = r is not None
        cells: dict[str, Text | str | None] = {
            "case": safe(row.case_id),
            "pattern": row.pattern,
            "verdict": verdict_text(r.verdict)
            if r is not None
            else Text(NOT_RUN if row.not_run else PENDING, style="dim"),
            "reason": r.reason if r is not None else "",
            "oracle": exit_text(oracle.exit_code, oracle.timed_out) if oracle else None,
            "delivery": exit_text(delivery.exit_code, delivery.timed_out) if delivery else None,
        }
        for m in self.metric_columns:
            value = r.metrics.get(m.name) if r is not None else None
            cells[metric_key(m)] = segments([value_seg(m, value, done=done)])
        out: list[Text] = []
        for column in self.fitted:
            cell = cells[column.key]
            if isinstance(cell, str):
                style = "dim" if column.key == "pattern" else ""
                cell = clip(cell[:TEXT_LIMIT], column.width, style)
            elif cell is None:
                cell = Text("—") if done else Text("")
            out.append(cell)
        return out

    # --- reading ----------------------------------------------------------------------------

    def summary(self) -> str:
        """e.g. "12 accepted · 3 wrong_answer · 55 pending" (once the run is over: "not run")."""
        return self.view.results_summary() if self.view is not None else ""

    def verdicts(self) -> list[str]:
        """The verdict column as plain strings, in row order (for tests and summaries)."""
        return [str(self.get_cell(case_id, "verdict")) for case_id in self.shown]


class ResultsSearch(Input):
    """The results' search box: typing filters; Enter or ↓ back to the table, Escape clears."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "done", "To the results", show=False),
        Binding("escape", "clear", "Clear search", show=False),
    ]

    def action_done(self) -> None:
        self.post_message(self.Submitted(self, self.value))

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.Submitted(self, ""))


class ResultsPane(Vertical):
    """The results table with its search box, and the keys that sort and filter it."""

    DEFAULT_CSS = """
    ResultsPane {
        height: 2fr;
        min-height: 6;
    }
    ResultsPane > ResultsSearch {
        display: none;
        background: $surface;
    }
    ResultsPane > ResultsSearch:focus {
        background: $primary 20%;
    }
    ResultsPane.-searching > ResultsSearch {
        display: block;
    }
    """
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "results",
        [
            Binding("slash", "search", "Search results"),
            Binding("s", "sort", "Sort"),
            Binding("o", "reverse", "Reverse sort", show=False),
            Binding("v", "filter('verdict')", "Verdict"),
            Binding("i", "filter('split')", "Tier", show=False),
            Binding("a", "filter('pattern')", "Pattern", show=False),
            Binding("x", "failures", "Failures only"),
            Binding("escape", "clear", "Clear filters"),  # only while there is something to clear
        ],
    )

    def __init__(
        self,
        table: ResultsTable,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.table = table

    def compose(self) -> ComposeResult:
        yield ResultsSearch(
            placeholder="search case id, pattern, reason", id="results-search", compact=True
        )
        yield self.table

    @property
    def search_box(self) -> ResultsSearch:
        return self.query_one(ResultsSearch)

    @property
    def results_query(self) -> ResultsQuery:
        return self.table.results_query

    def set_query(self, query: ResultsQuery) -> None:
        self.table.set_query(query)
        self.refresh_bindings()

    def action_search(self) -> None:
        self.add_class("-searching")
        self.search_box.focus()

    def action_sort(self) -> None:
        self.set_query(next_sort(self.results_query))

    def action_reverse(self) -> None:
        q = self.results_query
        self.set_query(replace(q, descending=not q.descending))

    def action_filter(self, field: str) -> None:
        self.set_query(cycle_filter(self.results_query, self.table.case_rows, field))

    def action_failures(self) -> None:
        q = self.results_query
        self.set_query(replace(q, failures_only=not q.failures_only))

    def action_clear(self) -> None:
        self.search_box.value = ""
        self.remove_class("-searching")
        self.set_query(self.results_query.cleared())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear":  # else Escape is the screen's (back)
            return self.results_query.filtered
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        q = self.results_query
        self.set_query(replace(q, search=event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.remove_class("-searching")
        self.table.focus()
