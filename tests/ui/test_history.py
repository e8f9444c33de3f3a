"""The history of runs (icae_tui/ui/screens/history.py): a run lists every responder it used
(a replay from the history, and the recorded demos: test_replay.py). No Docker: stored
events."""

from __future__ import annotations

from icae_tui.ui.screens.history import HistoryScreen

from .helpers import RECORDED_ID, RECORDED_T0, recorded_run


async def test_history_shows_every_responder_a_run_used(app, store):
    events = recorded_run()  # starts simulated, switches to assisted
    store.create_run(RECORDED_ID, "mini", "scripted:good", "L1", "simulated", RECORDED_T0)
    for ev in events:
        store.append(ev)
    store.finish_run(RECORDED_ID, "completed", events[-1].ts, 0.5)
    async with app.run_test(size=(160, 45)) as pilot:
        history = HistoryScreen(store)
        await app.push_screen(history)
        await pilot.pause()
        table = history.query_one("#runs")
        assert str(table.get_cell(RECORDED_ID, "responder")) == "simulated→assisted"
