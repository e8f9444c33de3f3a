"""The console's score line counts the agent's contradicted completion claims
(icae_tui/results/claims.py) right after macro, so an 80×24 screen keeps it, and the
trace says which claim and which figure."""

from __future__ import annotations

from textual.geometry import Region
from textual.widget import Widget

from icae_tui.display.sources import ReplaySource
from icae_tui.domain.events import AgentSubmitted, CaseFinished, RunFinished, ScoreUpdated
from icae_tui.evaluation.scoring import score
from icae_tui.ui.screens.run import RunScreen

from .helpers import open_screen, recorded_run, until


def rows_of(widget: Widget) -> list[str]:
    """What `widget` shows, row by row, as cut to its size (as tests/ui/test_run_screen.py)."""
    width, height = widget.outer_size
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def _overclaiming_run() -> list:
    """The recorded run, its submission claiming everything, its score the ladder's own
    (with tiers and patterns) over its four cases."""
    events = recorded_run()
    results = [ev.result for ev in events if isinstance(ev, CaseFinished)]
    for ev in events:
        if isinstance(ev, ScoreUpdated):
            ev.score = score(results[: ev.score.done], planned=len(results))
        elif isinstance(ev, RunFinished) and ev.score is not None:
            ev.score = score(results, planned=len(results))
    for ev in events:
        if isinstance(ev, AgentSubmitted):
            ev.message = "All tests pass and every feature is implemented."
            break
    else:
        raise AssertionError("the recorded run has no submission")
    return events


async def test_at_80x24_the_score_line_counts_contradicted_claims(app):
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(_overclaiming_run())))
        await until(pilot, lambda: screen.finished is not None)
        screen.flush()
        await pilot.pause()
        (score_row,) = rows_of(screen.query_one("#score"))
        # hidden 1/2, enhanced 0/1 (its one case timed out): overall 1/3; patterns ops 1/2,
        # edge 0/1: macro (1/2 + 0) / 2
        assert score_row.startswith(" overall 33.3%  macro 25.0%  ✘ 2 claims contradicted"), (
            score_row
        )
        assert screen.view.claims is not None
        assert [(f.claim.words, f.figure, f.detail) for f in screen.view.claims.flags] == [
            ("All tests pass", "hidden", "1/2 passed"),
            ("All tests pass", "enhanced", "0/1 passed"),
            ("every feature is implemented", "pattern edge", "0/1 passed"),
        ]
        (line,) = [line.text for line in screen.view.trace if line.kind == "claims"]
        assert line.startswith('claims: 2 contradicted — "All tests pass" — hidden 50.0%')
