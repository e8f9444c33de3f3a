"""The score charts screen (g on the run screen): the figures the HTML report draws — pass rate
per pattern and per tier, the verdict distribution, the clarification timeline — drawn with
textual-plotext from the run's events, for a stored run replayed; and its picture at 80×24 and
200×60 (after an intended change: `--snapshot-update`, then look at the SVGs)."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from icae_tui.ui.screens.score_charts import ScoreChartsScreen, combined_text

from .helpers import press_settled, replayed_to_end, still_console, until


def _drawn(plot: PlotextPlot) -> str:
    return "\n".join(line.text for line in plot.render_lines(plot.region.reset_offset))


async def _open(pilot) -> ScoreChartsScreen:
    await replayed_to_end(pilot)
    await press_settled(pilot, "g")
    await until(pilot, lambda: isinstance(pilot.app.screen, ScoreChartsScreen))
    return pilot.app.screen


async def test_the_charts_show_the_stored_runs_figures(catalog, history, utc):
    app = still_console(catalog, history)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open(pilot)
        drawn = {w.id: _drawn(w) for w in screen.query(PlotextPlot)}
        # the recorded run: 4 cases — upper, ops, ops, edge; 2 accepted, 1 wrong, 1 timed out
        assert all(v in drawn["verdicts"] for v in ("accepted", "wrong_answer", "time_limit"))
        assert "ops" in drawn["by-pattern"] and "edge" in drawn["by-pattern"]
        assert "hidden" in drawn["by-tier"]
        assert "asked" in drawn["timeline"] and "answered" in drawn["timeline"]
        assert not screen.query_one("#combined").display  # a run without diagnostics
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ScoreChartsScreen))


def test_score_charts(snap_compare, catalog, history, utc, size):
    async def charts(pilot) -> None:
        await _open(pilot)

    assert snap_compare(still_console(catalog, history), run_before=charts, terminal_size=size)


def test_the_combined_line_says_its_formula_and_nothing_without_one():
    review = {"execution": 0.6, "review": 0.5, "combined": 0.58,
              "weights": {"execution": 0.8, "review": 0.2}, "components": {"signature": 0.5}}  # fmt: skip
    assert combined_text(review) == (
        "combined 58.0% = 0.8 × execution 60.0% + 0.2 × review 50.0% (the review: the mean of "
        "signature)"
    )
    assert combined_text(None) == "" and combined_text({**review, "combined": None}) == ""
