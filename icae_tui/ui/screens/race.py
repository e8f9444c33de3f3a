"""The race screen (`icae race`): two runs of one task side by side, one lane each
(widgets/race_lane.py: header, trace, clarifications, results, score), under a banner that
says who finished first, when, and each one's overall score — or that one failed.

The race is a batch (icae_tui/cli/race.py): it runs here as a worker of this screen in the
run group, as the batch screen runs its batch (quitting the console cancels it; each run
stores itself cancelled). The runner tells the screen each run's start — its lane attaches
to it — and its end; a run retried for infrastructure gets a fresh lane. The batch's own
messages (image builds, the sweep) go to the status line at the bottom.

The operator answers a waiting question in the lane's answer box (w goes to one: the
focused lane's first), switches the focused lane's responder (m; ctrl+t from its answer
box too), and opens the focused lane's run in the full run screen, attached to it (o).
Escape leaves once the race is over.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from icae_tui.batch.plan import BatchItem
from icae_tui.batch.race_standing import Lane, Standing, lane_names
from icae_tui.batch.runner import BatchMessage, BatchRunner, BatchUpdate, ItemStarted
from icae_tui.batch.store import BatchStatus
from icae_tui.display.sources import AttachedSource
from icae_tui.ui.keymap import keyed
from icae_tui.ui.screens.run import FLUSH_S, RESULTS_TICKS, RUN_GROUP, RunScreen
from icae_tui.ui.widgets.footer import Footer
from icae_tui.ui.widgets.race_lane import RaceLane
from icae_tui.util.safe_text import printable


class RaceScreen(Screen[None]):
    # app.tcss styles the run screen's parts by id (#trace, #clarify…): a lane's have the
    # same ids; here they are laid out in a column instead
    CSS = """
    RaceScreen #race-banner { height: auto; padding: 0 1; background: $panel; }
    RaceScreen #race-lanes { height: 1fr; }
    RaceScreen .race-lane { width: 1fr; height: 1fr; }
    RaceScreen .race-lane #lane-header { height: 1; padding: 0 1; background: $panel; }
    RaceScreen .race-lane #trace { width: 1fr; height: 2fr; }
    RaceScreen .race-lane #clarify { height: 1fr; min-height: 5; }
    RaceScreen .race-lane #results { height: 1fr; min-height: 5; }
    RaceScreen .race-lane #lane-status { height: 1; padding: 0 1; }
    RaceScreen #race-status { height: 1; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "race",
        [
            Binding("escape", "back", "Back"),
            Binding("w", "answer", "Answer"),
            Binding("m", "cycle", "Responder ▸ next"),
            # as on the run screen, ctrl+t does it from the answer box too (its border says so)
            Binding("ctrl+t", "cycle", "Responder ▸ next", show=False, priority=True),
            Binding("o", "open", "Open run"),
        ],
    )

    def __init__(self, runner: BatchRunner) -> None:
        super().__init__()
        self.runner = runner
        self.names = dict(
            zip((it.key for it in runner.items), lane_names([it.agent for it in runner.items]),
                strict=True)
        )  # fmt: skip
        self.lanes: dict[str, RaceLane] = {}  # item key → its lane
        self.status: BatchStatus | None = None  # once the race has ended
        self.message = ""
        self.worker: Worker[BatchStatus] | None = None
        self._ticks = 0

    def _lane(self, item: BatchItem) -> RaceLane:
        lane = RaceLane(self.names[item.key], task=self.runner.tasks.get(item.task_id),
                        cancel=lambda: self.runner.cancel_item(item.key))  # fmt: skip
        self.lanes[item.key] = lane
        return lane

    def compose(self) -> ComposeResult:
        yield Static(id="race-banner")
        with Horizontal(id="race-lanes"):
            for item in self.runner.items:
                yield self._lane(item)
        yield Static(id="race-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"race {self.runner.batch_id}"
        self.set_interval(FLUSH_S, self._tick, name="race flush")
        self._banner()
        self.runner.subscribe(self.told)
        self.worker = self.run_worker(self.runner.execute(), name=f"race {self.runner.batch_id}",
                                      group=RUN_GROUP, exit_on_error=False)  # fmt: skip

    # --- the runner's news (on the app's loop) ---------------------------------------------

    def told(self, update: BatchUpdate) -> None:
        match update:
            case BatchMessage():
                self._say(update.text)
            case ItemStarted():
                lane = self.lanes[update.item.key]
                if lane.run is not None:  # a retry: a fresh lane in its place
                    lane = self._replace(update.item, lane)
                lane.attach(update.run)

    def _replace(self, item: BatchItem, old: RaceLane) -> RaceLane:
        lane = self._lane(item)
        self.query_one("#race-lanes", Horizontal).mount(lane, after=old)
        old.remove()
        return lane

    def _say(self, text: str) -> None:
        self.message = printable(text, limit=300)
        if self.is_attached:
            self.query_one("#race-status", Static).update(Text(self.message, style="dim"))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.worker or event.state not in (
            WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED,
        ):  # fmt: skip
            return
        row = self.runner.batches.batch(self.runner.batch_id)
        self.status = row.status if row is not None else BatchStatus.CANCELLED
        self._banner()
        if event.state is WorkerState.ERROR:
            err = event.worker.error
            self.notify(printable(f"{type(err).__name__}: {err}", limit=2000),
                        title="Race crashed", severity="error", timeout=30, markup=False)  # fmt: skip
        else:
            self.notify(self.banner_text, title=f"Race {self.status}", timeout=20, markup=False)

    # --- drawing --------------------------------------------------------------------------

    @property
    def standing(self) -> Standing:
        return Standing(tuple(Lane.of(lane.racer, lane.view) for lane in self.lanes.values()))

    @property
    def banner_text(self) -> str:
        return self.standing.banner(time.time())

    def _banner(self) -> None:
        if self.is_attached:
            style = "bold green" if self.standing.over else "bold"
            self.query_one("#race-banner", Static).update(Text(self.banner_text, style=style))

    def _tick(self) -> None:
        """The run screen's cadence: the traces each time, the rest every RESULTS_TICKS."""
        self._ticks += 1
        results = self._ticks % RESULTS_TICKS == 0
        for lane in self.lanes.values():
            lane.flush(results=results)
        if results:
            self._banner()

    # --- the operator ---------------------------------------------------------------------

    def focused_lane(self) -> RaceLane | None:
        focused = self.focused
        if focused is None:
            return None
        return next((n for n in focused.ancestors_with_self if isinstance(n, RaceLane)), None)

    def action_answer(self) -> None:
        """The answer box of a lane whose question waits: the focused lane's first."""
        focused = self.focused_lane()
        lanes = sorted(self.lanes.values(), key=lambda lane: lane is not focused)
        waiting = next((lane for lane in lanes if lane.waiting is not None), None)
        if waiting is None:
            self.notify("No question waits for you.", markup=False)
            return
        waiting.answer_box.focus()

    def action_cycle(self) -> None:
        lane = self.focused_lane()
        if lane is not None:
            lane.switch_responder()

    def action_open(self) -> None:
        """The focused lane's run in the full run screen, attached to it (Escape comes back)."""
        lane = self.focused_lane()
        if lane is None or lane.run is None:
            self.notify("Its run has not started yet.", markup=False)
            return
        source = AttachedSource(lane.run, task=lane.race_task, cancel=lane.cancel)
        self.app.push_screen(RunScreen(source, artifacts=self.runner.batches.runs.artifacts_dir))

    def action_back(self) -> None:
        """Leaving would stop the race (its worker is this screen's): only once it ended."""
        if self.status is None:
            self.notify("The race is running: ctrl+q cancels it and quits.", markup=False)
            return
        self.app.pop_screen()
