"""A run's model calls: a table of them (from the run view's `model_call` events), and one
call expanded — its request's new messages and its response — read from the run's
model_calls.jsonl (`CallRecording`).

The recording is appended as each call ends, so it is read again when it has grown: the
screen works during a live run as well as for a finished or replayed one. It is read in a
thread (it can hold a few megabytes of bodies); a missing file, a call missing from it or a
broken file shows "not recorded" and why. All of it is untrusted and shown literally.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from icae_tui.display.calls import COLUMNS, by_index, call_cells, call_detail, calls_title
from icae_tui.display.view import RunView
from icae_tui.display.wording import Usage, model_segments
from icae_tui.gateway import ModelCall, load_calls
from icae_tui.ui.keymap import keyed
from icae_tui.ui.text import segments, style_of
from icae_tui.ui.widgets.footer import Footer

SYNC_S = 0.5  # how often new calls of a live run are added to the table
HINT = "Enter on a call shows its request (the messages new to it) and its response."


class CallRecording:
    """A run's model_calls.jsonl, read when a call is wanted; read again once it changed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._calls: dict[int, ModelCall] = {}
        self._problem = ""

    def find(self, index: int) -> tuple[ModelCall | None, str]:
        """Call `index`, or None and why (blocking: call it in a thread)."""
        if self.path is None:
            return None, "the run's folder is not known"
        with self._lock:
            try:
                st = self.path.stat()
            except FileNotFoundError:
                return None, f"no {self.path}"
            except OSError as err:
                return None, f"{self.path}: {err}"
            stamp = (st.st_size, st.st_mtime_ns)
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._calls = by_index(load_calls(self.path.read_bytes()))
                    self._problem = ""
                except (OSError, UnicodeDecodeError, ValueError) as err:
                    self._calls = {}
                    self._problem = f"{self.path}: {err}"
            call = self._calls.get(index)
            if call is None:
                return None, self._problem or f"call #{index} is not in {self.path}"
            return call, ""


class ModelCallsScreen(Screen[None]):
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "calls",
        [
            Binding("escape,q", "back", "Back"),
            Binding("d", "focus('#call-detail')", "Details"),
            Binding("t", "focus('#calls')", "Table", show=False),
        ],
    )

    def __init__(self, view: RunView, path: Path | None, *, live: bool = False) -> None:
        super().__init__()
        self.view = view
        self.recording = CallRecording(path)
        self.live = live
        self.shown = 0  # calls in the table
        self.expanded: int | None = None  # the call whose details are shown

    def compose(self) -> ComposeResult:
        yield Static(id="calls-title")
        table: DataTable[Text] = DataTable(id="calls", cursor_type="row", zebra_stripes=True)
        yield table
        with VerticalScroll(id="call-detail") as detail:
            detail.border_title = "Call"
            yield Static(Text(HINT, "dim italic"), id="call-body")
        yield Footer()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#calls", DataTable)

    def on_mount(self) -> None:
        for i, label in enumerate(COLUMNS):
            self.table.add_column(label, key=str(i))
        self.sync()
        self.set_interval(SYNC_S, self.sync, name="sync")
        self.table.focus()

    def sync(self) -> None:
        """Add the calls the view gained since; redraw the title."""
        calls = self.view.calls
        for ev in calls[self.shown :]:
            cells = [Text(text, style=style_of(hint)) for text, hint in call_cells(ev)]
            self.table.add_row(*cells, key=str(ev.index))
        self.shown = len(calls)
        m = self.view.model
        usage = Usage(self.view.limits, calls=m.calls, tokens_in=m.tokens_in,
                      tokens_out=m.tokens_out, cost=m.cost, infra_failures=m.infra_failures)  # fmt: skip
        live = self.live and self.view.finished is None
        title = Text(calls_title(len(calls), live), "bold")
        title.append("\n")
        if calls:
            segments(model_segments(usage), title)
        else:
            title.append("No model calls yet.", "dim italic")
        self.query_one("#calls-title", Static).update(title)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value or ""
        if key.isdigit():
            self.show_call(int(key))

    def show_call(self, index: int) -> None:
        """Show call `index`: its figures at once, its bodies once read."""
        ev = next((c for c in self.view.calls if c.index == index), None)
        if ev is None:
            return
        self.expanded = index
        detail = self.query_one("#call-detail", VerticalScroll)
        detail.border_title = f"Call #{index}"
        body = self.query_one("#call-body", Static)
        body.update(segments(call_detail(ev, None, reading=True)))
        detail.scroll_home(animate=False)

        async def read() -> None:
            call, problem = await asyncio.to_thread(self.recording.find, index)
            if self.expanded == index and self.is_attached:
                body.update(segments(call_detail(ev, call, problem)))

        self.run_worker(read(), group="call-detail", exclusive=True, exit_on_error=False)

    @property
    def detail_text(self) -> str:
        return str(self.query_one("#call-body", Static).render())

    def action_back(self) -> None:
        self.app.pop_screen()
