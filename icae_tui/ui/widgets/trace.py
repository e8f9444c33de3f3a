"""The agent trace: the run view's trace lines, taken in batches, wrapped to the width, drawn
a visible row at a time; following new lines unless the operator scrolled up; searched,
filtered and copied.

Writing one line per widget call is ruinous with chatty agents, so the lines the view gained
are taken every ~80 ms by `flush()` (the run screen's timer calls it). The view's lines are
printable already and cut at LINE_LIMIT; cases and the score have their own widgets.

Drawing: a `ScrollView` of rows. What is kept and shown is a `TraceBuffer`
(icae_tui/display/trace_filter.py): the last MAX_LINES lines, which of them the filter shows
and how many rows each takes, at most MAX_ROWS rows; a row's text is cut from its line when it
is drawn, so only the rows on screen are ever made, however long the lines. A flush sets the
virtual size without a layout of the screen (a `Log` asks for one at each write, and measures
its lines in a thread) and repaints only when what is in view changed. Once lines are gone
from the start (past the bounds, or skipped by the view when the trace fell behind), the first
row says how many ("… N earlier lines not held here — e exports the whole trace"); the rest can
be scrolled to as before.

Wrapping: each line is split into rows of the widget's width (after a space near the row's
end when there is one; continuation rows start with WRAP_INDENT), laid out again when the
width changes. `lines` are the trace's lines, whole; `rows` what the widget shows.

Following: new lines scroll the view to the end. Scrolling up pauses that (the border says
"paused — f to follow"); `follow(True)`, or scrolling back to the end, resumes it. While
paused, the lines dropped at the top (past the bounds) do not move what is in view.

Keys (on the trace): / searches (literal text, smart case; the hits are marked, n and N go to
the next and the previous, which pauses following); v cycles the kinds of line shown (all,
no command output, the agent's messages, commands and questions); & shows only lines with a
text (empty: all); y copies the selection, else the lines in view, Y every line shown, to
the clipboard and to a file (a terminal may ignore the clipboard: the file is the fallback).
The border's subtitle says what is filtered, the search and its hits, and the pause.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar, overload

from rich.cells import get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Offset, Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from icae_tui.display.trace_filter import (
    MAX_ROWS,
    MIN_WIDTH,
    WRAP_INDENT,
    TraceBuffer,
    TraceFilter,
    Wrapper,
    wrap_spans,
)
from icae_tui.display.view import TRACE_KEEP, RunView, TraceLine
from icae_tui.display.wording import LINE_LIMIT, PAUSED, not_held_line
from icae_tui.ui.keymap import keyed

__all__ = [
    "LINE_LIMIT",
    "MAX_LINES",
    "MAX_ROWS",
    "MIN_WIDTH",
    "WRAP_INDENT",
    "CellWrapper",
    "Rows",
    "TraceLog",
    "wrap",
]

MAX_LINES = TRACE_KEEP  # lines the widget keeps (as the view does)
SHOWN_ELSEWHERE = frozenset({"case", "score"})  # the results table and the score line
CLIPBOARD_LIMIT = 1_000_000  # characters sent to the terminal's clipboard; a file takes all
STRIPS_CACHED = 512  # rows drawn, remembered until something they show changes


def _narrow_class() -> re.Pattern[str]:
    """A pattern for any character that is not one cell wide (Rich's measure), among the
    ranges most text keeps to: a line without one is as wide as it is long."""
    ranges = ((0x20, 0x7E), (0xA0, 0x2FF), (0x370, 0x482), (0x2000, 0x2BFF))
    codes = [
        c for lo, hi in ranges for c in range(lo, hi + 1) if get_character_cell_size(chr(c)) == 1
    ]
    runs: list[tuple[int, int]] = []
    for c in codes:
        if runs and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    body = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in runs)
    return re.compile(f"[^{body}]")


_NOT_NARROW = _narrow_class()


class CellWrapper(Wrapper):
    """Rows measured in terminal cells, as Rich measures them (wide and zero-width
    characters)."""

    def widths(self, text: str) -> Sequence[int] | None:
        if _NOT_NARROW.search(text) is None:
            return None
        return [get_character_cell_size(c) for c in text]


WRAPPER = CellWrapper()


def wrap(line: str, width: int) -> list[str]:
    """`line` as rows of at most `width` cells: broken after the last space of a row when it
    is in the row's second half, else at the width; rows after the first start with
    WRAP_INDENT. Joined back (without the indents) they are `line`."""
    spans = wrap_spans(line, width, WRAPPER.widths(line))
    return [(WRAP_INDENT if i else "") + line[a:b] for i, (a, b) in enumerate(spans)]


class Rows(Sequence[str]):
    """What the widget shows, a row at a time (made when asked for): the note on the lines
    not held, if any, then the buffer's rows."""

    def __init__(self, trace: TraceLog) -> None:
        self.trace = trace

    def __len__(self) -> int:
        return self.trace.row_count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        n = self.trace.row_count
        if isinstance(index, slice):
            return [self.trace.row_text(y) for y in range(*index.indices(n))]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self.trace.row_text(index)

    def __iter__(self) -> Iterator[str]:
        for y in range(self.trace.row_count):
            yield self.trace.row_text(y)


class TraceLog(ScrollView, can_focus=True):
    ALLOW_SELECT = True
    COMPONENT_CLASSES = {"trace--match", "trace--match-current"}
    DEFAULT_CSS = """
    TraceLog {
        background: $surface;
        color: $text;
        overflow-y: scroll;
        overflow-x: hidden;
        &:focus {
            background-tint: $foreground 5%;
        }
        & > .trace--match {
            background: $warning 35%;
        }
        & > .trace--match-current {
            background: $accent;
            color: $text;
            text-style: bold;
        }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "trace",
        [
            Binding("slash", "search", "Search"),
            Binding("n", "search_next", "Next match", show=False),
            Binding("N", "search_previous", "Previous match", show=False),
            Binding("v", "filter_kinds", "Filter kinds", show=False),
            Binding("ampersand", "filter_text", "Filter text", show=False),
            Binding("y", "copy('view')", "Copy lines in view", show=False),
            Binding("Y", "copy('all')", "Copy all lines shown", show=False),
        ],
    )

    auto_scroll: var[bool] = var(True)
    """Scroll to new lines as they come (following)."""

    save_dir: Path | None = None  # where copies are saved (None: the temporary folder)

    class FollowChanged(Message):
        """Following was turned on or off (by the operator's scrolling, or `follow`)."""

        def __init__(self, trace: TraceLog, following: bool) -> None:
            super().__init__()
            self.trace = trace
            self.following = following

        @property
        def control(self) -> TraceLog:
            return self.trace

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.view: RunView | None = None
        self.buffer = TraceBuffer(WRAPPER, max_lines=MAX_LINES, max_rows=MAX_ROWS)
        self._cursor = 0  # of the view's lines, how many were taken
        self._skipped = 0  # of the view's lines, how many it no longer had when taken
        self._moving = False  # a scroll of our own, not the operator's
        self._strips: LRUCache[tuple[int, int], Strip] = LRUCache(STRIPS_CACHED)
        self._subtitle: object = None  # what the border's subtitle says, as last set

    def show(self, view: RunView) -> None:
        self.view = view
        self._cursor = self._skipped = 0
        self.buffer.clear()
        self._laid_out()

    # --- what is shown -----------------------------------------------------------------------

    @property
    def lines(self) -> Sequence[str]:
        """The trace's lines taken so far (the last MAX_LINES), whole, filtered or not."""
        return self.buffer.lines

    @property
    def rows(self) -> Sequence[str]:
        """What the widget shows: the lines the filter shows, wrapped to its width (after
        the note on the lines not held, if any)."""
        return Rows(self)

    @property
    def row_count(self) -> int:
        return self.buffer.row_count + self._head

    @property
    def not_held(self) -> int:
        """Lines gone from the trace's start: past the bounds, or skipped by the view."""
        return self.buffer.not_held + self._skipped

    @property
    def _head(self) -> int:
        """Rows before the buffer's: the note on the lines not held (1), or none (0)."""
        return 1 if self._skipped or self.buffer.not_held else 0

    def row_text(self, y: int) -> str:
        """The text of row `y` (of `row_count`)."""
        head = self._head
        return not_held_line(self.not_held) if y < head else self.buffer.row(y - head).text

    @property
    def pending(self) -> int:
        """Lines the view has that are not taken yet."""
        return self.view.trace_total - self._cursor if self.view is not None else 0

    @property
    def filter(self) -> TraceFilter:
        return self.buffer.filter

    def flush(self) -> None:
        """Take the lines gained since the last flush, in one go."""
        if self.view is None or self._cursor == self.view.trace_total:
            return
        lines, cursor = self.view.trace_since(self._cursor)
        self._skipped += cursor - self._cursor - len(lines)  # the view no longer had them
        self._cursor = cursor
        self.add(line for line in lines if line.kind not in SHOWN_ELSEWHERE)

    def add(self, lines: Iterable[TraceLine]) -> None:
        """Show `lines` after the others (as a flush does)."""
        buffer = self.buffer
        width = self._row_width()
        if width != buffer.width and width:
            buffer.set_width(width)
        before, top, head, gone = self.row_count, round(self.scroll_y), self._head, self.not_held
        moved = buffer.add(lines)  # rows dropped at the top...
        moved -= self._head - head  # ... less the note on them, when it first shows
        if self.row_count == before and not moved and self.not_held == gone:
            return
        self._set_virtual_size()
        if self.auto_scroll:
            self._scroll_quietly(self.max_scroll_y)
            self.refresh()
        elif moved:
            self._scroll_quietly(max(0, top - moved))  # what is in view stays
            self.refresh()
        elif before < top + self.scrollable_content_region.height or (self._head and top == 0):
            self.refresh()  # the new rows, or the note, are in view
        if buffer.query:
            self._show_state()  # the count of hits

    def _row_width(self) -> int:
        return self.scrollable_content_region.width

    def _set_virtual_size(self) -> None:
        """The rows' extent, without a layout of the screen (what setting `virtual_size`
        would do): only the scrollbars and the scroll position follow."""
        size = Size(max(self._row_width(), 0), self.row_count)
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)

    def on_resize(self, event: events.Resize) -> None:
        width = self._row_width()
        if width and width != self.buffer.width:
            anchor = self._top_seq()
            self.buffer.set_width(width)
            self._laid_out(anchor)

    def _top_seq(self) -> int | None:
        """The line at the top of the view, while paused (None: following)."""
        return None if self.auto_scroll else self._seq_at(round(self.scroll_y))

    def _seq_at(self, y: int) -> int | None:
        """The seq of the line row `y` is part of (the note: the first line's)."""
        return self.buffer.seq_at(max(0, y - self._head))

    def _laid_out(self, anchor: int | None = None) -> None:
        """The rows were numbered again (a new width, filter or view): to the end if
        following, else to where the line `anchor` is now."""
        self._strips.clear()
        self._set_virtual_size()
        if self.auto_scroll:
            self._scroll_quietly(self.max_scroll_y)
        elif anchor is not None:
            self._scroll_quietly(self.buffer.row_from(anchor) + self._head)
        self.refresh()
        self._show_state()

    def _scroll_quietly(self, y: int) -> None:
        self._moving = True
        try:
            self.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._moving = False

    # --- drawing -----------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row_y = scroll_y + y
        width = self.size.width
        style = self.rich_style
        head = self._head
        if not 0 <= row_y < self.buffer.row_count + head:
            return Strip.blank(width, style)
        selection = self.text_selection
        strip: Strip | None
        if row_y < head:  # the note on the lines not held: one row, its count changing
            strip = self._render_note(row_y, style, selection)
        else:
            key = (self.buffer.epoch, self.buffer.row_key(row_y - head))
            strip = self._strips.get(key) if selection is None else None
            if strip is None:
                strip = self._render_row(row_y, style, selection)
                if selection is None:
                    self._strips[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, row_y)

    def _render_row(self, y: int, style: Style, selection: Selection | None) -> Strip:
        buffer = self.buffer
        row = buffer.row(y - self._head)
        marks: list[tuple[int, int, Style]] = []
        if buffer.query:
            name = "trace--match-current" if row.seq == buffer.current else "trace--match"
            mark = self.get_component_rich_style(name, partial=True)
            marks = [(a, b, mark) for a, b in buffer.marks(row)]
        return Strip(_segments(row.text, style, marks + self._selected(y, row.text, selection)))

    def _render_note(self, y: int, style: Style, selection: Selection | None) -> Strip:
        text = self.row_text(y)
        note = style + Style(dim=True, italic=True)
        return Strip(_segments(text, note, self._selected(y, text, selection)))

    def _selected(
        self, y: int, text: str, selection: Selection | None
    ) -> list[tuple[int, int, Style]]:
        """The selection's mark on row `y`, if it is selected."""
        if selection is None or (span := selection.get_span(y)) is None:
            return []
        a, b = span
        chosen = self.screen.get_component_rich_style("screen--selection")
        return [(a, len(text) if b == -1 else b, chosen)]

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The text of the rows selected (continuation rows with their indent)."""
        n = self.row_count
        if not n:
            return None
        start, end = selection
        y0 = min(max(start.y if start is not None else 0, 0), n - 1)
        y1 = min(max(end.y if end is not None else n - 1, y0), n - 1)
        text = "\n".join(self.row_text(y) for y in range(y0, y1 + 1))
        moved = Selection(
            None if start is None else Offset(start.x, start.y - y0),
            None if end is None else Offset(end.x, end.y - y0),
        )
        return moved.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._strips.clear()
        self.refresh()

    def _show_state(self) -> None:
        """The border's subtitle: the filter, the search and its hits, the pause."""
        parts: list[str] = []
        b = self.buffer
        if b.filter.active:
            parts.append(b.filter.describe())
        if b.query:
            at = b.hit_number()
            count = f"{at}/{b.hits}" if at is not None else f"{b.hits} found"
            parts.append(f"/{b.query} {count}")
        if not self.auto_scroll:
            parts.append(PAUSED)
        subtitle: object = " · ".join(parts)
        if subtitle != self._subtitle:
            self._subtitle = subtitle
            self.border_subtitle = Text(str(subtitle)) if subtitle else ""

    # --- following ---------------------------------------------------------------------------

    @property
    def following(self) -> bool:
        return self.auto_scroll

    def follow(self, on: bool) -> None:
        """Follow new lines (and go to the end now), or stop following."""
        self.auto_scroll = on
        if on:
            self._scroll_quietly(self.max_scroll_y)

    def on_mount(self) -> None:
        self._show_state()

    def watch_auto_scroll(self, following: bool) -> None:
        self._show_state()
        self.post_message(self.FollowChanged(self, following))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._moving:
            return
        at_end = new_value >= self.max_scroll_y
        if self.auto_scroll and new_value < old_value and not at_end:
            self.auto_scroll = False  # the operator scrolled up: new lines leave the view be
        elif not self.auto_scroll and new_value > old_value and at_end:
            self.auto_scroll = True  # ... and back down to the end: follow again

    # --- search ------------------------------------------------------------------------------

    def action_search(self) -> None:
        from icae_tui.ui.screens.prompt import PromptScreen

        prompt = PromptScreen(
            "Search the trace", self.buffer.query, "literal text; n/N: next/previous"
        )
        self.app.push_screen(prompt, self._searched)

    def _searched(self, query: str | None) -> None:
        if query is not None:
            self.search(query)

    def search(self, query: str) -> int | None:
        """Mark `query` in the lines shown and go to a hit: the last one while following,
        else the first at or after the top of the view. The hit's seq, if any."""
        b = self.buffer
        b.search(query)
        self._strips.clear()
        self.refresh()
        if not query:
            self._show_state()
            return None
        top = self._top_seq()
        found = b.step(forward=top is not None, origin=None if top is None else top - 1)
        if found is None:
            self._show_state()
            self.notify(f"Not in the lines shown: {query}", severity="warning", markup=False)
            return None
        self._go_to(found)
        return found

    def action_search_next(self) -> None:
        self.step(forward=True)

    def action_search_previous(self) -> None:
        self.step(forward=False)

    def step(self, forward: bool) -> int | None:
        """Go to the next hit of the search (or the previous one), round the ends."""
        b = self.buffer
        if not b.query:
            self.notify("No search: / searches the trace.")
            return None
        origin = None
        if b.current is None:  # from the top of the view
            top = self._seq_at(round(self.scroll_y))
            origin = None if top is None else (top - 1 if forward else top)
        found = b.step(forward, origin)
        if found is None:
            self._show_state()
            self.notify(f"Not in the lines shown: {b.query}", severity="warning", markup=False)
            return None
        self._go_to(found)
        return found

    def _go_to(self, seq: int) -> None:
        """Show the line `seq` (a third down the view unless it is in view already); this
        pauses following."""
        y = self.buffer.first_row(seq)
        self.auto_scroll = False
        self._strips.clear()
        if y is not None:
            y += self._head
            top, height = round(self.scroll_y), self.scrollable_content_region.height
            if not top <= y < top + height:
                self._scroll_quietly(max(0, y - height // 3))
        self.refresh()
        self._show_state()

    # --- filters -----------------------------------------------------------------------------

    def set_filter(self, new: TraceFilter) -> None:
        anchor = self._top_seq()
        if self.buffer.set_filter(new):
            self._laid_out(anchor)

    def action_filter_kinds(self) -> None:
        self.set_filter(self.buffer.filter.next_kinds())

    def action_filter_text(self) -> None:
        from icae_tui.ui.screens.prompt import PromptScreen

        prompt = PromptScreen(
            "Show only the lines with", self.buffer.filter.text, "literal text; empty: all lines"
        )
        self.app.push_screen(prompt, self._filtered)

    def _filtered(self, text: str | None) -> None:
        if text is not None:
            self.set_filter(TraceFilter(self.buffer.filter.kinds, text))

    # --- copying -----------------------------------------------------------------------------

    def action_copy(self, what: str) -> None:
        self.copy(what)

    def copy(self, what: str) -> Path | None:
        """Copy the selection (else the lines in view: `what` "view"), or every line shown
        ("all"), to the clipboard and to a file; the file."""
        b = self.buffer
        if what == "all":
            lines = [line.text for line in b.shown]
            label = "every line shown" if b.filter.active else "the whole trace"
            text = "\n".join(lines)
            count = len(lines)
        elif self.text_selection is not None and (got := self.get_selection(self.text_selection)):
            text, label = got[0], "the selection"
            count = text.count("\n") + 1
        else:
            top = round(self.scroll_y) - self._head  # of the buffer's rows (the note: -1)
            bottom = top + self.scrollable_content_region.height
            lines = [line.text for line in b.line_range(max(0, top), bottom)]
            text, label, count = "\n".join(lines), "the lines in view", len(lines)
        if not text:
            self.notify("Nothing to copy.")
            return None
        path, problem = self._save(text + "\n")
        on_clipboard = len(text) <= CLIPBOARD_LIMIT
        if on_clipboard:
            self.app.copy_to_clipboard(text)
        lines_word = "line" if count == 1 else "lines"
        said = f"Copied {label} ({count:,} {lines_word})"
        said += " to the clipboard" if on_clipboard else " (too long for the clipboard)"
        said += f"; saved to {path}" if path is not None else f"; not saved: {problem}"
        self.notify(
            said, title="Trace", severity="information" if path else "warning", markup=False
        )
        return path

    def _save(self, text: str) -> tuple[Path | None, str]:
        folder = self.save_dir if self.save_dir is not None else Path(tempfile.gettempdir())
        run_id = self.view.started.run_id if self.view is not None and self.view.started else ""
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)[:60] or "run"
        try:
            fd, where = tempfile.mkstemp(prefix=f"icae-trace-{name}-", suffix=".txt", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as err:
            return None, f"{type(err).__name__}: {err}"
        return Path(where), ""


def _segments(text: str, style: Style, marks: list[tuple[int, int, Style]]) -> list[Segment]:
    """`text` in `style`, with each mark's style added over its span (later marks on top)."""
    if not marks:
        return [Segment(text, style)]
    cuts = sorted({0, len(text), *(a for a, _, _ in marks), *(b for _, b, _ in marks)})
    out: list[Segment] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a >= b or a >= len(text):
            continue
        piece = style
        for ma, mb, mark in marks:
            if ma <= a and b <= mb:
                piece = piece + mark
        out.append(Segment(text[a:b], piece))
    return out
