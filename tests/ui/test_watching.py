"""Watching and taking over a run from the run screen: pausing the agent, the progress line,
the notification of the run's end, sorting and filtering the results, exporting the run.
No Docker: a fake run, or stored events. Every wait is on a condition, never a sleep."""

from __future__ import annotations

import asyncio
import json

import pytest
from textual.widgets import Static

from icae_tui.catalog import Catalog
from icae_tui.display.results_filter import ResultsQuery
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.agent import Limits
from icae_tui.domain.events import (
    AgentPaused,
    AgentResumed,
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    RunFinished,
    ScoreUpdated,
)
from icae_tui.domain.results import Verdict
from icae_tui.run import RunOutcome
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.commands import action_commands, key_rows
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.progress import ProgressLine
from icae_tui.ui.widgets.results import ResultsPane, ResultsSearch

from .helpers import (
    CASE_IDS,
    PATTERNS,
    RECORDED_ID,
    RECORDED_T0,
    SPLITS,
    FakeRun,
    finish,
    recorded_run,
    result,
    score,
    stamp,
    started,
    stream,
    until,
)
from .test_presenting import open_palette


class Console(IcaeApp):
    """The console, with the notifications it raised kept for the test."""

    def __init__(self, **kwargs) -> None:
        self.notified: list[tuple[str, str, str]] = []  # (title, message, severity)
        super().__init__(**kwargs)
        self.animation_level = "none"

    def notify(self, message: str, *, title: str = "", severity="information", **kwargs) -> None:
        self.notified.append((title, message, severity))
        super().notify(message, title=title, severity=severity, **kwargs)


@pytest.fixture
def app(fixture_catalog, store) -> Console:
    return Console(catalog=fixture_catalog, store=store)


@pytest.fixture
def mini(fixture_catalog):
    return fixture_catalog.tasks["mini"]


class PausableRun(FakeRun):
    """A fake run with the Run's pause and resume: the agent (the script) waits at its gate
    while paused; pausing is refused outside the generate phase, as the Run does."""

    def __init__(self, task, script) -> None:
        super().__init__(task, script=script)
        self.gate = asyncio.Event()
        self.gate.set()
        self.building = False
        self.commands: list[str] = []

    async def pause(self) -> bool:
        self.commands.append("pause")
        if not self.building or not self.gate.is_set():
            return False
        self.gate.clear()
        self.emit(AgentPaused())
        return True

    async def resume(self) -> bool:
        self.commands.append("resume")
        if self.gate.is_set():
            return False
        self.gate.set()
        self.emit(AgentResumed(paused_s=1.5))
        return True


def text_of(screen: RunScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def progress_of(screen: RunScreen) -> str:
    return screen.query_one("#run-progress", ProgressLine).plain


def key_description(screen: RunScreen, key: str) -> str | None:
    active = screen.active_bindings.get(key)
    return active.binding.description if active is not None and active.enabled else None


async def open_screen(app: IcaeApp, pilot, screen: RunScreen) -> RunScreen:
    await app.push_screen(screen)
    await pilot.pause()
    return screen


# --- 1. pausing the agent -------------------------------------------------------------------


async def test_p_pauses_the_agent_and_p_again_lets_it_go_on(mini, app):
    release = asyncio.Event()

    async def script(run: PausableRun) -> RunOutcome:
        run.emit(started(limits=Limits(max_seconds=600)))
        run.emit(PhaseChanged(phase="generate", detail="scripted:good"))
        run.building = True
        await release.wait()
        await run.gate.wait()  # the agent's next step waits while paused
        run.building = False
        run.emit(PhaseChanged(phase="evaluate"))
        return finish(run)

    run = PausableRun(mini, script)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(run)))
        await until(pilot, lambda: key_description(screen, "p") == "Pause agent")
        assert "generate" in progress_of(screen)
        assert "/ 10:00 agent time" in progress_of(screen)

        await pilot.press("p")
        await until(pilot, lambda: screen.view.agent_paused)
        assert run.commands == ["pause"]
        await until(pilot, lambda: "agent paused" in text_of(screen, "#run-header"))
        assert screen.status_message.startswith("agent paused")
        await until(pilot, lambda: "⏸ agent paused by operator" in screen.trace.lines)
        assert "agent paused" in progress_of(screen)
        assert key_description(screen, "p") == "Resume agent"

        release.set()
        await pilot.pause()
        assert not run.gate.is_set() and screen.running  # still waiting at its gate
        await pilot.press("p")
        await until(pilot, lambda: not screen.view.agent_paused)
        assert run.commands == ["pause", "resume"]
        assert "agent paused" not in text_of(screen, "#run-header")
        await until(pilot, lambda: any(line.startswith("▶ agent resumed after 1.5s")
                                       for line in screen.trace.lines))  # fmt: skip
        await screen.worker.wait()
        await until(pilot, lambda: key_description(screen, "p") is None)  # run over: no pause


