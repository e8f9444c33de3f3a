"""The agent trace as a display keeps it: its last lines, which of them a filter shows, the
rows they take at a width, and a search through them. Knows nothing of Textual or Rich.

`TraceBuffer` keeps the trace's last `max_lines` lines, each numbered in the whole trace
(`seq`). Of those, the filter's (`TraceFilter`: by kind, a `KindFilter` preset, and by text)
are shown, each taking the rows `Wrapper` wraps it to at the width; only their counts are
kept (a row's text is cut from its line when drawn, `row(y)`), and at most `max_rows` rows:
the oldest shown lines go first. Memory is bounded however long the trace; `not_held` counts
the lines gone from its start.

Search (`search(query)`) finds a literal text in the lines shown: never a pattern, whatever
the text (the trace is the agent's untrusted output, the query the operator's); smart case
(case-insensitive unless the query has an upper-case letter). Its hits are lines; `step`
walks them forward or back, round the ends. A text filter matches the same way.

Rows are numbered from the first row shown (0) to `row_count` - 1; `epoch` changes when a
rebuild (a new width or filter) renumbers them, so a display can drop what it cached.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from icae_tui.display.view import TRACE_KEEP, TraceLine

__all__ = [
    "AGENT_ONLY",
    "ALL_LINES",
    "KIND_FILTERS",
    "MAX_ROWS",
    "MIN_WIDTH",
    "NO_OUTPUT",
    "WRAP_INDENT",
    "KindFilter",
    "Row",
    "TraceBuffer",
    "TraceFilter",
    "Wrapper",
    "compile_query",
    "wrap_spans",
]

MAX_ROWS = 4 * TRACE_KEEP  # rows a display keeps (a wrapped line takes several)
WRAP_INDENT = "  "  # before each continuation row of a wrapped line
MIN_WIDTH = 12  # narrower than this, lines are not wrapped
SPANS_CACHED = 512  # wrapped lines whose rows are remembered for drawing


# --- filters and search ----------------------------------------------------------------------


@dataclass(frozen=True)
class KindFilter:
    """Which kinds of line are shown: `only` these (None: all kinds), less `hide`."""

    name: str
    label: str  # what the display says while it is on ("" for all lines)
    only: frozenset[str] | None = None
    hide: frozenset[str] = frozenset()

    def shows(self, kind: str) -> bool:
        return (self.only is None or kind in self.only) and kind not in self.hide


ALL_LINES = KindFilter("all", "")
NO_OUTPUT = KindFilter("no-output", "no command output", hide=frozenset({"output"}))
AGENT_KINDS = frozenset({"said", "thought", "tool", "wrote", "command", "done", "submitted",
                         "question", "answer", "refused"})  # fmt: skip
AGENT_ONLY = KindFilter("agent", "agent, commands, questions", only=AGENT_KINDS)
KIND_FILTERS = (ALL_LINES, NO_OUTPUT, AGENT_ONLY)  # in the order a key cycles them


@lru_cache(maxsize=64)
def compile_query(query: str) -> re.Pattern[str] | None:
    """`query` as a literal pattern (None for no query): smart case, as a pager does."""
    if not query:
        return None
    flags = 0 if any(c.isupper() for c in query) else re.IGNORECASE
    return re.compile(re.escape(query), flags)


@dataclass(frozen=True)
class TraceFilter:
    """The lines shown: of the kinds `kinds` shows, those containing `text` (literal, smart
    case; "" for any)."""

    kinds: KindFilter = ALL_LINES
    text: str = ""

    @property
    def active(self) -> bool:
        return self.kinds is not ALL_LINES or bool(self.text)

    def shows(self, line: TraceLine) -> bool:
        if not self.kinds.shows(line.kind):
            return False
        pattern = compile_query(self.text)
        return pattern is None or pattern.search(line.text) is not None

    def next_kinds(self) -> TraceFilter:
        """The next kind filter (all lines → no command output → agent only → all lines)."""
        i = KIND_FILTERS.index(self.kinds) if self.kinds in KIND_FILTERS else -1
        return TraceFilter(KIND_FILTERS[(i + 1) % len(KIND_FILTERS)], self.text)

    def describe(self) -> str:
        """What a display says while it is on ("" when every line is shown)."""
        parts = [self.kinds.label] if self.kinds.label else []
        if self.text:
            parts.append(f"only “{self.text}”")
        return ", ".join(parts)


# --- wrapping --------------------------------------------------------------------------------


def wrap_spans(line: str, width: int, widths: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """`line`'s rows at `width` cells, as (start, end) offsets: broken after the last space of
    a row when it is in the row's second half, else at the width; rows after the first have
    WRAP_INDENT before them (counted in the width). `widths`: each character's cells (None:
    one each). A row takes one character at least. Under MIN_WIDTH, one row."""
    n = len(line)
    total = n if widths is None else sum(widths)
    if width < MIN_WIDTH or total <= width:
        return [(0, n)]
    spans: list[tuple[int, int]] = []
    start, room, rest = 0, width, total
    while rest > room:
        if widths is None:
            end, used = start + room, room
        else:
            end, used = start, 0
            while end < n and used + widths[end] <= room:
                used += widths[end]
                end += 1
            if end == start:
                end, used = start + 1, widths[start]
        space = line.rfind(" ", start, end)
        if space >= 0 and space - start >= room // 2 and space + 1 < end:
            end = space + 1
            used = end - start if widths is None else sum(widths[start:end])
        spans.append((start, end))
        start, rest = end, rest - used
        room = width - len(WRAP_INDENT)
    if start < n:
        spans.append((start, n))
    return spans


class Wrapper:
    """Lays a line out in rows. Here one character is one cell; a display whose characters
    may be wider (or zero-width) overrides `widths`."""

    def widths(self, text: str) -> Sequence[int] | None:
        """Each character's cells, or None when each takes one."""
        return None

    def spans(self, text: str, width: int) -> list[tuple[int, int]]:
        return wrap_spans(text, width, self.widths(text))

    def count(self, text: str, width: int) -> int:
        """How many rows `text` takes (`len(spans(text, width))`, without making them when
        the line fits)."""
        if width < MIN_WIDTH or len(text) <= width // 2:
            return 1  # no character takes more than two cells
        widths = self.widths(text)
        if widths is None:
            return _count_rows(text, width)
        if sum(widths) <= width:
            return 1
        return len(wrap_spans(text, width, widths))


