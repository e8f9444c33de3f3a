"""A stored run or a recording replayed through the run screen's panes at its own pace, with
a replay bar: play and pause, faster and slower, one event at a time, a timeline to jump.

The replay is a `PacedReplay` (icae_tui/display/replay.py) driven by a worker of the screen
showing it. Keys (also in the footer and on `?`):

    space       pause / play (at the end: play again from the start)
    ← / →       back / on by 5 % of the run's time (at least one event)
    - / +       slower / faster (0.5× … 64×); the bar shows the speed
    .  /  ,     one event on (pausing) / one event back
    home / end  the start / the end: the final state at once
    click       on the timeline: jump there

Moving back starts over: a fresh `ReplayScreen`, whose `RunView` is built from the events up
to the new point, replaces the one shown (the replay's reset), so nothing of the old panes
survives. Moving on delivers the events in between at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, TextArea
from textual.worker import Worker, WorkerState

from icae_tui.catalog.loader import Catalog
from icae_tui.display.feed import Deliver
from icae_tui.display.handle import RunHandle, RunKind
from icae_tui.display.replay import PacedReplay, Sleep
from icae_tui.display.sources import first_start
from icae_tui.display.view import RunView
from icae_tui.domain.events import Event
from icae_tui.domain.task import Task
from icae_tui.ui.keymap import keyed
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.footer import Footer
from icae_tui.ui.widgets.replay_bar import ReplayBar

REPLAY_GROUP = "icae-replay"  # not the run group: quitting has nothing to cancel for a replay
PRIORITY_ACTIONS = frozenset({"play_pause", "seek", "start", "end"})  # keys a text box types
SEEK_FRACTION = 0.05  # ← and → move this much of the run's time
SHOW_RETRY_S = 0.05  # a dialog is closing over the replay: show the fresh screen after it


class SessionSource:
    """The run source a replay screen sees: the session connects the screen to the replay
    and its worker drives it, so there is no job here and no command is taken."""

    def __init__(
        self, replay: PacedReplay, label: str, catalog: Mapping[str, Task] | None = None
    ) -> None:
        """`catalog`: the tasks a case detail takes the run's cases from."""
        self.replay = replay
        self.run_id = replay.run_id
        self.label = label or replay.label
        self._handle = RunHandle(
            self, RunKind.REPLAY, catalog=catalog, started=first_start(replay.events)
        )

    def connect(self, deliver: Deliver) -> None:
        pass  # connected by the session (see ReplaySession.screen_for)

    def job(self) -> None:
        return None

    def answer(self, question_id: int, text: str) -> bool:
        return False

    def set_responder(self, mode: str) -> bool:
        return False

    async def pause_agent(self) -> bool:
        return False  # space pauses the replay; nothing is building

    async def resume_agent(self) -> bool:
        return False

    def recorded(self) -> list[Event]:
        return self.replay.events[: self.replay.position]

    def now(self, view: RunView) -> float:
        return self.replay.now(view)

    def handle(self) -> RunHandle:
        return self._handle


class ReplaySession:
    """One replay in the console: its `PacedReplay` and the screen showing it now."""

    def __init__(
        self,
        replay: PacedReplay,
        *,
        label: str = "",
        artifacts: Path | None = None,
        catalog: Mapping[str, Task] | None = None,
    ) -> None:
        self.replay = replay
        self.label = label
        self.artifacts = artifacts
        self.catalog = catalog
        self.app: App[Any] | None = None  # once opened
        self.screen = self.screen_for()

    def open(self, app: App[Any]) -> ReplayScreen:
        self.app = app
        app.push_screen(self.screen)
        return self.screen

    def screen_for(self) -> ReplayScreen:
        """A fresh screen, fed from now on: events delivered before it is shown build its view
        (a screen not yet shown only applies them), its mount draws them."""
        screen = ReplayScreen(self)
        self.replay.connect(screen.handle_event, self.start_over)
        return screen

    def start_over(self) -> None:
        """The replay's reset (it moves back): a fresh screen takes the events up to the new
        point and replaces the one shown once they are in."""
        old, self.screen = self.screen, self.screen_for()
        old.stop_playing()
        if self.app is not None:
            self.app.call_later(self.show, self.screen)

    def owns(self, screen: object) -> bool:
        return isinstance(screen, ReplayScreen) and screen.session is self

    def show(self, fresh: ReplayScreen) -> None:
        app = self.app
        if app is None or fresh is not self.screen:  # moved back again: a fresher one follows
            return
        if self.owns(app.screen):
            app.switch_screen(fresh)
        elif any(self.owns(s) for s in app.screen_stack):  # under a closing dialog
            app.set_timer(SHOW_RETRY_S, lambda: self.show(fresh))
        # else the replay was left: nothing to show


def open_replay(
    app: App[Any],
    events: Iterable[Event],
    *,
    speed: float = 1.0,
    label: str = "",
    artifacts: Path | None = None,
    sleep: Sleep | None = None,
    catalog: Mapping[str, Task] | None = None,
) -> ReplaySession:
    """Push a paced replay of `events` (idle gaps over 2 s shortened); `sleep` for tests.
    `catalog`: the tasks whose cases the case detail shows (default: the app's catalog)."""
    if catalog is None:
        catalog = app_catalog(app)
    replay = PacedReplay(events, speed=speed, sleep=sleep or asyncio.sleep)
    session = ReplaySession(replay, label=label, artifacts=artifacts, catalog=catalog)
    session.open(app)
    return session


def app_catalog(app: App[Any]) -> Mapping[str, Task]:
    """The tasks of the console's catalog (none in an app without one)."""
    catalog = getattr(app, "catalog", None)
    return catalog.tasks if isinstance(catalog, Catalog) else {}


