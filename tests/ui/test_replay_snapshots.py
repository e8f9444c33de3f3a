"""Screenshots of a replay: the run screen with the replay bar (paused at 4×, part-way along
the timeline), at 80×24 and 200×60, compared with the accepted ones in __snapshots__/.

Stable the way tests/ui/test_snapshots.py is: a fixed event list with fixed timestamps, and
the replay's waits on a gate that never opens, so it moves only by the keys pressed.
After an intended change: `pytest tests/ui/test_replay_snapshots.py --snapshot-update`, then
look at the new SVGs before committing them.
"""

from __future__ import annotations

from icae_tui.ui.screens.replay import ReplayScreen, open_replay

from .helpers import Gate, recorded_run, still_console, until

POSITION = 31  # of the recorded run's events: evaluating, two cases done


def test_replay_paused_part_way(snap_compare, catalog, store, size):
    async def replaying(pilot) -> None:
        app = pilot.app
        session = open_replay(app, recorded_run(), sleep=Gate())
        await until(pilot, lambda: app.screen is session.screen and session.replay.position == 1)
        await pilot.press("space", "plus", "plus")  # paused, 4×
        session.replay.seek(POSITION)
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        await until(pilot, lambda: screen.results.planned and not screen.trace.pending)

    app = still_console(catalog, store)
    assert snap_compare(app, run_before=replaying, terminal_size=size)
