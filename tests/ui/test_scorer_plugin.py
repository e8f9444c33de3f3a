"""A case scorer registered in a few lines gets its column in the console's results table
and its value in the case detail, with no other change (the headless output and the report:
tests/test_scorer_plugin.py). The run is judged while the scorer is registered and replayed
after it is gone: the columns come from the run's events, not from this process."""

from __future__ import annotations

from textual.widgets import Static

from icae_tui.catalog.loader import Catalog
from icae_tui.evaluation.scorers import registered
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.case_detail import CaseDetailScreen
from icae_tui.ui.screens.replay import ReplayScreen, open_replay
from tests.scorer_run import judged_run, shout

from .helpers import until

SIZE = (160, 45)


async def replayed(app: IcaeApp, pilot, events: list) -> ReplayScreen:
    session = open_replay(app, events, speed=0)  # 0: all at once
    await until(pilot, lambda: app.screen is session.screen and session.screen.replay.finished)
    screen = session.screen
    screen.flush()
    await pilot.pause()
    return screen


async def test_a_new_case_metric_gets_a_column_and_a_place_in_the_case_detail(store):
    with registered(shout):
        events = judged_run()
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await replayed(app, pilot, events)
        table = screen.results
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[-1] == "SHOUT" and "oracle exit" in labels  # after the others, all shown
        shouts = [str(table.get_cell(case_id, "metric:shout")) for case_id in table.shown]
        assert shouts == ["✔", "✘", "✔"]

        table.focus()
        table.move_cursor(row=table.shown.index("hidden/greet#0"))
        await pilot.press("enter")  # its details, as the operator opens them
        await until(
            pilot, lambda: isinstance(app.screen, CaseDetailScreen) and app.screen.is_mounted
        )
        summary = str(app.screen.query_one("#case-summary", Static).render())
        assert "EM ✘" in summary and summary.rstrip().endswith("SHOUT ✘")


async def test_without_a_new_metric_the_table_keeps_its_columns(store):
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await replayed(app, pilot, judged_run())
        keys = [str(k.value) for k in screen.results.columns]
        assert keys == ["case", "pattern", "verdict", "reason", "oracle", "delivery"]
