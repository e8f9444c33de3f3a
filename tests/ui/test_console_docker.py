"""The console end to end on the real engine: the mini task, scripted:good, pace 0."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen


@pytest.mark.docker
async def test_console_runs_mini_to_full_marks(fixture_catalog, store):
    app = IcaeApp(catalog=fixture_catalog, store=store, pace_s=0)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("enter")  # task list → run setup
        await pilot.pause()
        assert isinstance(app.screen, RunSetupScreen)
        await pilot.click("#start")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.worker is not None

        await screen.worker.wait()
        await pilot.pause(0.3)

        assert screen.finished is not None, screen.status_message
        assert screen.finished.status == "completed", screen.status_message
        table = screen.results
        planned = [ref.id for ref in fixture_catalog.tasks["mini"].cases]
        assert table.planned == planned
        assert table.row_count == len(planned)
        assert table.verdicts() == ["accepted"] * len(planned)
        score_line = str(screen.query_one("#score", Static).render())
        assert "overall 100.0%" in score_line
        assert f"{len(planned)}/{len(planned)} cases done" in score_line
        assert "run completed" in screen.status_message
        assert any(line.startswith("agent › ") for line in screen.trace.lines)
        assert [kind for kind, _ in screen.clarify.turns][:2] == ["question", "answer"]