def target(replay: PacedReplay, direction: int) -> int:
    """The position SEEK_FRACTION of the run's time back (-1) or on (+1): the events up to
    that time, moving at least one event."""
    events = replay.events
    if not events:
        return 0
    start = events[0].ts
    when = replay.elapsed_s + direction * SEEK_FRACTION * replay.duration_s
    at = next((i for i, ev in enumerate(events) if ev.ts - start > when), len(events))
    if replay.position == 0 and direction < 0:
        return 0
    moved = min(at, replay.position - 1) if direction < 0 else max(at, replay.position + 1)
    return max(0, min(moved, len(events)))


class ReplayScreen(RunScreen):
    """The run screen on a paced replay, with the replay bar above the footer."""

    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed("replay", [
        # Priority bindings, whichever pane has the focus (a pane would take ← → home end to
        # scroll); off while a text box has the focus, where they are typed (check_action).
        # space pauses or plays; only the binding for the other state lives (check_action),
        # so the footer reads "Pause" while playing and "Play" while paused or at the end.
        Binding("space", "play_pause('pause')", "Pause", priority=True, id="replay.toggle"),
        Binding("space", "play_pause('play')", "Play", priority=True, id="replay.toggle"),
        Binding("left", "seek(-1)", "Back 5 %", priority=True, id="replay.seek_back",
                group=Binding.Group("Seek", compact=True)),
        Binding("right", "seek(1)", "On 5 %", priority=True, id="replay.seek_on",
                group=Binding.Group("Seek", compact=True)),
        Binding("end", "end", "Final state", priority=True),
        Binding("home", "start", "Start", show=False, priority=True),
        Binding("minus", "slower", "Slower", key_display="-",
                group=Binding.Group("Speed", compact=True)),
        Binding("plus,equals_sign", "faster", "Faster", key_display="+",
                group=Binding.Group("Speed", compact=True)),
        Binding("full_stop", "step", "Step", key_display="."),
        Binding("comma", "step_back", "Step back", key_display=",", show=False),
    ])  # fmt: skip

    def __init__(self, session: ReplaySession) -> None:
        source = SessionSource(session.replay, session.label, session.catalog)
        super().__init__(source, artifacts=session.artifacts)
        self.session = session
        self.replay = session.replay
        self.bar = ReplayBar(self.replay, id="replay-bar")
        self.driver: Worker[None] | None = None
        self.composed = False  # its panes are there: events are drawn as they come
        self.moving = False  # a move delivers events at once: the header is drawn after it

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, Footer):
                yield self.bar
            yield widget

    def on_mount(self) -> None:
        # Runs before RunScreen's on_mount (Textual calls both); the worker starts after both.
        self.composed = True
        if self.session.screen is self and not self.replay.finished:
            self.driver = self.run_worker(
                self.replay.job(),
                name=f"replay {self.replay.run_id}",
                group=REPLAY_GROUP,
                exit_on_error=False,
            )

    def stop_playing(self) -> None:
        """This screen no longer drives the replay (a fresh one takes over)."""
        if self.driver is not None:
            self.driver.cancel()

    def handle_event(self, ev: Event) -> None:
        if not self.composed:  # a fresh screen not composed yet: its view only (its mount
            # draws it whole); an event the view cannot take is passed over, as RunScreen
            # does before its panes are there to say so
            with contextlib.suppress(Exception):
                self.view.apply(ev)
            return
        super().handle_event(ev)
        if not self.moving:  # played: the header's clock is the event's (a move draws it once)
            self._render_header()
        self.bar.refresh()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.driver:
            return
        if event.state == WorkerState.ERROR:  # the panes survive anything; the replay stops
            err = event.worker.error
            self.notify(f"{type(err).__name__}: {err}", title="Replay stopped",
                        severity="error", markup=False)  # fmt: skip
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.moved()

    def move(self, how: Callable[[], object]) -> None:
        """Move the replay `how` says, then draw what follows from it once."""
        self.moving = True
        try:
            how()
        finally:
            self.moving = False
        self.moved()

    def moved(self) -> None:
        """The replay moved or changed state: the header's clock, the bar and the footer's
        Play/Pause follow."""
        if self.is_attached and self.composed:
            self._render_header()
            self.bar.refresh()
            self.refresh_bindings()

    # --- the controls -----------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return not self.replay.paused and not self.replay.finished

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in PRIORITY_ACTIONS and isinstance(self.focused, (Input, TextArea)):
            return False  # the key is typed (a search box of a pane)
        if action == "play_pause":
            return parameters[0] == ("pause" if self.playing else "play")
        return super().check_action(action, parameters)

    def action_play_pause(self, _want: str) -> None:
        self.move(self._play_again if self.replay.finished else self.replay.toggle)

    def _play_again(self) -> None:
        self.replay.resume()
        self.replay.seek(0)

    def action_seek(self, direction: int) -> None:
        self.move(lambda: self.replay.seek(target(self.replay, direction)))

    def action_faster(self) -> None:
        self.move(self.replay.faster)

    def action_slower(self) -> None:
        self.move(self.replay.slower)

    def action_step(self) -> None:
        self.move(self.replay.step)

    def action_step_back(self) -> None:
        self.replay.pause()
        self.move(lambda: self.replay.seek(self.replay.position - 1))

    def action_start(self) -> None:
        self.move(lambda: self.replay.seek(0))

    def action_end(self) -> None:
        self.move(lambda: self.replay.seek(len(self.replay.events)))

    def on_replay_bar_seek(self, event: ReplayBar.Seek) -> None:
        event.stop()
        self.move(lambda: self.replay.seek_time(event.fraction))
