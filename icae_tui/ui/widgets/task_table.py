"""The task browser's list: a table that draws only the lines on screen (Textual's line API).

Every task's cells are built once, when the screen opens. Showing another list of tasks — a
keystroke in the search, a filter — hands the table the new order of task ids and redraws the
visible lines: nothing is rebuilt, measured or laid out per task, so a catalog of hundreds of
tasks filters as fast as one of three. Column widths are the widest cell of the whole catalog
(stable while filtering); the flexible column (the title) gives up width on a narrow screen.
A row's drawn line is cached per task and width.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

MIN_FLEX = 8  # the flexible column never gets narrower than this
PAD = 1  # cells of space each side of a cell


@dataclass(frozen=True)
class Column:
    label: str
    justify: str = "left"  # "left" or "right"
    flexible: bool = False


class TaskTable(ScrollView, can_focus=True):
    """Rows keyed by task id; `show(ids)` picks which rows, in which order."""

    COMPONENT_CLASSES = {"task-table--header", "task-table--cursor", "task-table--even-row"}

    DEFAULT_CSS = """
    TaskTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        & > .task-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .task-table--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .task-table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .task-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .task-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Set up a run"),
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
    ]

    class Highlighted(Message):
        """The cursor moved onto another task (None: the list is empty)."""

        def __init__(self, table: TaskTable, task_id: str | None) -> None:
            super().__init__()
            self.table = table
            self.task_id = task_id

        @property
        def control(self) -> TaskTable:
            return self.table

    class Selected(Message):
        """Enter (or a click) on the highlighted task."""

        def __init__(self, table: TaskTable, task_id: str) -> None:
            super().__init__()
            self.table = table
            self.task_id = task_id

        @property
        def control(self) -> TaskTable:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column],
        rows: Mapping[str, Sequence[Text]],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.columns = tuple(columns)
        self.rows = rows
        self.ids: list[str] = []
        self.cursor = 0
        self.natural = [
            max([Text(c.label).cell_len, *(cells[i].cell_len for cells in rows.values())])
            for i, c in enumerate(self.columns)
        ]
        self.lines: dict[tuple[str, tuple[int, ...]], list[Segment]] = {}
        self.virtual_size = Size(self.min_width, 1)

    # --- what is shown --------------------------------------------------------------------

    @property
    def full_width(self) -> int:
        return sum(self.natural) + 2 * PAD * len(self.columns)

    @property
    def min_width(self) -> int:
        """The width below which the table scrolls sideways (the flexible column at its
        narrowest)."""
        give = sum(max(0, n - MIN_FLEX) for n, c in zip(self.natural, self.columns, strict=True)
                   if c.flexible)  # fmt: skip
        return self.full_width - give

    @property
    def row_count(self) -> int:
        return len(self.ids)

    def get_row(self, task_id: str) -> list[Text]:
        """The cells of a shown task's row."""
        if task_id not in self.ids:
            raise KeyError(task_id)
        return list(self.rows[task_id])

    @property
    def highlighted(self) -> str | None:
        return self.ids[self.cursor] if self.ids else None

    def show(self, ids: Sequence[str]) -> None:
        """List these tasks, in this order, the cursor on the first. Nothing is rebuilt: the
        visible lines are redrawn."""
        self.ids = list(ids)
        self.cursor = 0
        self.virtual_size = Size(self.min_width, len(self.ids) + 1)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    # --- drawing ---------------------------------------------------------------------------

    def widths(self, width: int) -> tuple[int, ...]:
        """Column widths for `width` cells: the natural ones, the flexible column narrowed
        (down to MIN_FLEX) when they do not fit."""
        widths = list(self.natural)
        excess = self.full_width - width
        for i, column in enumerate(self.columns):
            if excess > 0 and column.flexible:
                cut = min(excess, max(0, widths[i] - MIN_FLEX))
                widths[i] -= cut
                excess -= cut
        return tuple(widths)

    def cells_line(self, cells: Sequence[Text], widths: tuple[int, ...]) -> list[Segment]:
        console = self.app.console
        segments: list[Segment] = []
        for cell, column, width in zip(cells, self.columns, widths, strict=False):
            text = cell.copy()
            text.truncate(width, overflow="ellipsis")
            gap = width - text.cell_len
            left = gap if column.justify == "right" else 0
            segments.append(Segment(" " * (PAD + left)))
            segments.extend(text.render(console, end=""))
            segments.append(Segment(" " * (PAD + gap - left)))
        return segments

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        widths = self.widths(width)
        line_width = max(width, sum(widths) + 2 * PAD * len(widths))
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            header = self.get_component_rich_style("task-table--header")
            labels = [Text(c.label) for c in self.columns]
            heading = self.cells_line(labels, widths)
            strip = Strip(Segment.apply_style(heading, header), sum(widths) + 2 * PAD * len(widths))
            return strip.extend_cell_length(line_width, header).crop(scroll_x, scroll_x + width)
        index = scroll_y + y - 1
        if index >= len(self.ids):
            return Strip.blank(width, self.rich_style)
        task_id = self.ids[index]
        key = (task_id, widths)
        segments = self.lines.get(key)
        if segments is None:
            if len(self.lines) > 4096:
                self.lines.clear()
            segments = self.lines[key] = self.cells_line(self.rows[task_id], widths)
        base = self.rich_style
        if index % 2:
            base = base + self.get_component_rich_style("task-table--even-row")
        post = self.get_component_rich_style("task-table--cursor") if index == self.cursor else None
        strip = Strip(
            Segment.apply_style(segments, base, post), sum(widths) + 2 * PAD * len(widths)
        )
        return strip.extend_cell_length(line_width, base + (post or Style())).crop(
            scroll_x, scroll_x + width
        )

    # --- the cursor ----------------------------------------------------------------------

    @property
    def page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def move_cursor(self, row: int) -> None:
        if not self.ids:
            return
        row = max(0, min(row, len(self.ids) - 1))
        if row == self.cursor:
            return
        self.cursor = row
        self.refresh()
        top = int(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + self.page_rows:
            self.scroll_to(y=row - self.page_rows + 1, animate=False, immediate=True)
        self.post_message(self.Highlighted(self, self.highlighted))

    def action_move(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor + step * self.page_rows)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.ids) - 1)

    def action_select(self) -> None:
        if self.ids:
            self.post_message(self.Selected(self, self.ids[self.cursor]))

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to a row; a click on the highlighted row selects it."""
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = int(self.scroll_offset.y) + offset.y - 1
        if row >= len(self.ids):
            return
        if row == self.cursor:
            self.action_select()
        else:
            self.move_cursor(row)
