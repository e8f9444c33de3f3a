"""The results table: one row per planned case, keyed by case id, updated in place."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

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
PENDING = "…"
PATTERN_WIDTH = 28
REASON_WIDTH = 52  # the full reason is in the case details (Enter)


class ResultsTable(DataTable[Text]):
    """Rows appear in planned order; finished cases are queued and applied in batches."""

    BINDINGS = [Binding("enter", "select_cursor", "Case details")]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.results: dict[str, CaseResult] = {}
        self.planned: list[str] = []
        self._planned_set: set[str] = set()
        self._queued: dict[str, CaseResult] = {}

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def _retitle(self) -> None:
        summary = self.summary()
        self.border_title = "Results" + (f" · {summary}" if summary else "")

    def plan(self, case_ids: list[str], patterns: dict[str, str] | None = None) -> None:
        patterns = patterns or {}
        with self.app.batch_update():
            for case_id in case_ids:
                if case_id in self._planned_set:
                    continue
                self.planned.append(case_id)
                self._planned_set.add(case_id)
                self.add_row(
                    safe(case_id),
                    clip(patterns.get(case_id, ""), PATTERN_WIDTH, "dim"),
                    Text(PENDING, style="dim"),
                    Text(""),
                    Text(""),
                    Text(""),
                    key=case_id,
                )
        self._retitle()

    def queue(self, result: CaseResult) -> None:
        self._queued[result.case_id] = result

    @property
    def pending(self) -> int:
        return len(self._queued)

    def flush(self) -> None:
        if not self._queued:
            return
        queued, self._queued = self._queued, {}
        with self.app.batch_update():
            for case_id, r in queued.items():
                self.results[case_id] = r
                if case_id not in self._planned_set:  # not announced: add it at the end
                    self.plan([case_id])
                oracle, delivery = r.oracle, r.delivery
                cells = {
                    "pattern": clip(r.pattern, PATTERN_WIDTH, "dim"),
                    "verdict": verdict_text(r.verdict),
                    "reason": clip(r.reason, REASON_WIDTH),
                    "oracle": exit_text(oracle.exit_code, oracle.timed_out)
                    if oracle
                    else Text("—"),
                    "delivery": exit_text(delivery.exit_code, delivery.timed_out)
                    if delivery
                    else Text("—"),
                }
                for column, value in cells.items():
                    wide = column in ("reason", "pattern")  # the free-text columns may grow
                    self.update_cell(case_id, column, value, update_width=wide)
        self._retitle()

    def summary(self) -> str:
        """e.g. "12 accepted · 3 wrong_answer · 55 pending"."""
        counts: dict[str, int] = {}
        for r in self.results.values():
            counts[r.verdict.value] = counts.get(r.verdict.value, 0) + 1
        parts = [f"{n} {verdict}" for verdict, n in sorted(counts.items(), key=lambda kv: -kv[1])]
        pending = len(self.planned) - len(self.results)
        if pending:
            parts.append(f"{pending} pending")
        return " · ".join(parts)

    def verdicts(self) -> list[str]:
        """The verdict column as plain strings, in row order (for tests and summaries)."""
        return [str(self.get_cell(case_id, "verdict")) for case_id in self.planned]
