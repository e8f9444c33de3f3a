"""Past runs from the store, and the sample tasks' recorded demos; Enter replays one through
the run screen at its own pace (icae_tui/ui/screens/replay.py) — no Docker needed.

The recorded demos are the `recordings/*.jsonl` of the catalog's task folders
(icae_tui/catalog/recordings.py), listed after the stored runs and marked "recorded demo". A
recording that does not load is listed with its error and reported in a notification naming
the file and the line; it is not replayed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from icae_tui.catalog import recordings
from icae_tui.catalog.loader import Catalog, roots_of
from icae_tui.catalog.recordings import Recording, RecordingError
from icae_tui.display.replay import Sleep
from icae_tui.display.wording import UNKNOWN, pct, responders_label
from icae_tui.domain.events import Event, RunFinished, RunStarted
from icae_tui.domain.task import Task
from icae_tui.store.database import RunStore
from icae_tui.ui.keymap import keyed
from icae_tui.ui.screens.replay import app_catalog, open_replay
from icae_tui.ui.text import STATUS_STYLES, safe
from icae_tui.ui.widgets.footer import Footer

DEMO_KEY = "recording:"  # row keys of recordings: run ids have no colon
DEMO = "recorded demo"


class HistoryScreen(Screen[None]):
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "history",
        [
            Binding("escape,q", "back", "Back"),
        ],
    )

    def __init__(
        self,
        store: RunStore,
        *,
        catalog: Catalog | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        """`catalog`: whose task folders' recordings are listed (the app's when None);
        `sleep`: the replays' waits (tests)."""
        super().__init__()
        self.store = store
        self.catalog = catalog
        self.sleep = sleep
        self.recordings: dict[str, Recording] = {}  # by row key
        self.demos: dict[str, list[Event]] = {}  # the recordings that loaded, by row key
        self.broken: dict[str, str] = {}  # the others' errors, by row key

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
        self._list_recordings(table)
        if self.recordings:
            table.border_title = "Past runs and recorded demos — Enter to replay"
        empty = self.query_one("#runs-empty", Static)
        empty.display = not rows
        if self.recordings:
            empty.update(
                Text("No runs yet. The recorded demos replay without Docker.", "dim italic")
            )
        else:
            empty.update(Text("No runs yet.", style="dim italic"))
        table.focus()

    def _list_recordings(self, table: DataTable[Text]) -> None:
        roots = roots_of(self.tasks())
        problems = []
        for rec in recordings.bundled(roots):
            key = f"{DEMO_KEY}{rec.path}"
            self.recordings[key] = rec
            try:
                events = recordings.load(rec.path)
            except RecordingError as err:
                self.broken[key] = str(err)
                problems.append(str(err))
                events = []
            else:
                self.demos[key] = events
            table.add_row(*self._demo_cells(rec, events, self.broken.get(key, "")), key=key)
        for problem in problems:
            self.notify(problem, title="Recording not loaded", severity="error", timeout=20,
                        markup=False)  # fmt: skip

    @staticmethod
    def _demo_cells(rec: Recording, events: list[Event], error: str) -> list[Text]:
        st = next((ev for ev in events if isinstance(ev, RunStarted)), None)
        end = next((ev for ev in reversed(events) if isinstance(ev, RunFinished)), None)
        overall = end.score.overall if end is not None and end.score is not None else None
        status = end.status if end is not None else ("broken" if error else "—")
        return [
            safe(f"{rec.task_id}/{rec.name}", "bold italic"),
            safe(st.task_id if st else rec.task_id),
            safe(st.agent if st else ""),
            safe(st.level if st else ""),
            safe(st.responder if st else ""),
            Text(status, style=STATUS_STYLES.get(status, "red" if error else "yellow")),
            Text(UNKNOWN if overall is None else pct(overall), justify="right"),
            Text(DEMO, "italic cyan"),
            safe(error.replace(str(rec.path), rec.path.name, 1), "red", limit=80),
        ]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value or ""
        if key in self.recordings:
            self.open_recording(key)
        else:
            self.open_run(key)

    def open_run(self, run_id: str) -> None:
        """A stored run's replay (a run without events opens too: there is nothing in it)."""
        events = self.store.events(run_id)
        label = f"replay of run {run_id}" + ("" if events else " · no events stored")
        self._replay(events, label=label, artifacts=self.store.artifacts_dir)

    def open_recording(self, key: str) -> None:
        rec = self.recordings[key]
        if key in self.broken:
            self.notify(self.broken[key], title="Recording not loaded", severity="error",
                        timeout=20, markup=False)  # fmt: skip
            return
        label = f"{DEMO} {rec.task_id}/{rec.name}"
        self._replay(self.demos[key], label=label, artifacts=None)

    def tasks(self) -> Mapping[str, Task]:
        """The catalog's tasks: their recordings are listed, their cases shown in a replay."""
        return self.catalog.tasks if self.catalog is not None else app_catalog(self.app)

    def _replay(self, events: list[Event], *, label: str, artifacts: Path | None) -> None:
        open_replay(self.app, events, label=label, artifacts=artifacts, sleep=self.sleep,
                    catalog=self.tasks())  # fmt: skip

    def action_back(self) -> None:
        self.app.pop_screen()
