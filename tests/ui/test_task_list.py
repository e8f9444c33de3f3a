"""The first screen: tasks, task errors, and opening the run setup."""

from __future__ import annotations

import asyncio
import shutil

import pytest
from textual.widgets import DataTable, Select, Static

from icae_tui.catalog.loader import load_catalog
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.history import HistoryScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen
from icae_tui.ui.screens.task_list import TaskListScreen
from icae_tui.ui.widgets.task_table import TaskTable
from tests.conftest import FIXTURE_TASKS
from tests.task_copies import copy_mini

from .helpers import until


def static_text(widget: Static) -> str:
    return str(widget.render())


async def test_lists_the_fixture_task(fixture_catalog, store):
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, TaskListScreen)
        table = screen.query_one("#tasks", TaskTable)
        assert table.row_count == 1
        row = [str(cell) for cell in table.get_row("mini")]
        assert row == ["mini", "Mini text tool (test fixture)", "python", "6", "small"]
        assert not screen.query("#task-errors")
        detail = static_text(screen.query_one("#task-detail", Static))
        assert "upper-cases text" in detail
        assert "dispatcher (mini)" in detail and "broken, good, partial" in detail
        assert "6 cases (small): 1 public · 3 hidden · 2 enhanced" in detail
        await pilot.pause()


async def test_malformed_task_is_reported_with_its_path(tmp_path, store):
    tasks = copy_mini(tmp_path).parent
    broken = tasks / "broken"
    shutil.copytree(FIXTURE_TASKS / "mini", broken)
    (broken / "task.toml").write_text('id = "broken"\ntitle = [unclosed\n', encoding="utf-8")
    catalog = load_catalog(tasks)
    assert catalog.errors and "mini" in catalog.tasks

    app = IcaeApp(catalog=catalog, store=store)
    async with app.run_test(size=(140, 40)):
        screen = app.screen
        assert screen.query_one("#tasks", TaskTable).row_count == 1
        panel = screen.query_one("#task-errors")
        assert panel.display
        shown = static_text(screen.query_one("#task-errors-text", Static))
        assert str(broken / "task.toml") in shown
        assert "invalid TOML" in shown
        assert "1 task could not be loaded" in shown


async def test_only_errors_still_opens(tmp_path, store):
    tasks = tmp_path / "tasks"
    (tasks / "bad").mkdir(parents=True)  # no task.toml at all
    catalog = load_catalog(tasks)
    app = IcaeApp(catalog=catalog, store=store)
    async with app.run_test(size=(120, 30)):
        screen = app.screen
        assert screen.query_one("#tasks", TaskTable).row_count == 0
        assert "missing task.toml" in static_text(screen.query_one("#task-errors-text", Static))
        assert screen.query_one("#no-tasks")


async def test_enter_opens_setup_and_escape_cancels(fixture_catalog, store):
    app = IcaeApp(catalog=fixture_catalog, store=store, pace_s=0)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        setup = app.screen
        assert setup.query_one("#agent", Select).value == "scripted:good"
        assert setup.query_one("#level", Select).value == "L1"
        assert setup.query_one("#responder", Select).value == "simulated"
        config = setup.config()
        assert config is not None and config.pace_s == 0 and config.task.id == "mini"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))


async def test_setup_without_solutions_cannot_start(tmp_path, store):
    tasks = copy_mini(tmp_path).parent
    shutil.rmtree(tasks / "mini" / "solutions")
    catalog = load_catalog(tasks)
    app = IcaeApp(catalog=catalog, store=store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        setup = app.screen
        assert setup.query_one("#start").disabled
        assert setup.config() is None
        assert "no solutions" in static_text(setup.query_one("#setup-note", Static))
        await pilot.press("ctrl+s")  # refused, stays open
        await pilot.pause()
        assert app.screen is setup


async def test_history_lists_stored_runs(fixture_catalog, store):
    store.create_run("r1", "mini", "scripted:good", "L1", "simulated", 1.0)
    store.finish_run("r1", "completed", 2.0, 1.0)
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        history = app.screen
        table = history.query_one("#runs", DataTable)
        assert [str(c) for c in table.get_row("r1")][:7] == [
            "r1", "mini", "scripted:good", "L1", "simulated", "completed", "100.0%",
        ]  # fmt: skip
        await pilot.press("enter")  # a run without events still opens, as a replay
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen_stack[-2] is history and not app.screen.running
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is history)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))


async def test_the_preview_states_the_language_version_the_engine_has(fixture_catalog, store):
    """The engine is asked once, in the background: until it answers the preview says so,
    then it states the version its runtime image's label holds (or that it is not built)."""
    answer = asyncio.Event()
    card = fixture_catalog.cards["mini"]
    asked: list[bool] = []

    async def runtimes() -> dict[str, str] | None:
        asked.append(True)
        await answer.wait()
        return {card.runtime: "3.13.5"}

    app = IcaeApp(catalog=fixture_catalog, store=store, runtimes=runtimes)
    async with app.run_test(size=(140, 40)) as pilot:
        detail = app.screen.query_one("#task-detail", Static)
        await until(pilot, lambda: bool(asked))
        assert "python (version: asking the engine…)" in static_text(detail)
        answer.set()
        await until(pilot, lambda: "python 3.13.5 ·" in static_text(detail))
    assert asked == [True]


@pytest.mark.parametrize(
    ("answer", "said"), [(None, "python unknown (no engine)"), ({}, "python not built yet")]
)
async def test_the_preview_says_when_the_version_is_not_known(
    fixture_catalog, store, answer, said
):
    async def runtimes() -> dict[str, str] | None:
        return answer

    app = IcaeApp(catalog=fixture_catalog, store=store, runtimes=runtimes)
    async with app.run_test(size=(140, 40)) as pilot:
        detail = app.screen.query_one("#task-detail", Static)
        await until(pilot, lambda: said in static_text(detail))
