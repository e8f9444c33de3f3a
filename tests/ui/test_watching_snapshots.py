"""Screenshots of watching a run: the run screen with its progress line (a run evaluating,
two cases of four done, an estimate of the time left) and its results filtered, at 80×24 and
200×60, compared with the accepted ones in __snapshots__/.

Stable the way tests/ui/test_snapshots.py is: a fixed terminal size, animations off, a stored
run's events with fixed timestamps (its clock and the estimate come from them).
After an intended change: `pytest tests/ui/test_watching_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them.
"""

from __future__ import annotations

from icae_tui.display.sources import ReplaySource
from icae_tui.ui.screens.run import RunScreen

from .helpers import evaluating, still_console, until


def test_evaluating_with_failures_only(snap_compare, catalog, store, utc, size):
    """Evaluating: the progress line (2/4 cases, the time so far, the estimate); the results
    table showing failures only, sorted by verdict, its query in the border's subtitle."""

    async def watching(pilot) -> None:
        screen = RunScreen(ReplaySource(evaluating(2)))
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.results.row_count == 4)
        await pilot.press("r", "x", "s", "s", "s")  # the results; failures only; by verdict
        await until(pilot, lambda: screen.results.results_query.sort == "verdict")

    app = still_console(catalog, store)
    assert snap_compare(app, run_before=watching, terminal_size=size)
