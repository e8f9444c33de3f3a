"""Which results rows a display shows, and in which order: sorted by a column, filtered by
tier (the case's split), pattern and verdict, failures only, and a search over the case id,
the pattern and the reason. No Textual: the results table asks `select` for its rows.

Sorting keeps rows without a value (cases not finished yet) last, in planned order, both
ways; rows that tie keep their planned order. Case ids sort naturally (`case#2` before
`case#10`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from icae_tui.display.view import CaseRow
from icae_tui.domain.results import Verdict
from icae_tui.util.safe_text import printable

PLANNED = "planned"  # the sort of the run's own order
SORTS = (PLANNED, "case", "pattern", "verdict", "reason", "oracle", "delivery")
METRIC_SORT = "metric:"  # + a metric's name: by the case's value of it (a metric column)
PENDING_VERDICT = "pending"  # the verdict filter's word for cases not finished yet
FILTERS = ("split", "pattern", "verdict")
FILTER_LABELS = {"split": "tier", "pattern": "pattern", "verdict": "verdict"}
VERDICT_ORDER = [v.value for v in Verdict] + [PENDING_VERDICT]


@dataclass(frozen=True)
class ResultsQuery:
    sort: str = PLANNED  # one of SORTS
    descending: bool = False
    split: str | None = None  # None: every tier
    pattern: str | None = None
    verdict: str | None = None  # a verdict's value, or PENDING_VERDICT
    failures_only: bool = False  # finished cases that did not pass
    search: str = ""  # in the case id, the pattern or the reason; case-insensitive

    @property
    def filtered(self) -> bool:
        return bool(
            self.split is not None
            or self.pattern is not None
            or self.verdict is not None
            or self.failures_only
            or self.search.strip()
        )

    @property
    def default(self) -> bool:
        return self == ResultsQuery()

    def cleared(self) -> ResultsQuery:
        """The same sort, no filter."""
        return ResultsQuery(sort=self.sort, descending=self.descending)


def verdict_of(row: CaseRow) -> str:
    return row.verdict or PENDING_VERDICT


def value_of(row: CaseRow, field: str) -> str:
    """A row's value for a filter (split, pattern or verdict)."""
    if field == "verdict":
        return verdict_of(row)
    return row.split if field == "split" else row.pattern


def failed(row: CaseRow) -> bool:
    return row.result is not None and not row.result.passed


def matches(row: CaseRow, q: ResultsQuery) -> bool:
    if q.split is not None and row.split != q.split:
        return False
    if q.pattern is not None and row.pattern != q.pattern:
        return False
    if q.verdict is not None and verdict_of(row) != q.verdict:
        return False
    if q.failures_only and not failed(row):
        return False
    needle = q.search.strip().casefold()
    if needle:
        haystack = "\n".join((row.case_id, row.pattern, row.reason))
        return needle in printable(haystack, keep_newlines=True).casefold()
    return True


