"""The first screen: the task browser — search, filters, the task list, a preview of the
highlighted task — and what is wrong with any task that did not load.

Keys: `/` search (typing filters and ranks as you type; Enter or ↓ back to the list; Escape
clears), `l` / `s` cycle the language and size filters, `[` / `]` the preview's tabs (the PRD
of each level, the case counts), ↑↓ or j/k move, Enter sets up a run, `h` past runs.

Searching and counting are `TaskFinder`'s (icae_tui/catalog_search.py, no Textual). Each
task's row is built once; a keystroke hands the list the new order of task ids and only the
lines on screen are drawn (icae_tui/ui/widgets/task_table.py).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Input, Static

from icae_tui.catalog import Catalog
from icae_tui.catalog_search import Found, Size, TaskCard, TaskFinder
from icae_tui.domain.task import Task
from icae_tui.ui.keymap import keyed
from icae_tui.ui.requests import OpenHistory, OpenSetup
from icae_tui.ui.text import clip, safe
from icae_tui.ui.widgets.footer import Footer
from icae_tui.ui.widgets.task_filters import filters_text
from icae_tui.ui.widgets.task_preview import TaskPreview
from icae_tui.ui.widgets.task_table import Column, TaskTable

WIDE = 120  # columns from which the preview stands beside the list, not below it
TITLE_WIDTH = 40  # a longer title is cut in the list (the preview has it whole)


def task_errors_text(catalog: Catalog) -> Text:
    text = Text()
    n = len(catalog.errors)
    text.append(f"⚠ {n} task{'s' if n != 1 else ''} could not be loaded\n", style="bold red")
    for err in catalog.errors:
        text.append("\n")
        text.append_text(safe(err.path, "bold"))
        text.append("\n  ")
        text.append_text(safe(err.message, lines=False))
        text.append("\n")
    return text


def task_row(card: TaskCard) -> tuple[Text, ...]:
    return (
        safe(card.id, "bold"),
        clip(card.title, TITLE_WIDTH),
        safe(card.language),
        Text(str(card.cases), justify="right"),
        Text(card.size.value, style="dim"),
    )


COLUMNS = (
    Column("id"),
    Column("title", flexible=True),
    Column("language"),
    Column("cases", justify="right"),
    Column("size"),
)


class SearchBox(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "screen.focus_list", "To the list", show=False),
    ]


class TaskListScreen(Screen[None]):
    AUTO_FOCUS = "#tasks"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE, "-wide")]
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "tasks",
        [
            Binding("slash", "search", "Search", show=False),  # the search box says so
            Binding("l", "cycle_language", "Language"),
            Binding("s", "cycle_size", "Size"),
            Binding("left_square_bracket", "preview_tab(-1)", "Previous tab", show=False),
            Binding("right_square_bracket", "preview_tab(1)", "Preview", key_display="[ ]"),
            Binding("escape", "clear", "Clear"),  # shown while there is something to clear
            Binding("h", "history", "Past runs"),
            Binding("q", "app.quit", "Quit", show=False),
        ],
    )

    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog
        self.finder = TaskFinder(catalog.tasks.values())
        self.rows = {card.id: task_row(card) for card in self.finder.cards}
        self.language_filter: str | None = None
        self.size_filter: Size | None = None
        self.found: Found = self.finder.find()

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Container(id="task-body"):
            with Vertical(id="task-browser"):
                yield SearchBox(
                    placeholder="/ search id, title, language, summary",
                    id="task-search",
                    compact=True,
                )
                yield Static(id="task-filters")
                table = TaskTable(COLUMNS, self.rows, id="tasks")
                table.border_title = "Tasks"
                yield table
                if not self.catalog.tasks:
                    yield Static(
                        Text("No tasks found. Use --tasks to point at a tasks folder.",
                             style="italic"),
                        id="no-tasks",
                    )  # fmt: skip
                yield Static(Text("No task matches.", style="italic"), id="no-matches")
                if self.catalog.errors:
                    errors = VerticalScroll(
                        Static(task_errors_text(self.catalog), id="task-errors-text"),
                        id="task-errors",
                    )
                    errors.border_title = "Task errors"
                    yield errors
            yield TaskPreview(id="task-preview")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "icae"
        n = len(self.catalog.tasks)
        self.sub_title = f"{n} task{'s' if n != 1 else ''}" + (
            f" · {len(self.catalog.errors)} with errors" if self.catalog.errors else ""
        )
        self.update_results()
        self.query_one("#tasks", TaskTable).focus()

    # --- searching and filtering ----------------------------------------------------------

    @property
    def search_text(self) -> str:
        return self.query_one("#task-search", Input).value

    def update_results(self) -> None:
        """Search and filter; re-fill the list only when what it lists changed."""
        self.found = found = self.finder.find(
            self.search_text, self.language_filter, self.size_filter
        )
        self.query_one("#task-filters", Static).update(
            filters_text(found, self.language_filter, self.size_filter)
        )
        table = self.query_one("#tasks", TaskTable)
        ids = found.ids
        total = len(self.finder.cards)
        table.border_title = "Tasks" if len(ids) == total else f"Tasks · {len(ids)} of {total}"
        self.query_one("#no-matches").display = bool(total) and not ids
        if ids != table.ids:
            table.show(ids)
        self.preview(table.highlighted)
        self.refresh_bindings()  # Escape is offered while a search or a filter is on

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear":
            return (
                bool(self.search_text)
                or self.language_filter is not None
                or (self.size_filter is not None)
            )
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "task-search":
            event.stop()
            self.update_results()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "task-search":
            event.stop()
            self.action_focus_list()

    def action_search(self) -> None:
        self.query_one("#task-search", Input).focus()

    def action_focus_list(self) -> None:
        self.query_one("#tasks", TaskTable).focus()

    def action_clear(self) -> None:
        """Escape: clear the search; with none, the filters."""
        search = self.query_one("#task-search", Input)
        if search.value:
            search.value = ""  # Input.Changed updates the list
        elif self.language_filter is not None or self.size_filter is not None:
            self.language_filter = self.size_filter = None
            self.update_results()

    def on_key(self, event: events.Key) -> None:
        """Escape in an empty search box (nothing to clear): back to the list."""
        search = self.query_one("#task-search", Input)
        if event.key == "escape" and search.has_focus and not self.check_action("clear", ()):
            event.stop()
            self.action_focus_list()

    def action_cycle_language(self) -> None:
        choices: list[str | None] = [None, *self.finder.languages]
        self.language_filter = choices[(choices.index(self.language_filter) + 1) % len(choices)]
        self.update_results()

    def action_cycle_size(self) -> None:
        choices: list[Size | None] = [None, *Size]
        self.size_filter = choices[(choices.index(self.size_filter) + 1) % len(choices)]
        self.update_results()

    # --- the highlighted task ---------------------------------------------------------------

    def preview(self, task_id: str | None) -> None:
        self.query_one(TaskPreview).show(self.finder.by_id.get(task_id or ""))

    def action_preview_tab(self, step: int) -> None:
        self.query_one(TaskPreview).switch(step)

    def selected_task(self) -> Task | None:
        return self.catalog.tasks.get(self.query_one("#tasks", TaskTable).highlighted or "")

    def on_task_table_highlighted(self, event: TaskTable.Highlighted) -> None:
        self.preview(event.task_id)

    def on_task_table_selected(self, event: TaskTable.Selected) -> None:
        event.stop()
        task = self.catalog.tasks.get(event.task_id)
        if task is not None:
            self.post_message(OpenSetup(task))

    def action_history(self) -> None:
        self.post_message(OpenHistory())
