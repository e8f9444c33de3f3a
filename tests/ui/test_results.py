"""The results table (icae_tui/ui/widgets/results.py) on the run screen: its columns fit the
width (verdicts whole at 60 columns, patterns whole and the table full at 200); sorting by a
key or a header, filtering (failures only, verdict, tier, pattern, search as you type), a
filtered table following cases as they finish, and only a finished case's cells redrawn.
No Docker: stored or synthetic events."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from icae_tui.display.results_filter import ResultsQuery
from icae_tui.display.sources import ReplaySource
from icae_tui.domain.events import CaseFinished, CasesPlanned
from icae_tui.domain.results import Verdict
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.results import ResultsPane, ResultsSearch

from .helpers import (
    CASE_IDS,
    PATTERNS,
    SPLITS,
    key_description,
    open_screen,
    recorded_run,
    result,
    started,
    stream,
    until,
)

pytestmark = pytest.mark.app(tasks=True, animations=False)


# --- the columns fit the width ------------------------------------------------------------

LONG_PATTERNS = [
    "tidy clean <dir> [--dry-run] [--keep newest|oldest]",
    "tidy dedupe <dir> [--dry-run] [--by content|name]",
    "tidy dedupe <dir> [--dry-run] [--by content|name]",
    "tidy report <dir> [--json] [--since YYYY-MM-DD]",
]


def wide_run() -> list:
    cases = [
        result("public/upper#0"),
        result("hidden/ops#0", Verdict.WRONG_ANSWER, "stdout differs at line 1", 2, "error\n"),
        result("hidden/ops#1", Verdict.RUNTIME_ERROR, "exit code 139, oracle 0", 139),
        result("enhanced/edge#0", Verdict.TIME_LIMIT, "no exit within 10 s", None),
    ]
    cases = [c.model_copy(update={"pattern": p}) for c, p in zip(cases, LONG_PATTERNS, strict=True)]
    return [
        started(),
        CasesPlanned(case_ids=CASE_IDS, patterns=LONG_PATTERNS, splits=SPLITS),
        *(CaseFinished(result=c) for c in cases),
    ]


@pytest.mark.app()  # on no task, animated
async def test_at_60_columns_the_verdicts_are_whole(app):
    async with app.run_test(size=(60, 20)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(wide_run())))
        await pilot.pause()
        table = screen.results
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert table.verdicts() == ["accepted", "wrong_answer", "runtime_error", "time_limit"]
        for key in ("case", "verdict"):
            column = table.columns[key]
            assert column.width >= max(cell_len(str(c)) for c in table.get_column(key))


@pytest.mark.app()  # on no task, animated
async def test_at_200_columns_the_patterns_are_whole_and_the_table_is_full(app):
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(wide_run())))
        await pilot.pause()
        table = screen.results
        assert [str(c) for c in table.get_column("pattern")] == LONG_PATTERNS
        assert table.columns["pattern"].width >= max(map(len, LONG_PATTERNS))
        free = table.scrollable_content_region.width - table.virtual_size.width
        assert 0 <= free <= 1, free

        await pilot.resize_terminal(100, 40)
        await until(pilot, lambda: table.scrollable_content_region.width < 120)
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert table.verdicts() == ["accepted", "wrong_answer", "runtime_error", "time_limit"]


# --- sorting and filtering ------------------------------------------------------------------

RECORDED_VERDICTS = ["accepted", "wrong_answer", "accepted", "time_limit"]


def shown_ids(screen: RunScreen) -> list[str]:
    table = screen.results
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_failures_only_verdict_and_tier_filters_change_the_rows(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        table = screen.results
        assert table.verdicts() == RECORDED_VERDICTS
        await pilot.press("r")  # the results: their keys work there
        await until(pilot, lambda: table.has_focus)

        await pilot.press("x")
        assert shown_ids(screen) == ["hidden/ops#0", "enhanced/edge#0"]
        assert table.border_subtitle == "failures only · 2 of 4"
        await pilot.press("x")
        assert table.verdicts() == RECORDED_VERDICTS

        await pilot.press("v")  # accepted, the first verdict there is
        assert shown_ids(screen) == ["public/upper#0", "hidden/ops#1"]
        await pilot.press("v")
        assert table.verdicts() == ["wrong_answer"]
        await pilot.press("i")  # and the first tier, public: nothing is both
        assert table.row_count == 0
        assert table.border_subtitle == "tier public · verdict wrong_answer · 0 of 4"
        await pilot.press("i")
        assert shown_ids(screen) == ["hidden/ops#0"]

        assert key_description(screen, "escape") == "Clear filters"
        await pilot.press("escape")  # clears the filters; the screen stays
        assert table.verdicts() == RECORDED_VERDICTS
        assert app.screen is screen and table.border_subtitle == ""
        assert key_description(screen, "escape") == "Back"  # nothing to clear: back again

        await pilot.press("a")  # pattern: upper, the first planned
        assert shown_ids(screen) == ["public/upper#0"]


async def test_sorting_by_a_key_and_by_a_header(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        table = screen.results
        table.focus()
        await pilot.press("s")  # by case id
        assert shown_ids(screen) == sorted(CASE_IDS)
        assert table.border_subtitle == "by case ↑"
        await pilot.press("o")
        assert shown_ids(screen) == sorted(CASE_IDS, reverse=True)

        x = (
            table.region.x
            + 1
            + table.cell_padding
            + table.columns["verdict"].get_render_width(table) // 2
        )
        x += sum(c.get_render_width(table) for c in table.ordered_columns[:2])  # case, pattern
        await pilot.click(offset=(x, table.region.y + 1))  # the verdict header
        await until(pilot, lambda: table.results_query.sort == "verdict")
        assert table.verdicts() == ["accepted", "accepted", "wrong_answer", "time_limit"]
        await pilot.click(offset=(x, table.region.y + 1))  # again: the other way
        await until(pilot, lambda: table.results_query.descending)
        assert table.verdicts() == ["time_limit", "wrong_answer", "accepted", "accepted"]


async def test_search_filters_as_you_type_and_escape_clears_it(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        table = screen.results
        pane = screen.query_one(ResultsPane)
        box = screen.query_one(ResultsSearch)
        assert not box.display
        table.focus()
        await pilot.press("slash")
        await until(pilot, lambda: box.has_focus and box.display)
        await pilot.press(*"EDGE")
        assert shown_ids(screen) == ["enhanced/edge#0"]
        await pilot.press("enter")  # back to the table, the search kept
        await until(pilot, lambda: table.has_focus)
        assert box.display and table.border_subtitle == '"EDGE" · 1 of 4'
        await pilot.press("slash")
        await until(pilot, lambda: box.has_focus)
        await pilot.press("backspace", "backspace", "backspace", "backspace")
        assert table.verdicts() == RECORDED_VERDICTS  # nothing left: every row
        await pilot.press(*"line 1")  # in the reasons too
        assert shown_ids(screen) == ["hidden/ops#0"]
        await pilot.press("escape")
        await until(pilot, lambda: table.has_focus and not box.display)
        assert table.verdicts() == RECORDED_VERDICTS
        assert pane.results_query == ResultsQuery()


async def test_a_filtered_table_follows_cases_as_they_finish(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        for ev in stream():
            screen.handle_event(ev)
        screen.flush()
        table = screen.results
        table.set_query(ResultsQuery(failures_only=True, sort="verdict"))
        assert table.row_count == 0
        screen.handle_event(CaseFinished(result=result("public/upper#0")))
        screen.flush()
        assert table.row_count == 0  # passed: not a failure
        screen.handle_event(
            CaseFinished(result=result("enhanced/edge#0", Verdict.TIME_LIMIT, "slow", None))
        )
        screen.handle_event(
            CaseFinished(result=result("hidden/ops#1", Verdict.WRONG_ANSWER, "differs", 1))
        )
        screen.flush()
        assert shown_ids(screen) == ["hidden/ops#1", "enhanced/edge#0"]  # by verdict
        assert table.border_subtitle == "failures only · by verdict ↑ · 2 of 4"
        table.set_query(ResultsQuery())
        assert shown_ids(screen) == CASE_IDS


async def test_a_finished_case_redraws_only_its_result_cells(app, monkeypatch):
    """Widths come from the column policy: no cell of a finished case asks the table to
    measure its column again, and its case id and pattern cells are not rewritten (but for
    a pattern that came only with the result: a run stored before patterns were planned)."""
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        screen.handle_event(started())
        screen.handle_event(CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS))
        screen.handle_event(CasesPlanned(case_ids=["hidden/old#0"]))  # no pattern planned
        screen.flush()
        table = screen.results
        calls = []
        original = table.update_cell

        def update_cell(row_key, column_key, value, *, update_width=False):
            calls.append((row_key, column_key, update_width))
            original(row_key, column_key, value, update_width=update_width)

        monkeypatch.setattr(table, "update_cell", update_cell)
        screen.handle_event(CaseFinished(result=result("hidden/ops#0")))
        screen.flush()
        assert sorted(c for _, c, _ in calls) == ["delivery", "oracle", "reason", "verdict"]
        assert not any(width for _, _, width in calls)
        calls.clear()
        screen.handle_event(CaseFinished(result=result("hidden/old#0")))
        screen.flush()
        assert "pattern" in [c for _, c, _ in calls]
        assert str(table.get_cell("hidden/old#0", "pattern")) == "old"


async def test_the_table_keeps_no_renders_from_before_its_last_change(app):
    """DataTable caches each render under its count of changes: none is used again after a
    change, so the table drops them rather than keep up to 10,000 dead cells."""
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        screen.handle_event(started())
        screen.handle_event(CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS))
        screen.flush()
        table = screen.results
        for round_ in range(30):
            for case_id in CASE_IDS:
                verdict = Verdict.ACCEPTED if round_ % 2 else Verdict.WRONG_ANSWER
                screen.handle_event(CaseFinished(result=result(case_id, verdict, f"r{round_}")))
            screen.flush()
            await pilot.pause()  # drawn: the caches fill with this change's renders
        cells = len(table._cell_render_cache)
        assert 0 < cells <= (len(CASE_IDS) + 1) * len(table.fitted)  # the rows and the header
        assert str(table.get_cell(CASE_IDS[0], "reason")) == "r29"
