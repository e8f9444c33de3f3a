"""The run screen, live or replaying, holds the headless printer's view and draws it."""

from __future__ import annotations

import io

from textual.widgets import Static

from icae_tui.display.plain import PlainPrinter
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.display.view import RunView
from icae_tui.ui.screens.run import RunScreen

from .helpers import RECORDED_T0, FakeRun, assert_drawn, recorded_run, until


def printed(events: list) -> RunView:
    printer = PlainPrinter(io.StringIO())
    for ev in events:
        printer(ev)
    return printer.view


def drawn(screen: RunScreen) -> None:
    """The widgets show the screen's view (its trace, turns, cases and status), the score
    included."""
    assert_drawn(screen, screen.view)
    assert "50.0%" in str(screen.query_one("#score", Static).render())


async def test_a_replay_holds_the_printers_view(app):
    events = recorded_run()
    async with app.run_test(size=(160, 45)) as pilot:
        screen = RunScreen(ReplaySource(events))
        await app.push_screen(screen)
        await pilot.pause()
        assert type(screen.view) is RunView
        assert screen.view == printed(events)
        drawn(screen)
        assert "01:51" in str(screen.query_one("#run-header", Static).render())  # events' clock


async def test_a_live_run_holds_the_printers_view(fixture_catalog, app):
    events = recorded_run()

    async def script(run: FakeRun):
        for ev in events:
            run.emit(ev)

    fake = FakeRun(fixture_catalog.tasks["mini"], "simulated", script)
    printer = PlainPrinter(io.StringIO())
    fake.subscribe(printer)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = RunScreen(LiveSource(fake, clock=lambda: RECORDED_T0 + 5))
        await app.push_screen(screen)
        await until(pilot, lambda: screen.worker is not None and screen.worker.is_finished)
        assert screen.view == printer.view == printed(events)
        drawn(screen)
        assert not screen.answer_box.display  # Q2 waited for the operator, then was answered