async def test_a_stored_run_refuses_a_pause(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        assert key_description(screen, "p") is None  # not offered: no footer key, no command
        await pilot.press("p")
        await pilot.pause()
        assert not screen.view.agent_paused
        assert await screen.pause_agent(True) is False  # asked anyway: the source refuses
        assert app.notified[-1][1] == "A stored run cannot be paused: its agent is not running."
        assert not screen.view.agent_paused


async def test_a_pause_outside_the_agents_phase_is_refused_with_a_reason(mini, app):
    release = asyncio.Event()

    async def script(run: PausableRun) -> RunOutcome:
        run.emit(started())
        run.emit(PhaseChanged(phase="build"))
        await release.wait()
        return finish(run)

    run = PausableRun(mini, script)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(run)))
        await until(pilot, lambda: screen.view.phase == "build")
        assert key_description(screen, "p") is None  # offered while the agent builds only
        assert await screen.pause_agent(True) is False
        assert run.commands == ["pause"]
        assert "while it builds" in app.notified[-1][1]
        release.set()
        await screen.worker.wait()


# --- 2. the progress line -------------------------------------------------------------------


def evaluating(done: int) -> list:
    """A run evaluating 4 cases, planned at +12 s, `done` of them finished 4 s apart."""
    events = [
        started(),
        PhaseChanged(phase="generate"),
        PhaseChanged(phase="evaluate", detail="4 cases"),
        CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
    ]
    events = stamp(events)  # 3 s apart: planned at +9 s
    verdicts = [Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.ACCEPTED, Verdict.TIME_LIMIT]
    for i in range(done):
        ev = CaseFinished(result=result(CASE_IDS[i], verdicts[i], "differs" if i % 2 else ""))
        ev.run_id, ev.seq, ev.ts = RECORDED_ID, len(events) + 1, events[-1].ts + 4.0
        events.append(ev)
    return events


async def test_the_progress_line_shows_cases_done_of_planned_and_an_estimate(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(evaluating(2))))
        await until(pilot, lambda: "2/4" in progress_of(screen))
        # evaluating since +6 s, planned at +9 s, two cases done by +17 s: 8 s for two, so
        # 8 s more for the other two
        line = progress_of(screen)
        assert line.startswith("evaluate 5/6")
        assert line.endswith("2/4 cases · 00:11 elapsed · ETA 00:08")
        assert "━" in line  # the bar, half full


async def test_the_progress_line_follows_a_live_run_to_its_end(mini, app):
    now = [RECORDED_T0]
    step = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        for ev in evaluating(0):
            run.emit(ev)
        await step.wait()
        run.emit(CaseFinished(result=result(CASE_IDS[0]), ts=RECORDED_T0 + 13))
        run.emit(RunFinished(status="completed", score=score(1, 4, 1.0), ts=RECORDED_T0 + 20))
        return RunOutcome(run.run_id, "completed", score(1, 4, 1.0))

    run = FakeRun(mini, script=script)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(run, clock=lambda: now[0])))
        now[0] = RECORDED_T0 + 11
        await until(pilot, lambda: "0/4 cases" in progress_of(screen))
        assert "ETA —" in progress_of(screen)  # no pace before the first case
        step.set()
        await screen.worker.wait()
        await until(pilot, lambda: progress_of(screen).startswith("completed"))
        assert progress_of(screen).endswith("1/4 cases · 00:20 in all")


# --- 3. the run's end is notified -------------------------------------------------------------


async def test_a_completed_run_is_notified_with_its_score(mini, app):
    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        return finish(run)

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        await screen.worker.wait()
        await until(pilot, lambda: any(t == "Run completed" for t, _, _ in app.notified))
        assert ("Run completed", "overall 100.0% · 1/1 cases done", "information") in app.notified


