"""Replay in the console: a stored run or a bundled recording through the run screen's panes at
its own pace, paused, stepped, moved along its timeline (back: the panes start over), faster
or slower, or at its end at once; the history lists the sample tasks' recordings as demos.

Deterministic: the replay's waits go through a `Gate` (tests/ui/helpers.py) that records them and returns only when
the test opens it (or at once), never a real clock.
"""

from __future__ import annotations

from textual.widgets import DataTable, Input, Static

from icae_tui.catalog import recordings
from icae_tui.catalog.loader import Catalog
from icae_tui.display.view import RunView
from icae_tui.domain.events import QuestionAsked
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.history import DEMO, HistoryScreen
from icae_tui.ui.screens.replay import ReplayScreen, open_replay
from icae_tui.ui.screens.task_list import TaskListScreen
from icae_tui.ui.widgets.replay_bar import ReplayBar

from .helpers import Gate, assert_drawn, recorded_run, until

SIZE = (160, 45)


def drawn_like(screen: ReplayScreen, events: list) -> None:
    """The screen's panes show exactly what a RunView built from `events` holds."""
    expected = RunView.from_events(events)
    assert screen.view == expected
    assert_drawn(screen, expected)


def bar_text(screen: ReplayScreen) -> str:
    return screen.query_one("#replay-bar", ReplayBar).describe()


def footer_keys(screen: ReplayScreen) -> set[str]:
    return {b.binding.description for b in screen.active_bindings.values() if b.enabled}


async def replaying(app: IcaeApp, pilot, events: list, gate: Gate, **kw) -> ReplayScreen:
    session = open_replay(app, events, sleep=gate, **kw)
    await until(pilot, lambda: app.screen is session.screen and session.screen.is_mounted)
    return session.screen


async def moved_back(pilot, old: ReplayScreen) -> ReplayScreen:
    """A seek back shows a fresh screen, built from the events up to the new point."""
    app = pilot.app
    await until(pilot, lambda: app.screen is not old and isinstance(app.screen, ReplayScreen)
                and app.screen.is_mounted)  # fmt: skip
    assert old not in app.screen_stack
    return app.screen


# --- the bundled recordings in the history ---------------------------------------------------


async def test_history_lists_the_recordings_and_replays_one(bundled_catalog, store):
    app = IcaeApp(catalog=bundled_catalog, store=store)
    gate = Gate()
    async with app.run_test(size=SIZE) as pilot:
        history = HistoryScreen(store, sleep=gate)
        await app.push_screen(history)
        await until(pilot, lambda: history.is_mounted and history.recordings)
        table = history.query_one("#runs", DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert names == ["semver/good-L1", "tidy/partial-L1", "wordfreq/partial-L1"]  # only demos
        assert all(str(table.get_row_at(i)[7]) == DEMO for i in range(table.row_count))
        assert "recorded demos" in str(table.border_title)
        assert "recorded demos replay" in str(history.query_one("#runs-empty", Static).render())

        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.is_mounted)
        screen = app.screen
        events = recordings.load(next(iter(history.recordings.values())).path)
        await until(pilot, lambda: screen.replay.position == 1)  # then it waits on the gate
        assert gate.waits and screen.replay.speed == 1.0
        drawn_like(screen, events[:1])
        assert "semver" in str(screen.query_one("#run-header", Static).render())
        assert "▶ playing 1×" in bar_text(screen) and f"1/{len(events)} events" in bar_text(screen)

        await pilot.press("end")  # the final state at once
        await until(pilot, lambda: screen.replay.finished)
        drawn_like(screen, events)
        assert "■ at the end" in bar_text(screen) and "00:22 / 00:22" in bar_text(screen)

        await pilot.press("escape")
        await until(pilot, lambda: app.screen is history)


