"""Past runs from the store; Enter replays a run's stored events in a run screen."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from icae_tui.display.sources import ReplaySource
from icae_tui.display.wording import UNKNOWN, pct, responders_label
from icae_tui.store import RunStore
from icae_tui.ui.keymap import keyed
from icae_tui.ui.text import STATUS_STYLES, safe


class HistoryScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "back", "Back"),
    ]
    BINDINGS = keyed("history", BINDINGS)  # action ids for keymap.toml (ui/keymap.py)

    def __init__(self, store: RunStore) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        yield Header()
        table: DataTable[Text] = DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        table.border_title = "Past runs — Enter to open"
        yield table
        yield Static(id="runs-empty")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "past runs"
        table = self.query_one("#runs", DataTable)
        for key, label in (
            ("run", "run"), ("task", "task"), ("agent", "agent"), ("level", "level"),
            ("responder", "responder"), ("status", "status"), ("overall", "overall"),
            ("when", "started"), ("error", "error"),
        ):  # fmt: skip
            table.add_column(label, key=key)
        rows = self.store.runs()
        switches = self.store.responders_used(row.run_id for row in rows)
        for row in rows:
            table.add_row(
                safe(row.run_id, "bold"),
                safe(row.task_id),
                safe(row.agent),
                safe(row.level),
                Text(responders_label(row.responder, switches.get(row.run_id, []))),
                Text(row.status, style=STATUS_STYLES.get(row.status, "yellow")),
                Text(UNKNOWN if row.overall is None else pct(row.overall), justify="right"),
                Text(time.strftime("%Y-%m-%d %H:%M", time.localtime(row.started_at)), "dim"),
                safe(row.error, "red", limit=80),
                key=row.run_id,
            )
        empty = self.query_one("#runs-empty", Static)
        empty.display = not rows
        empty.update(Text("No runs yet.", style="dim italic"))
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        from icae_tui.ui.screens.run import RunScreen

        run_id = event.row_key.value or ""
        source = ReplaySource(self.store.events(run_id))
        self.app.push_screen(RunScreen(source, artifacts=self.store.artifacts_dir))

    def action_back(self) -> None:
        self.app.pop_screen()
