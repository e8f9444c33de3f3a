"""The Textual console. Only this package imports Textual; the core knows nothing of it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from icae_tui.catalog.loader import Catalog
from icae_tui.domain.task import Task
from icae_tui.local_models.server import SERVERS
from icae_tui.runs.config import RunConfig
from icae_tui.runs.kept import console_source
from icae_tui.store.database import RunStore
from icae_tui.ui.kept import KeptDeliveries
from icae_tui.ui.keymap import keyed
from icae_tui.ui.presenting import PresentingApp
from icae_tui.ui.requests import OpenHistory, OpenSetup
from icae_tui.ui.screens.history import HistoryScreen
from icae_tui.ui.screens.run import RUN_GROUP, RunScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen
from icae_tui.ui.screens.task_list import RuntimeSource, TaskListScreen

QUIT_GRACE_S = 10.0  # how long quitting waits for a cancelled run to clean up


class IcaeApp(PresentingApp):
    """The console. Themes, keys, help and palette: `PresentingApp` (ui/presenting.py)."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere work too
    TITLE = "icae"
    SUB_TITLE = "interactive coding-agent evaluation"
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "app", [Binding("ctrl+q", "quit", "Quit", priority=True)]
    )

    def __init__(
        self,
        *,
        catalog: Catalog,
        store: RunStore,
        pace_s: float | None = None,
        agent_files: Sequence[Path] = (),
        on_start: Callable[[IcaeApp], object] | None = None,
        engine: str | None = None,
        runtimes: RuntimeSource | None = None,
    ) -> None:
        """`agent_files`: agents TOML files given with `icae --agents` (after the defaults
        and the user's file), offered in run setup and carried to each run. `on_start`:
        called with the app once it is mounted (`icae replay` opens its replay so; leaving
        the replay then shows the console's first screen). `engine`: where its runs go
        (`icae --engine`; None: RunConfig's default). `runtimes`: asks the engine for its
        runtime versions, which the task preview states (None: not asked)."""
        super().__init__()
        self.on_start = on_start
        self.catalog = catalog
        self.store = store
        self.pace_s = pace_s
        self.agent_files = tuple(agent_files)
        self.engine = engine
        self.runtimes = runtimes
        self.kept = KeptDeliveries(self)  # the deliveries the console's runs keep

    def get_default_screen(self) -> TaskListScreen:
        return TaskListScreen(self.catalog, self.runtimes)

    def on_mount(self) -> None:
        # A local model's server a run starts stays up for the console's next run (loading
        # it takes seconds); it stops when the console goes (on_unmount), or dies with it.
        SERVERS.linger = True
        if self.on_start is not None:
            self.on_start(self)

    async def on_unmount(self) -> None:
        SERVERS.linger = False
        await SERVERS.close()

    def on_ready(self) -> None:
        # What is loaded by now (catalog, widgets, CSS) lives as long as the app: kept out of
        # the collector's full passes, which otherwise stall the screen during a trace burst.
        gc.freeze()

    # --- navigation ---------------------------------------------------------------------

    def open_setup(self, task: Task) -> None:
        def chosen(config: RunConfig | None) -> None:
            if config is not None:
                self.start_run(config)

        setup = RunSetupScreen(task, pace_s=self.pace_s, agent_files=self.agent_files)
        self.push_screen(setup, chosen)

    def start_run(self, config: RunConfig) -> RunScreen:
        """The run keeps its delivery for the case detail (re-run, shells) until its screen
        goes or the app quits (`ui/kept.py`)."""
        if self.engine is not None:
            config = dataclasses.replace(config, engine=self.engine)
        screen = RunScreen(console_source(config, self.store), artifacts=self.store.artifacts_dir)
        self.push_screen(screen)
        self.kept.track(screen, screen.handle)
        return screen

    def open_history(self) -> None:
        self.push_screen(HistoryScreen(self.store))

    def on_open_setup(self, request: OpenSetup) -> None:
        self.open_setup(request.task)

    def on_open_history(self, _request: OpenHistory) -> None:
        self.open_history()

    # --- quitting -----------------------------------------------------------------------

    def running_runs(self) -> list[Worker[Any]]:
        return [
            w
            for w in self.workers
            if w.group == RUN_GROUP and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
        ]

    async def action_quit(self) -> None:
        """Cancel a running run first so its containers are removed, then exit."""
        running = self.running_runs()
        if running:
            self.notify("Cancelling the run before quitting…")
            for worker in running:
                worker.cancel()

            async def settle(worker: Worker[Any]) -> None:
                with contextlib.suppress(WorkerCancelled, WorkerFailed):
                    await worker.wait()

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(settle(w) for w in running)), QUIT_GRACE_S)
            await asyncio.sleep(0.5)  # let shielded container removals finish
        await self.kept.discard_all(QUIT_GRACE_S)
        self.exit()