async def test_a_broken_recording_is_reported_not_replayed(fixture_catalog, store, tmp_path):
    mini = fixture_catalog.tasks["mini"].model_copy(update={"root": str(tmp_path)})
    (tmp_path / "recordings").mkdir()
    good = recorded_run()
    (tmp_path / "recordings" / "broken.jsonl").write_text(
        recordings.dump(good[:1]) + '{"kind": "nonsense"}\n'
    )
    (tmp_path / "recordings" / "fine.jsonl").write_text(recordings.dump(good))
    app = IcaeApp(catalog=Catalog(tasks={"mini": mini}), store=store)
    async with app.run_test(size=SIZE) as pilot:
        told: list[tuple[str, str]] = []
        history = HistoryScreen(store, sleep=Gate())
        history.notify = lambda message, title="", **_: told.append((title, message))  # type: ignore[method-assign]
        await app.push_screen(history)
        await until(pilot, lambda: history.is_mounted and len(history.recordings) == 2)
        assert len(told) == 1 and "broken.jsonl:2: not a run event" in told[0][1]
        table = history.query_one("#runs", DataTable)
        first = table.get_row_at(0)
        assert str(first[0]) == "mini/broken" and str(first[5]) == "broken"
        assert "broken.jsonl:2" in str(first[8])

        await pilot.press("enter")  # the broken one: told again, not opened
        await pilot.pause()
        assert app.screen is history and len(told) == 2 and "broken.jsonl:2" in told[1][1]
        await pilot.press("down", "enter")  # the good one replays
        await until(pilot, lambda: isinstance(app.screen, ReplayScreen))


async def test_a_stored_run_replays_from_the_history(app, store):
    events = recorded_run()
    store.create_run(events[0].run_id, "mini", "scripted:good", "L1", "simulated", events[0].ts)
    for ev in events:
        store.append(ev)
    store.finish_run(events[0].run_id, "completed", events[-1].ts, 0.5)
    async with app.run_test(size=SIZE) as pilot:
        history = HistoryScreen(store, sleep=Gate(instant=True))
        await app.push_screen(history)
        await until(pilot, lambda: history.is_mounted)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ReplayScreen))
        screen = app.screen
        await until(pilot, lambda: screen.replay.finished)  # played through at its pace
        drawn_like(screen, events)
        assert screen.artifacts == store.artifacts_dir  # model calls and exports find the run


# --- the controls ------------------------------------------------------------------------------


async def test_pause_step_and_seek_on_and_back(app):
    events = recorded_run()  # 3 s apart: each wait is the 2 s cap
    gate = Gate()
    async with app.run_test(size=SIZE) as pilot:
        screen = await replaying(app, pilot, events, gate)
        await until(pilot, lambda: screen.replay.position == 1 and gate.waits == [2.0])
        assert "Pause" in footer_keys(screen) and "Play" not in footer_keys(screen)

        await pilot.press("space")
        assert screen.replay.paused and "‖ paused" in bar_text(screen)
        assert "Play" in footer_keys(screen) and "Pause" not in footer_keys(screen)
        gate.open()  # the wait under way ends: nothing more while paused
        await pilot.pause()
        assert screen.replay.position == 1

        await pilot.press("full_stop", "full_stop", "full_stop")  # one event each
        assert screen.replay.position == 4 and screen.replay.paused
        drawn_like(screen, events[:4])

        await pilot.press("right")  # on by 5 % of the run's time, at least one event
        on = screen.replay.position
        assert on > 4
        drawn_like(screen, events[:on])
        assert screen.view.trace_total == RunView.from_events(events[:on]).trace_total

        await pilot.press("left")  # back: a fresh screen from the events up to the point
        back = await moved_back(pilot, screen)
        assert back.replay is screen.replay and back.replay.position < on
        drawn_like(back, events[: back.replay.position])
        assert f"{back.replay.position}/{len(events)} events" in bar_text(back)

        await pilot.press("comma")  # one event back
        again = await moved_back(pilot, back)
        drawn_like(again, events[: again.replay.position])

        await pilot.press("home")
        start = await moved_back(pilot, again)
        assert start.replay.position == 0 and start.view == RunView()
        assert "replay of run" in str(start.query_one("#run-header", Static).render())

        await pilot.press("space")  # plays from the start once the gate lets it
        await until(pilot, lambda: start.replay.position == 1)
        gate.open()
        await until(pilot, lambda: start.replay.position == 2)
        drawn_like(start, events[:2])


