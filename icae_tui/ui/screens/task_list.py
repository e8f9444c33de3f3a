"""The first screen: the task browser — search, filters, the task list, a preview of the
highlighted task — and what is wrong with any task that did not load.

Keys: `/` search (typing filters and ranks as you type; Enter or ↓ back to the list; Escape
clears), `l` / `s` cycle the language and size filters, `o` / `c` the origin (bundled,
ICAE-EVAL, CLI-Tool-Bench) and what a task can do (user-agent records or none, golden oracle or
expected outputs) — these two offered only when the catalog's tasks differ in them; every
cycle skips the values no task would show; `[` / `]` the preview's tabs (the PRD of each level, the case counts), `J` / `K` scroll
the preview a page down / up, ↑↓ or j/k move, Enter sets up a run, `h` past runs.

The search box runs its keys' bindings (ctrl+u, backspace, Escape…) as each key arrives, in
order with the characters typed: Textual runs a binding only once the key has bubbled up to
the app, after the characters typed behind it were inserted — so ctrl+u then fast typing
cleared what was typed after it.

Searching and counting are `TaskFinder`'s (icae_tui/catalog/search.py, no Textual). Each
task's row is built once; a keystroke hands the list the new order of task ids and only the
lines on screen are drawn (icae_tui/ui/widgets/task_table.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Input, Static

from icae_tui.catalog.loader import Catalog, load_failure
from icae_tui.catalog.search import Ability, Found, Size, TaskCard, TaskFinder, cycled
from icae_tui.domain.task import Task
from icae_tui.ui.keymap import keyed
from icae_tui.ui.requests import OpenHistory, OpenSetup
from icae_tui.ui.text import clip, safe
from icae_tui.ui.widgets.footer import Footer
from icae_tui.ui.widgets.task_filters import filters_text
from icae_tui.ui.widgets.task_preview import TaskPreview
from icae_tui.ui.widgets.task_table import Column, TaskTable

# Asks the engine which runtime versions its runtime images hold (key → version; None when it
# does not answer): sandbox/docker/runtime_labels.engine_runtimes in the console.
RuntimeSource = Callable[[], Awaitable[dict[str, str] | None]]
WIDE = 120  # columns from which the preview stands beside the list, not below it
TITLE_WIDTH = 40  # a longer title is cut in the list (the preview has it whole)
LIST_SHARE = 1 / 3  # narrow: the list's rows at most, of the screen's (the preview the rest)
MIN_LIST = 5  # rows of the list at least: borders, header, two tasks


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

    async def on_key(self, event: events.Key) -> None:
        """A key with a binding (this box's, the screen's) runs it now, before the keys
        typed after it are handled; a character is the Input's, as usual."""
        if event.is_printable:
            return
        active = self.screen.active_bindings.get(event.key)
        if active is None or not active.enabled or active.binding.priority:
            return  # the usual way: the screen's on_key, the app's bindings
        if active.node is self.app:
            return
        event.stop()
        event.prevent_default()
        await self.app.run_action(active.binding.action, active.node)


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
            Binding("o", "cycle_origin", "Origin"),
            Binding("c", "cycle_ability", "Can do"),
            Binding("left_square_bracket", "preview_tab(-1)", "Previous preview tab", show=False),
            Binding("right_square_bracket", "preview_tab(1)", "Next preview tab"),
            Binding("J", "preview_scroll(1)", "Scroll the preview down", show=False),
            Binding("K", "preview_scroll(-1)", "Scroll the preview up", show=False),
            Binding("escape", "clear", "Clear"),  # shown while there is something to clear
            Binding("h", "history", "Past runs"),
            Binding("q", "app.quit", "Quit", show=False),
        ],
    )

    def __init__(self, catalog: Catalog, runtimes: RuntimeSource | None = None) -> None:
        """`runtimes`: asks the engine for its runtime versions (the preview states the
        task's language version); None: not asked."""
        super().__init__()
        self.catalog = catalog
        self.runtimes = runtimes
        self.finder = TaskFinder(catalog.cards.values())
        self.rows = {card.id: task_row(card) for card in self.finder.cards}
        self.language_filter: str | None = None
        self.size_filter: Size | None = None
        self.origin_filter: str | None = None
        self.ability_filter: Ability | None = None
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
        self.fit_list(*self.app.size)
        self.query_one("#tasks", TaskTable).focus()
        preview = self.query_one(TaskPreview)
        preview.tab_keys = self.keys_of("preview_tab(-1)", "preview_tab(1)")
        preview.scroll_keys = self.keys_of("preview_scroll(1)", "preview_scroll(-1)")
        preview.update_hint()
        if self.runtimes is not None and self.catalog.cards:
            preview.show_runtimes(True)
            self.run_worker(self.ask_runtimes(self.runtimes), group="runtimes", exclusive=True,
                            exit_on_error=False)  # fmt: skip

    async def ask_runtimes(self, ask: RuntimeSource) -> None:
        """Once: the engine's runtime versions, for the preview (None when it does not
        answer: the preview says so)."""
        self.query_one(TaskPreview).show_runtimes(await ask())

    def on_resize(self, event: events.Resize) -> None:
        self.fit_list(event.size.width, event.size.height)

    def fit_list(self, width: int, height: int) -> None:
        """Narrow, the preview below the list: the list as tall as its rows, up to a share of
        the screen; the preview has the rest. Wide, side by side: the CSS's."""
        table = self.query_one("#tasks", TaskTable)
        rows = max(MIN_LIST, int(height * LIST_SHARE))
        table.styles.max_height = rows if width < WIDE else None

    def keys_of(self, *actions: str) -> str:
        """The keys of these actions of the screen, as remapped (keymap.toml), shown."""
        keys: list[str] = []
        for action in actions:
            for active in self.active_bindings.values():
                if active.node is self and active.binding.action == action:
                    keys.append(self.app.get_key_display(active.binding))
                    break
        return " ".join(keys)

    # --- searching and filtering ----------------------------------------------------------

    @property
    def search_text(self) -> str:
        return self.query_one("#task-search", Input).value

    def update_results(self) -> None:
        """Search and filter; re-fill the list only when what it lists changed."""
        self.found = found = self.finder.find(
            self.search_text,
            self.language_filter,
            self.size_filter,
            self.origin_filter,
            self.ability_filter,
        )
        self.query_one("#task-filters", Static).update(
            filters_text(
                found,
                self.language_filter,
                self.size_filter,
                self.origin_filter,
                self.ability_filter,
                origins_shown=self.finder.origins_differ,
                abilities_shown=self.finder.abilities_differ,
            )
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
            return bool(self.search_text) or self.filtered
        if action == "cycle_origin":
            return self.finder.origins_differ
        if action == "cycle_ability":
            return self.finder.abilities_differ
        return True

    @property
    def filtered(self) -> bool:
        chosen = (self.language_filter, self.size_filter, self.origin_filter, self.ability_filter)
        return any(value is not None for value in chosen)

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
        elif self.filtered:
            self.language_filter = self.size_filter = self.origin_filter = None
            self.ability_filter = None
            self.update_results()

    def on_key(self, event: events.Key) -> None:
        """Escape in an empty search box (nothing to clear): back to the list."""
        search = self.query_one("#task-search", Input)
        if event.key == "escape" and search.has_focus and not self.check_action("clear", ()):
            event.stop()
            self.action_focus_list()

    def action_cycle_language(self) -> None:
        """The next language that shows some task (under the search and the size filter)."""
        counts = dict(self.found.languages)
        self.language_filter = cycled(self.finder.languages, self.language_filter, counts)
        self.update_results()

    def action_cycle_size(self) -> None:
        """The next size that shows some task (under the search and the language filter)."""
        self.size_filter = cycled(tuple(Size), self.size_filter, dict(self.found.sizes))
        self.update_results()

    def action_cycle_origin(self) -> None:
        """The next origin that shows some task (under the search and the other filters)."""
        counts = dict(self.found.origins)
        self.origin_filter = cycled(self.finder.origins, self.origin_filter, counts)
        self.update_results()

    def action_cycle_ability(self) -> None:
        """The next ability that shows some task (under the search and the other filters)."""
        counts = dict(self.found.abilities)
        self.ability_filter = cycled(self.finder.abilities, self.ability_filter, counts)
        self.update_results()

    # --- the highlighted task ---------------------------------------------------------------

    def preview(self, task_id: str | None) -> None:
        self.query_one(TaskPreview).show(self.finder.by_id.get(task_id or ""))

    def action_preview_tab(self, step: int) -> None:
        self.query_one(TaskPreview).switch(step)

    def action_preview_scroll(self, step: int) -> None:
        self.query_one(TaskPreview).scroll_page(step)

    def selected_task(self) -> Task | None:
        return self.catalog.tasks.get(self.query_one("#tasks", TaskTable).highlighted or "")

    def on_task_table_highlighted(self, event: TaskTable.Highlighted) -> None:
        self.preview(event.task_id)

    def on_task_table_selected(self, event: TaskTable.Selected) -> None:
        event.stop()
        task = self.catalog.tasks.get(event.task_id)
        if task is None:  # its files changed into a malformed task since the listing
            why = load_failure(self.catalog.tasks, event.task_id)
            self.notify(why, title="Task not loaded", severity="error", timeout=20, markup=False)
            return
        self.post_message(OpenSetup(task))

    def action_history(self) -> None:
        self.post_message(OpenHistory())