def _count_rows(line: str, width: int) -> int:
    """`len(wrap_spans(line, width))` for one cell a character, without making the spans."""
    n = len(line)
    if width < MIN_WIDTH or n <= width:
        return 1
    rows, start, room = 0, 0, width
    while n - start > room:
        end = start + room
        space = line.rfind(" ", start, end)
        if space >= 0 and space - start >= room // 2:
            end = space + 1
        rows += 1
        start = end
        room = width - len(WRAP_INDENT)
    return rows + (start < n)


# --- the buffer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row shown: `text` is `indent` + `line.text[start:end]`."""

    text: str
    seq: int  # the line's number in the whole trace
    line: TraceLine
    start: int
    end: int
    indent: int  # characters before the line's text (WRAP_INDENT on a continuation row)


class TraceBuffer:
    def __init__(
        self,
        wrapper: Wrapper | None = None,
        *,
        max_lines: int = TRACE_KEEP,
        max_rows: int = MAX_ROWS,
    ) -> None:
        self.wrapper = wrapper if wrapper is not None else Wrapper()
        self.max_lines = max_lines
        self.max_rows = max_rows
        self.width = 0
        self.filter = TraceFilter()
        self.query = ""
        self.current: int | None = None  # the hit the display is on (a line's seq)
        self.epoch = 0
        self._kept: deque[TraceLine] = deque(maxlen=max_lines)
        self._total = 0  # lines ever added: the next line's seq
        # the lines shown: their seqs, lines and first rows (rows are numbered from the last
        # rebuild on; `_end` is the row after the last)
        self._seqs: list[int] = []
        self._shown: list[TraceLine] = []
        self._starts: list[int] = []
        self._end = 0
        self._hits: list[int] = []  # seqs of the lines shown that the search finds
        self._spans: dict[int, list[tuple[int, int]]] = {}  # by seq, of lines drawn lately

    # --- reading ---------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Lines ever added."""
        return self._total

    @property
    def lines(self) -> list[str]:
        """The lines kept, whole, shown or not."""
        return [line.text for line in self._kept]

    @property
    def kept(self) -> int:
        return len(self._kept)

    @property
    def not_held(self) -> int:
        """Lines at the trace's start that are gone: no longer kept, or (with every line
        shown) kept but past the row bound."""
        gone = self._total - len(self._kept)
        if self._seqs and not self.filter.active:
            return max(gone, self._seqs[0])
        return gone

    @property
    def shown(self) -> list[TraceLine]:
        """The lines the filter shows (of those kept, within the row bound)."""
        return list(self._shown)

    @property
    def row_count(self) -> int:
        return self._end - self._starts[0] if self._starts else 0

    def row_key(self, y: int) -> int:
        """Row `y`'s number since the last rebuild: it names the same row however many rows
        were dropped at the top since (with `epoch`, a key for what a display caches)."""
        return (self._starts[0] if self._starts else self._end) + y

    def rows(self) -> Iterator[str]:
        for y in range(self.row_count):
            yield self.row(y).text

    def locate(self, y: int) -> tuple[int, int]:
        """The index (in the lines shown) of the line that row `y` is part of, and the row's
        number within that line."""
        if not 0 <= y < self.row_count:
            raise IndexError(y)
        row = self._starts[0] + y
        i = bisect_right(self._starts, row) - 1
        return i, row - self._starts[i]

    def spans(self, i: int) -> list[tuple[int, int]]:
        """The rows of the `i`th line shown, as offsets in its text."""
        seq, text = self._seqs[i], self._shown[i].text
        rows = (
            self._starts[i + 1] - self._starts[i]
            if i + 1 < len(self._starts)
            else (self._end - self._starts[i])
        )
        if rows == 1:
            return [(0, len(text))]
        spans = self._spans.get(seq)
        if spans is None:
            if len(self._spans) >= SPANS_CACHED:
                self._spans.clear()
            spans = self._spans[seq] = self.wrapper.spans(text, self.width)
        return spans

    def row(self, y: int) -> Row:
        i, k = self.locate(y)
        line = self._shown[i]
        start, end = self.spans(i)[k]
        indent = WRAP_INDENT if k else ""
        return Row(indent + line.text[start:end], self._seqs[i], line, start, end, len(indent))

    def line_range(self, y0: int, y1: int) -> list[TraceLine]:
        """The lines shown (whole) that rows `y0` to `y1` (excluded) are part of."""
        y1 = min(y1, self.row_count)
        if y0 >= y1:
            return []
        first, _ = self.locate(max(0, y0))
        last, _ = self.locate(y1 - 1)
        return self._shown[first : last + 1]

    def first_row(self, seq: int) -> int | None:
        """The row where the line `seq` begins, if it is shown."""
        i = bisect_left(self._seqs, seq)
        if i < len(self._seqs) and self._seqs[i] == seq:
            return self._starts[i] - self._starts[0]
        return None

    def seq_at(self, y: int) -> int | None:
        """The seq of the line that row `y` is part of (None: no rows)."""
        if not self._starts:
            return None
        i, _ = self.locate(min(max(0, y), self.row_count - 1))
        return self._seqs[i]

    def row_from(self, seq: int) -> int:
        """The first row of the first line shown whose seq is `seq` or later (the last row
        when there is none)."""
        i = bisect_left(self._seqs, seq)
        if i >= len(self._seqs):
            return max(0, self.row_count - 1)
        return self._starts[i] - self._starts[0]

    # --- adding ------------------------------------------------------------------------------

    def add(self, lines: Iterable[TraceLine]) -> int:
        """Keep `lines` (shown if the filter says so); the rows dropped at the top to stay
        within the bounds (what was below them moved up that many rows)."""
        shows = self.filter.shows if self.filter.active else None
        count, width = self.wrapper.count, self.width
        pattern = compile_query(self.query)
        seqs, shown, starts, hits = self._seqs, self._shown, self._starts, self._hits
        keep, end, seq = self._kept.append, self._end, self._total
        for line in lines:
            keep(line)
            if shows is None or shows(line):
                seqs.append(seq)
                shown.append(line)
                starts.append(end)
                end += count(line.text, width)
                if pattern is not None and pattern.search(line.text) is not None:
                    hits.append(seq)
            seq += 1
        self._end, self._total = end, seq
        return self._trim()

    def _trim(self) -> int:
        """Drop the lines shown that are no longer kept, then the oldest until the rows are
        within `max_rows` (one line longer than that stays); the rows dropped."""
        starts = self._starts
        if not starts:
            return 0
        gone = bisect_left(self._seqs, self._total - len(self._kept))
        too_many = min(bisect_left(starts, self._end - self.max_rows), len(starts) - 1)
        k = max(gone, too_many)
        if k == 0:
            return 0
        dropped = (starts[k] if k < len(starts) else self._end) - starts[0]
        del self._seqs[:k], self._shown[:k], starts[:k]
        first = self._seqs[0] if self._seqs else self._total
        del self._hits[: bisect_left(self._hits, first)]
        if self.current is not None and self.current < first:
            self.current = None
        return dropped

    def clear(self) -> None:
        self._kept.clear()
        self._total = 0
        self._rebuild()

    # --- width and filter --------------------------------------------------------------------

    def set_width(self, width: int) -> bool:
        """Lay the lines out at `width`; whether anything changed."""
        if width == self.width:
            return False
        self.width = width
        self._rebuild()
        return True

    def set_filter(self, new: TraceFilter) -> bool:
        if new == self.filter:
            return False
        self.filter = new
        self._rebuild()
        return True

    def _rebuild(self) -> None:
        """The lines shown and their rows, again from the lines kept (their seqs stay)."""
        self.epoch += 1
        self._spans.clear()
        self._seqs, self._shown, self._starts, self._hits = [], [], [], []
        self._end = 0
        kept, total = list(self._kept), self._total
        self._kept.clear()
        self._total = total - len(kept)
        self.add(kept)
        if self.hit_number() is None:
            self.current = None

    # --- search ------------------------------------------------------------------------------

    @property
    def hits(self) -> int:
        return len(self._hits)

    def hit_number(self) -> int | None:
        """The current hit's place among the hits (from 1), if there is one."""
        if self.current is None:
            return None
        i = bisect_left(self._hits, self.current)
        return i + 1 if i < len(self._hits) and self._hits[i] == self.current else None

    def search(self, query: str) -> int:
        """Find `query` in the lines shown (from now on, in those added too); the hits."""
        self.query = query
        self.current = None
        pattern = compile_query(query)
        self._hits = (
            []
            if pattern is None
            else [
                s
                for s, line in zip(self._seqs, self._shown, strict=True)
                if pattern.search(line.text)
            ]
        )
        return len(self._hits)

    def step(self, forward: bool, origin: int | None) -> int | None:
        """Go to the next hit after the line `origin` (a seq; None: from the current hit, or
        the first/last hit), or the one before it, round the ends; the hit's seq."""
        hits = self._hits
        if not hits:
            self.current = None
            return None
        ref = origin if origin is not None else self.current
        if ref is None:
            found = hits[0] if forward else hits[-1]
        elif forward:
            i = bisect_right(hits, ref)
            found = hits[i] if i < len(hits) else hits[0]
        else:
            i = bisect_left(hits, ref) - 1
            found = hits[i] if i >= 0 else hits[-1]
        self.current = found
        return found

    def marks(self, row: Row) -> list[tuple[int, int]]:
        """Where the search query is found in `row`, as offsets in the row's text (a match
        that goes on to the next row is marked on both)."""
        pattern = compile_query(self.query)
        if pattern is None:
            return []
        out: list[tuple[int, int]] = []
        for m in pattern.finditer(row.line.text):
            a, b = max(m.start(), row.start), min(m.end(), row.end)
            if a < b:
                out.append((a - row.start + row.indent, b - row.start + row.indent))
            elif m.start() >= row.end:
                break
        return out