# --- sorting ------------------------------------------------------------------------------


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """`case#10` after `case#2`: digit runs compare as numbers."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part.casefold())
        for part in re.split(r"(\d+)", text)
        if part
    )


def _exit_key(row: CaseRow, side: str) -> tuple[int, int] | None:
    """Exit codes in order, a timeout after any code; None: not run (or not finished)."""
    ran = getattr(row.result, side, None) if row.result is not None else None
    if ran is None:
        return None
    if ran.timed_out:
        return (1, 0)
    return None if ran.exit_code is None else (0, ran.exit_code)


# A row's sort value: None for a row without one (sorted last, in planned order).
SortValue = tuple[tuple[int, int | str], ...] | tuple[int, int] | int | float | str
SortKey = Callable[[CaseRow], SortValue | None]
SORT_KEYS: dict[str, SortKey] = {
    "case": lambda row: natural(row.case_id),
    "pattern": lambda row: natural(row.pattern) if row.pattern else None,
    "verdict": lambda row: VERDICT_ORDER.index(row.verdict) if row.verdict else None,
    "reason": lambda row: row.reason.casefold() if row.result is not None else None,
    "oracle": lambda row: _exit_key(row, "oracle"),
    "delivery": lambda row: _exit_key(row, "delivery"),
}


def sort_key(sort: str) -> SortKey | None:
    if sort.startswith(METRIC_SORT):
        name = sort.removeprefix(METRIC_SORT)
        return lambda row: row.result.metrics.get(name) if row.result is not None else None
    return SORT_KEYS.get(sort)


def select(rows: Iterable[CaseRow], q: ResultsQuery) -> list[str]:
    """The case ids to show, in order, of `rows` (in planned order)."""
    kept = [row for row in rows if matches(row, q)]
    key = sort_key(q.sort)
    if key is None:
        ordered = kept[::-1] if q.descending else kept
        return [row.case_id for row in ordered]
    valued = [(key(row), row) for row in kept]
    known = [(value, row) for value, row in valued if value is not None]
    # a stable sort: ties keep the planned order, either way
    known.sort(key=lambda k: k[0], reverse=q.descending)
    unknown = [row for value, row in valued if value is None]
    return [row.case_id for row in [*(row for _, row in known), *unknown]]


# --- changing a query -----------------------------------------------------------------------


def options(rows: Iterable[CaseRow], field: str) -> list[tuple[str, int]]:
    """The values a filter can take, each with its count of rows: tiers and patterns in the
    order they are first planned, verdicts in `Verdict`'s order (pending last)."""
    counts: dict[str, int] = {}
    for row in rows:
        value = value_of(row, field)
        if value:
            counts[value] = counts.get(value, 0) + 1
    if field == "verdict":
        return sorted(counts.items(), key=lambda kv: VERDICT_ORDER.index(kv[0])
                      if kv[0] in VERDICT_ORDER else len(VERDICT_ORDER))  # fmt: skip
    return list(counts.items())


def next_value(current: str | None, values: Sequence[str]) -> str | None:
    """The filter's next value: all (None) → each value in turn → all."""
    if not values:
        return None
    if current not in values:
        return values[0] if current is None else None
    i = values.index(current)
    return values[i + 1] if i + 1 < len(values) else None


def cycle_filter(q: ResultsQuery, rows: Iterable[CaseRow], field: str) -> ResultsQuery:
    values = [value for value, _ in options(rows, field)]
    current: str | None = getattr(q, field)
    value = next_value(current, values)
    if field == "split":
        return replace(q, split=value)
    if field == "pattern":
        return replace(q, pattern=value)
    if field == "verdict":
        return replace(q, verdict=value)
    raise ValueError(f"no filter {field!r}; one of {', '.join(FILTERS)}")


def next_sort(q: ResultsQuery) -> ResultsQuery:
    """The next column to sort by, ascending (after the last: the planned order)."""
    i = SORTS.index(q.sort) if q.sort in SORTS else -1
    return replace(q, sort=SORTS[(i + 1) % len(SORTS)], descending=False)


def sort_by(q: ResultsQuery, column: str) -> ResultsQuery:
    """Sort by `column` (a header clicked): ascending, or the other way if it was already."""
    if column not in SORTS and not column.startswith(METRIC_SORT):
        return q
    if q.sort == column:
        return replace(q, descending=not q.descending)
    return replace(q, sort=column, descending=False)


# --- saying it -----------------------------------------------------------------------------


def describe(q: ResultsQuery, shown: int, total: int) -> str:
    """e.g. `tier hidden · verdict wrong_answer · failures only · "ops" · by verdict ↓ ·
    3 of 70`; "" for the default query."""
    parts = [
        f"{FILTER_LABELS[field]} {printable(value)}"
        for field in FILTERS
        if (value := getattr(q, field)) is not None
    ]
    if q.failures_only:
        parts.append("failures only")
    if q.search.strip():
        parts.append(f'"{printable(q.search.strip(), limit=40)}"')
    if q.sort != PLANNED or q.descending:
        parts.append(
            f"by {printable(q.sort.removeprefix(METRIC_SORT))} {'↓' if q.descending else '↑'}"
        )
    if q.filtered:
        parts.append(f"{shown} of {total}")
    return " · ".join(parts)
