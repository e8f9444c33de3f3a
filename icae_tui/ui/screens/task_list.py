"""The first screen: the task catalog, and what is wrong with any task that did not load."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from icae_tui.catalog import Catalog
from icae_tui.domain.task import Split, Task
from icae_tui.ui.text import safe


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


def task_detail_text(task: Task) -> Text:
    spec = task.spec
    text = Text()
    text.append_text(safe(spec.title, "bold"))
    text.append("  ")
    text.append_text(safe(task.id, "dim"))
    text.append("\n")
    if spec.summary:
        text.append_text(safe(spec.summary))
        text.append("\n")
    text.append("language ", style="dim")
    text.append_text(safe(spec.language))
    text.append("  ·  interface ", style="dim")
    text.append_text(safe(f"{spec.interface.kind} ({spec.interface.tool})"))
    text.append("  ·  question budget ", style="dim")
    text.append(str(spec.budget))
    text.append("  ·  cases ", style="dim")
    text.append(str(len(task.cases)))
    text.append("\n")
    text.append("folder ", style="dim")
    text.append_text(safe(task.root))
    return text


class TaskTable(DataTable[Text]):
    BINDINGS = [Binding("enter", "select_cursor", "Set up a run")]


class TaskListScreen(Screen[None]):
    BINDINGS = [
        Binding("h", "history", "Past runs"),
        Binding("q", "app.quit", "Quit", show=False),
    ]

    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="task-body"):
            table = TaskTable(id="tasks", cursor_type="row", zebra_stripes=True)
            table.border_title = "Tasks"
            yield table
            if not self.catalog.tasks:
                yield Static(
                    Text("No tasks found. Use --tasks to point at a tasks folder.", style="italic"),
                    id="no-tasks",
                )
            yield Static(id="task-detail")
            if self.catalog.errors:
                errors = VerticalScroll(
                    Static(task_errors_text(self.catalog), id="task-errors-text"), id="task-errors"
                )
                errors.border_title = "Task errors"
                yield errors
        yield Footer()

    def on_mount(self) -> None:
        self.title = "icae"
        n = len(self.catalog.tasks)
        self.sub_title = f"{n} task{'s' if n != 1 else ''}" + (
            f" · {len(self.catalog.errors)} with errors" if self.catalog.errors else ""
        )
        table = self.query_one("#tasks", DataTable)
        table.add_column("id", key="id")
        table.add_column("title", key="title")
        table.add_column("interface", key="interface")
        for split in Split:
            table.add_column(split.value, key=split.value)
        table.add_column("solutions", key="solutions")
        for task in self.catalog.tasks.values():
            table.add_row(
                safe(task.id, "bold"),
                safe(task.spec.title),
                safe(task.spec.interface.kind),
                *(Text(str(len(task.cases_in(s))), justify="right") for s in Split),
                safe(", ".join(task.solutions) or "—", "dim"),
                key=task.id,
            )
        table.focus()
        self._show_detail(next(iter(self.catalog.tasks.values()), None))

    def _show_detail(self, task: Task | None) -> None:
        detail = self.query_one("#task-detail", Static)
        detail.display = task is not None
        if task is not None:
            detail.update(task_detail_text(task))

    def selected_task(self) -> Task | None:
        table = self.query_one("#tasks", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.catalog.tasks.get(key or "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(self.catalog.tasks.get(event.row_key.value or ""))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        task = self.catalog.tasks.get(event.row_key.value or "")
        if task is not None:
            self.app.open_setup(task)  # type: ignore[attr-defined]

    def action_history(self) -> None:
        self.app.open_history()  # type: ignore[attr-defined]