async def test_clicking_the_timeline_jumps_there(app):
    events = recorded_run()
    async with app.run_test(size=SIZE) as pilot:
        screen = await replaying(app, pilot, events, Gate())
        await pilot.press("space")
        bar = screen.query_one("#replay-bar", ReplayBar)
        start, width = bar.track
        assert width > 50
        await pilot.click("#replay-bar", offset=(start + width // 2, 0))  # the middle of the run
        await until(pilot, lambda: screen.replay.position > 1)
        middle = screen.replay.position
        assert abs(middle - len(events) / 2) <= 2
        drawn_like(screen, events[:middle])
        assert abs(bar.fraction - 0.5) < 0.05

        await pilot.click("#replay-bar", offset=(start + 1, 0))  # near the start: back
        back = await moved_back(pilot, screen)
        assert 0 < back.replay.position < 4
        drawn_like(back, events[: back.replay.position])


async def test_speed_changes_are_shown_and_paced(app):
    events = recorded_run()
    gate = Gate()
    async with app.run_test(size=SIZE) as pilot:
        screen = await replaying(app, pilot, events, gate)
        await until(pilot, lambda: gate.waits == [2.0])
        await pilot.press("plus", "plus")
        assert screen.replay.speed == 4.0 and " 4× " in bar_text(screen)
        gate.open()  # the next wait is at the new speed
        await until(pilot, lambda: len(gate.waits) == 2)
        assert gate.waits[-1] == 0.5
        await pilot.press("minus", "minus", "minus", "minus")
        assert screen.replay.speed == 0.5 and " 0.5× " in bar_text(screen)
        await pilot.press("equals_sign")  # + without shift
        assert screen.replay.speed == 1.0


async def test_the_end_shows_the_final_state_and_space_plays_again(app):
    events = recorded_run()
    async with app.run_test(size=SIZE) as pilot:
        screen = await replaying(app, pilot, events, Gate())
        await pilot.press("end")
        await until(pilot, lambda: screen.driver is not None and screen.driver.is_finished)
        drawn_like(screen, events)
        assert "50.0%" in str(screen.query_one("#score", Static).render())
        assert "Play" in footer_keys(screen)
        assert not screen.running and "Cancel run" not in footer_keys(screen)  # nothing to stop

        await pilot.press("space")  # from the start again
        fresh = await moved_back(pilot, screen)
        await until(pilot, lambda: fresh.replay.position == 1)
        assert not fresh.replay.paused and "▶ playing" in bar_text(fresh)


async def test_the_replay_takes_no_commands(app):
    """A question the recorded operator answered gets no answer box; the responder keys and
    cancel are off; Escape leaves at once."""
    events = recorded_run()
    asked = next(
        i for i, ev in enumerate(events) if isinstance(ev, QuestionAsked) and ev.mode == "assisted"
    )
    async with app.run_test(size=SIZE) as pilot:
        screen = await replaying(app, pilot, events, Gate())
        await pilot.press("space")
        screen.replay.seek(asked + 1)  # the assisted question waits in the replay
        await pilot.pause()
        assert screen.view.pending is not None and not screen.answer_box.display
        assert not screen.check_action("cycle", ("human",))
        assert not screen.check_action("cancel_run", ())
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ReplayScreen))


# --- icae replay: straight into the replay ------------------------------------------------------


async def test_the_console_opens_straight_into_a_replay(store):
    events = recorded_run()

    def opened(app: IcaeApp) -> None:
        open_replay(app, events, speed=0, label="recording x.jsonl")  # 0: all at once

    app = IcaeApp(catalog=Catalog(), store=store, on_start=opened)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.replay.finished
        )
        screen = app.screen
        drawn_like(screen, events)
        assert "at once" in bar_text(screen)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))


async def test_a_text_box_types_the_replays_keys(app):
    """The replay's keys are priority keys (a pane would scroll on them), except while a text
    box (a pane's search) has the focus: then they are typed."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await replaying(app, pilot, recorded_run(), Gate())
        await pilot.press("space", "full_stop", "full_stop")
        assert screen.replay.position == 3
        box = Input(id="probe")
        await screen.mount(box)
        box.focus()
        await pilot.press("a", "space", "b", "left", "home", "end", "c")  # home, end: in the box
        assert box.value == "a bc" and screen.replay.position == 3 and screen.replay.paused
        screen.trace.focus()
        await pilot.press("end")
        assert screen.replay.finished


async def test_moves_in_a_burst_end_on_one_screen_drawn_from_scratch(app):
    """Keys held down: moves back and on before the fresh screens are shown; the one shown
    last holds what the events up to the replay's position make."""
    events = recorded_run()
    async with app.run_test(size=SIZE) as pilot:
        first = await replaying(app, pilot, events, Gate())
        await pilot.press("space")
        first.replay.seek(20)
        session = first.session
        for direction in (-1, -1, 1, -1, 1, 1, -1):
            session.screen.action_seek(direction)  # the newest screen, shown or not
        await until(pilot, lambda: app.screen is session.screen and session.screen.composed)
        await pilot.pause()
        shown = session.screen
        assert [s for s in app.screen_stack if isinstance(s, ReplayScreen)] == [shown]
        assert 0 < shown.replay.position < 20
        drawn_like(shown, events[: shown.replay.position])
