"""The agent trace: a `Log` showing the run view's trace lines, written in batches, wrapped to
its width, following new lines unless the operator scrolled up.

Writing one line per widget call is ruinous with chatty agents, so the lines the view gained
are written every ~80 ms by `flush()` (the run screen's timer calls it). The view's lines are
printable already and cut at LINE_LIMIT; cases and the score have their own widgets.

A `Log` does not wrap, so each line is split into rows of the widget's width when written
(after a space near the row's end when there is one; continuation rows start with
WRAP_INDENT); when the width changes, the lines are written again at the new width. `lines`
are the trace's lines, whole; `rows` what the widget shows.

Following: new lines scroll the view to the end. Scrolling up pauses that (the border says
"paused — f to follow"); `follow(True)`, or scrolling back to the end, resumes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice

from rich.cells import cell_len, get_character_cell_size
from textual import events
from textual.message import Message
from textual.widgets import Log

from icae_tui.display.view import RunView
from icae_tui.display.wording import LINE_LIMIT, PAUSED

__all__ = ["LINE_LIMIT", "MAX_LINES", "WRAP_INDENT", "TraceLog", "wrap"]

MAX_LINES = 50_000
MAX_ROWS = 4 * MAX_LINES  # rows the widget keeps (a wrapped line takes several)
WRAP_INDENT = "  "  # before each continuation row of a wrapped line
MIN_WIDTH = 12  # narrower than this, lines are not wrapped
SHOWN_ELSEWHERE = frozenset({"case", "score"})  # the results table and the score line


def _take(text: str, cells: int) -> str:
    """The longest start of `text` that fits in `cells` cells (at least one character)."""
    if text.isascii():
        return text[:cells]
    used = 0
    for i, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > cells:
            return text[: max(i, 1)]
    return text


def wrap(line: str, width: int) -> list[str]:
    """`line` as rows of at most `width` cells: broken after the last space of a row when it
    is in the row's second half, else at the width; rows after the first start with
    WRAP_INDENT. Joined back (without the indents) they are `line`."""
    if width < MIN_WIDTH or cell_len(line) <= width:
        return [line]
    rows: list[str] = []
    rest, room = line, width
    while cell_len(rest) > room:
        piece = _take(rest, room)
        space = piece.rfind(" ")
        if space >= room // 2:
            piece = piece[: space + 1]
        rows.append(piece if not rows else WRAP_INDENT + piece)
        rest = rest[len(piece) :]
        room = width - len(WRAP_INDENT)
    if rest:
        rows.append(rest if not rows else WRAP_INDENT + rest)
    return rows


class TraceLog(Log):
    class FollowChanged(Message):
        """Following was turned on or off (by the operator's scrolling, or `follow`)."""

        def __init__(self, trace: TraceLog, following: bool) -> None:
            super().__init__()
            self.trace = trace
            self.following = following

        @property
        def control(self) -> TraceLog:
            return self.trace

    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=MAX_ROWS, highlight=False, **kwargs)  # type: ignore[arg-type]
        self.view: RunView | None = None
        self._cursor = 0  # of the view's lines, how many were taken
        self._wrapped_at = 0  # the width the rows were wrapped to (0: not laid out yet)
        self._moving = False  # a scroll of our own, not the operator's

    def show(self, view: RunView) -> None:
        self.view = view
        self._cursor = 0

    # --- what is shown -----------------------------------------------------------------------

    @property
    def lines(self) -> Sequence[str]:
        """The trace's lines written so far (those the view still keeps), whole."""
        view = self.view
        if view is None:
            return []
        first = view.trace_total - len(view.trace)  # the number of the view's oldest kept line
        taken = islice(view.trace, 0, max(0, self._cursor - first))
        return [line.text for line in taken if line.kind not in SHOWN_ELSEWHERE]

    @property
    def rows(self) -> Sequence[str]:
        """What the widget shows: the lines, wrapped to its width."""
        return super().lines

    @property
    def pending(self) -> int:
        """Lines the view has that are not written yet."""
        return self.view.trace_total - self._cursor if self.view is not None else 0

    def flush(self) -> None:
        """Write the lines gained since the last flush in one call."""
        if self.view is None or self._cursor == self.view.trace_total:
            return
        lines, self._cursor = self.view.trace_since(self._cursor)
        texts = [line.text for line in lines if line.kind not in SHOWN_ELSEWHERE]
        if texts:
            self.write_lines(self._wrapped(texts))

    def _row_width(self) -> int:
        return self.scrollable_content_region.width

    def _wrapped(self, texts: Iterable[str]) -> list[str]:
        self._wrapped_at = width = self._row_width()
        return [row for text in texts for row in wrap(text, width)]

    def on_resize(self, event: events.Resize) -> None:
        if self._row_width() != self._wrapped_at:
            self._rewrap()

    def _rewrap(self) -> None:
        """Write every line again at the new width; a paused view keeps its place."""
        before, top = self.line_count, self.scroll_y
        following = self.auto_scroll
        self.clear()
        self.write_lines(self._wrapped(self.lines), scroll_end=False)
        self._moving = True
        try:
            if following:
                self.scroll_end(animate=False, immediate=True, x_axis=False)
            elif before:
                y = round(top * self.line_count / before)
                self.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._moving = False

    # --- following ---------------------------------------------------------------------------

    @property
    def following(self) -> bool:
        return self.auto_scroll

    def follow(self, on: bool) -> None:
        """Follow new lines (and go to the end now), or stop following."""
        self.auto_scroll = on
        if on:
            self._moving = True
            try:
                self.scroll_end(animate=False, immediate=True, x_axis=False)
            finally:
                self._moving = False

    def on_mount(self) -> None:
        self.border_subtitle = "" if self.auto_scroll else PAUSED

    def watch_auto_scroll(self, following: bool) -> None:
        self.border_subtitle = "" if following else PAUSED
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
