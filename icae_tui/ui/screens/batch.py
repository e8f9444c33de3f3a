"""The batch screen (`icae batch --console`): the batch runs here, as a worker of this screen
in the run group (quitting the console cancels it: its runs store themselves cancelled, and
`--resume` goes on), and shows as a grid — one row per task (× level × responder when the
batch has more than one), one column per agent, each cell its pairing's state
(icae_tui/batch/grid.py) — under a header with the batch's id and counts (done, failed,
running, retried, runs per minute, time left) and over a one-line status with the batch's
messages.

The runner tells the screen each run's start and end on the app's loop; only the cell that
changed is drawn again. Enter on a cell opens its pairing's run: while one is running, its
live run screen attached to it (the operator answers, switches the responder, pauses the
agent or cancels that run alone); else its latest run, replayed from the store. Escape there
comes back to the grid, which kept going.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState

from icae_tui.batch.counts import BatchCounts
from icae_tui.batch.grid import DONE, FAILED, OPERATOR, RUNNING, BatchGrid, Pairing, news_of
from icae_tui.batch.runner import BatchMessage, BatchRunner, BatchUpdate, ItemFinished, ItemStarted
from icae_tui.batch.store import BatchStatus
from icae_tui.display.sources import AttachedSource, LiveRun
from icae_tui.domain.events import Event, QuestionAnswered, QuestionAsked
from icae_tui.ui.keymap import keyed
from icae_tui.ui.screens.replay import open_replay
from icae_tui.ui.screens.run import RUN_GROUP, RunScreen
from icae_tui.ui.text import safe
from icae_tui.ui.widgets.footer import Footer
from icae_tui.util.safe_text import printable

LABEL = "task"  # the first column's key: the row's task (level, responder)
CELL_STYLES = {RUNNING: "bold cyan", DONE: "green", FAILED: "bold red"}


class BatchScreen(Screen[None]):
    DEFAULT_CSS = """
    BatchScreen #batch-header { height: 2; padding: 0 1; }
    BatchScreen #batch-grid { height: 1fr; margin: 0 1; }
    BatchScreen #batch-status { height: 1; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = keyed("batch", [Binding("escape", "back", "Back")])

    def __init__(self, runner: BatchRunner) -> None:
        super().__init__()
        self.runner = runner
        self.grid = BatchGrid(runner.items)
        self.counts = BatchCounts({})
        self.runs: dict[str, LiveRun] = {}  # item key → its run, while it runs
        self.latest: dict[Pairing, str] = {}  # a pairing's latest run id
        self.status: BatchStatus | None = None  # once the batch has ended
        self.message = ""
        self.worker: Worker[BatchStatus] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="batch-header")
        table: DataTable[Text] = DataTable(id="batch-grid", cursor_type="cell")
        table.border_title = "Runs — Enter opens a cell's run"
        yield table
        yield Static(id="batch-status")
        yield Footer()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#batch-grid", DataTable)

    def on_mount(self) -> None:
        self.sub_title = f"batch {self.runner.batch_id}"
        runs = self.runner.batches.runs
        progress = self.runner.refresh()  # what a resumed batch starts from
        for item in self.runner.items:
            p = progress[item.key]
            self.grid.set(item.key, news_of(p, runs.events(p.run_id) if p.run_id else []))
            if p.run_id:
                self.latest[item.pairing] = p.run_id
        self.counts = BatchCounts(progress)
        table = self.table
        table.add_column("task", key=LABEL)
        for agent in self.grid.agents:
            table.add_column(safe(agent, "bold"), key=agent)
        for row in self.grid.rows:
            cells = [self._cell(self.grid.pairing_at(row, agent)) for agent in self.grid.agents]
            table.add_row(safe(self.grid.label(row)), *cells, key=row)
        self._header()
        self.set_interval(1.0, self._header, name="batch clock")
        self.runner.subscribe(self.told)
        self.worker = self.run_worker(self.runner.execute(), name=f"batch {self.runner.batch_id}",
                                      group=RUN_GROUP, exit_on_error=False)  # fmt: skip
        table.focus()

    # --- drawing --------------------------------------------------------------------------

    def _cell(self, pairing: Pairing | None) -> Text:
        if pairing is None:  # no such pairing in the plan
            return Text("")
        text = self.grid.text(pairing)
        return Text(text, style=CELL_STYLES.get(text[:1], "dim"))

    def _draw_cell(self, pairing: Pairing) -> None:
        if self.is_attached:
            self.table.update_cell(self.grid.row_for(pairing), pairing[1], self._cell(pairing))

    def header_text(self) -> str:
        name = f" {printable(self.runner.spec.name, limit=60)}" if self.runner.spec.name else ""
        state = "running" if self.status is None else f"{self.status}"
        return f"batch {self.runner.batch_id}{name} · {state}\n" + self.counts.line(throughput=True)

    def _header(self) -> None:
        if self.is_attached:
            self.query_one("#batch-header", Static).update(Text(self.header_text()))

    def _say(self, text: str) -> None:
        self.message = printable(text, limit=300)
        if self.is_attached:
            self.query_one("#batch-status", Static).update(Text(self.message, style="dim"))

    # --- the runner's news (on the app's loop) ---------------------------------------------

    def told(self, update: BatchUpdate) -> None:
        """The runner's subscriber: the state always follows, the drawing while shown."""
        match update:
            case BatchMessage():
                self._say(update.text)
            case ItemStarted():
                key = update.item.key
                self.runs[key] = update.run
                self.latest[update.item.pairing] = update.run.run_id
                update.run.subscribe(self._follower(key))
                self.counts.update(self.runner.progress)
                self.counts.started(update.attempt)
                self._draw_cell(self.grid.set(key, news_of(self.runner.progress[key], [])))
            case ItemFinished():
                key = update.item.key
                self.runs.pop(key, None)
                p = update.progress
                events = self.runner.batches.runs.events(p.run_id) if p.run_id else []
                self.counts.update(self.runner.progress)
                self.counts.finished()
                self._draw_cell(self.grid.set(key, news_of(p, events)))
        self._header()

    def _follower(self, key: str) -> Callable[[Event], None]:
        """A run's subscriber: a question waiting on the operator marks its cell (`?`) until
        it is answered."""

        def follow(ev: Event) -> None:
            if isinstance(ev, QuestionAsked):
                waits = ev.mode in OPERATOR
                self._draw_cell(self.grid.asked(key, ev.question_id, waits))
            elif isinstance(ev, QuestionAnswered):
                self._draw_cell(self.grid.asked(key, ev.question_id, False))

        return follow

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.worker or event.state not in (
            WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED,
        ):  # fmt: skip
            return
        row = self.runner.batches.batch(self.runner.batch_id)
        self.status = row.status if row is not None else BatchStatus.CANCELLED
        self.counts.update(self.runner.refresh())
        self._header()
        if event.state is WorkerState.ERROR:
            err = event.worker.error
            self.notify(printable(f"{type(err).__name__}: {err}", limit=2000),
                        title="Batch crashed", severity="error", timeout=30, markup=False)  # fmt: skip
        else:
            again = (
                ""
                if self.status is BatchStatus.COMPLETED
                else (f" — icae batch --resume {self.runner.batch_id} goes on")
            )
            self.notify(f"{self.counts.line()}{again}", title=f"Batch {self.status}",
                        severity="information", timeout=20, markup=False)  # fmt: skip

    # --- opening a cell ---------------------------------------------------------------------

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        row, column = event.cell_key.row_key.value, event.cell_key.column_key.value
        pairing = self.grid.pairing_at(row or "", column or "")
        if pairing is not None:
            self.open_pairing(pairing)

    def open_pairing(self, pairing: Pairing) -> None:
        """Its running run live (the first of them), else its latest run replayed."""
        for key in self.grid.members[pairing]:
            run = self.runs.get(key)
            if run is not None:
                self.open_live(key, run)
                return
        run_id = self.latest.get(pairing)
        if run_id is None:
            self.notify("No run of it yet.", markup=False)
            return
        store = self.runner.batches.runs
        open_replay(self.app, store.events(run_id), label=f"replay of run {run_id}",
                    artifacts=store.artifacts_dir, catalog=self.runner.tasks)  # fmt: skip

    def open_live(self, key: str, run: LiveRun) -> RunScreen:
        source = AttachedSource(run, task=self.runner.tasks.get(self.grid.items[key].task_id),
                                cancel=lambda: self.runner.cancel_item(key))  # fmt: skip
        screen = RunScreen(source, artifacts=self.runner.batches.runs.artifacts_dir)
        self.app.push_screen(screen)
        return screen

    def action_back(self) -> None:
        """Leaving the batch would stop it (its worker is this screen's): only once it ended."""
        if self.status is None:
            self.notify("The batch is running: ctrl+q cancels it and quits.", markup=False)
            return
        self.app.pop_screen()