async def test_a_failed_run_is_notified_with_its_error(mini, app):
    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        run.emit(RunFinished(status="failed", error="Docker engine lost: [b]x[/b]"))
        return RunOutcome(run.run_id, "failed", None, "Docker engine lost")

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        await screen.worker.wait()
        await until(pilot, lambda: any(t == "Run failed" for t, _, _ in app.notified))
        assert ("Run failed", "Docker engine lost: [b]x[/b]", "error") in app.notified


async def test_a_cancelled_run_is_notified(mini, app):
    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        run.emit(CasesPlanned(case_ids=CASE_IDS))
        run.emit(CaseFinished(result=result(CASE_IDS[0])))
        run.emit(ScoreUpdated(score=score(1, 4, 1.0)))
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            run.emit(RunFinished(status="cancelled", error="cancelled by the operator"))
            raise
        raise AssertionError("not cancelled")

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        await until(pilot, lambda: screen.view.started is not None)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: any(t == "Run cancelled" for t, _, _ in app.notified))
        title, message, severity = next(n for n in app.notified if n[0] == "Run cancelled")
        assert message == "cancelled by the operator · 1/4 cases done"
        assert severity == "warning"


async def test_a_replay_is_not_notified_as_a_run_ending(app):
    async with app.run_test(size=(160, 45)) as pilot:
        await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        assert not any(t.startswith("Run ") for t, _, _ in app.notified)


# --- 4. sorting and filtering the results -----------------------------------------------------

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


# --- 5. exporting the run ---------------------------------------------------------------------


async def test_e_exports_report_trajectory_and_trace(app, tmp_path):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        screen.export_base = tmp_path
        await pilot.press("e")
        await until(pilot, lambda: screen.exported is not None)
        folder = tmp_path / f"icae-{RECORDED_ID}"
        assert screen.exported.folder == folder
        assert sorted(p.name for p in folder.iterdir()) == [
            "report.json", "trace.txt", "trajectory.json",
        ]  # fmt: skip
        report = json.loads((folder / "report.json").read_text())
        assert report["run"]["run_id"] == RECORDED_ID and report["status"] == "completed"
        trajectory = json.loads((folder / "trajectory.json").read_text())
        assert trajectory["session_id"] == RECORDED_ID
        trace = (folder / "trace.txt").read_text()
        assert "$ python3 mini.py upper <<< 'hi'" in trace
        await until(pilot, lambda: any(t == "Exported" for t, _, _ in app.notified))
        message = next(m for t, m, _ in app.notified if t == "Exported")
        assert str(folder) in message and "report.json, trajectory.json, trace.txt" in message


async def test_a_live_run_exports_what_happened_so_far_from_the_palette(mini, app, tmp_path):
    release = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        for ev in stream():
            run.emit(ev)
        await release.wait()
        return finish(run)

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        screen.export_base = tmp_path
        await until(pilot, lambda: screen.view.phase == "evaluate")
        await open_palette(pilot, "Export")
        await pilot.press("enter")
        await until(pilot, lambda: screen.exported is not None)
        report = json.loads((screen.exported.folder / "report.json").read_text())
        assert "status" not in report  # not over yet
        assert report["turns"][0]["question"] == "How are [red]errors[/] reported?"
        assert screen.exported.events == len(stream())
        release.set()
        await screen.worker.wait()


async def test_an_unwritable_folder_falls_back_to_the_runs_artifacts(store, tmp_path):
    app = Console(catalog=Catalog(), store=store)
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = RunScreen(ReplaySource(recorded_run()), artifacts=tmp_path / "artifacts")
        await open_screen(app, pilot, screen)
        screen.export_base = blocked
        screen.action_export()
        await until(pilot, lambda: screen.exported is not None)
        assert screen.exported.folder == tmp_path / "artifacts" / RECORDED_ID / "export"
        assert (screen.exported.folder / "trace.txt").exists()


async def test_the_new_keys_are_in_the_help_and_the_palette(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        screen.results.focus()
        await pilot.pause()
        ids = {row.action_id for row in key_rows(screen)}
        assert {
            "results.search", "results.sort", "results.reverse", "results.filter.verdict",
            "results.filter.split", "results.filter.pattern", "results.failures", "run.export",
        } <= ids  # fmt: skip
        assert "run.pause" not in ids  # a stored run: nothing to pause
        titles = {command.title for command in action_commands(app, screen)}
        assert {"Search results", "Sort", "Failures only", "Export"} <= titles
