"""What differs between the oracle's and the delivery's output, for case detail: line rows
side by side, each marked equal / changed / only on one side, and inside a changed line the
character spans that differ (so a display can highlight them). Pure and bounded: huge
outputs are cut at MAX_LINES rows and MAX_LINE_CHARS characters a line, and the cut is said.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum

from icae_tui.util.safe_text import lines, printable

MAX_LINES = 2000
MAX_LINE_CHARS = 400
MAX_INLINE_CHARS = 200  # changed lines longer than this are not compared character by character


class RowKind(StrEnum):
    EQUAL = "equal"
    CHANGED = "changed"
    ONLY_ORACLE = "only_oracle"  # the delivery lacks this line
    ONLY_DELIVERY = "only_delivery"  # the delivery has an extra line


Span = tuple[int, int]  # [start, end) of the printable line


@dataclass(frozen=True)
class DiffRow:
    kind: RowKind
    oracle: str | None  # printable, cut at MAX_LINE_CHARS
    delivery: str | None
    oracle_spans: tuple[Span, ...] = ()  # what differs inside a changed line
    delivery_spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Diff:
    rows: list[DiffRow]
    cut: bool  # rows beyond MAX_LINES were left out
    identical: bool

    @property
    def changed(self) -> int:
        return sum(row.kind is not RowKind.EQUAL for row in self.rows)


def _lines(text: str) -> list[str]:
    return [printable(line, limit=MAX_LINE_CHARS) for line in lines(text)]


def _inline(a: str, b: str) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    if len(a) > MAX_INLINE_CHARS or len(b) > MAX_INLINE_CHARS:
        return ((0, len(a)),), ((0, len(b)),)
    left: list[Span] = []
    right: list[Span] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            left.append((i1, i2))
        if j2 > j1:
            right.append((j1, j2))
    return tuple(left), tuple(right)


def diff_outputs(oracle: str, delivery: str) -> Diff:
    a, b = _lines(oracle), _lines(delivery)
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [
                DiffRow(RowKind.EQUAL, a[i], b[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            left, right = _inline(a[i1 + k], b[j1 + k])
            rows.append(DiffRow(RowKind.CHANGED, a[i1 + k], b[j1 + k], left, right))
        rows += [DiffRow(RowKind.ONLY_ORACLE, a[i], None) for i in range(i1 + pairs, i2)]
        rows += [DiffRow(RowKind.ONLY_DELIVERY, None, b[j]) for j in range(j1 + pairs, j2)]
    cut = len(rows) > MAX_LINES
    return Diff(rows[:MAX_LINES], cut, identical=oracle == delivery)
