"""What a new user found wrong trying the console under tmux, one test (or a few) per finding:
cancel says what it does and when it is done; an unknown score is not zero; rungs that never
ran are not failed; follow shows its state, scrolling up pauses it and long lines wrap; run
setup starts on the agent; the results table's columns fit the width; long errors are shown
whole; labels follow the responder. No Docker: fake runs and stored events."""

from __future__ import annotations

import asyncio

import pytest
from rich.cells import cell_len
from textual.widgets import Select, Static

from icae_tui.catalog import Catalog
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.events import (
    AgentOutput,
    AgentSaid,
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    RunFinished,
    ScoreUpdated,
)
from icae_tui.domain.results import Verdict
from icae_tui.evaluation.scoring import score as score_of
from icae_tui.evaluation.verdict import judge
from icae_tui.run import RunOutcome
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.dialogs import CaseDetailScreen, ConfirmScreen
from icae_tui.ui.screens.history import HistoryScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen
from icae_tui.ui.widgets.trace import WRAP_INDENT
from tests.test_verdict import REF, TASK, side

from .helpers import (
    CASE_IDS,
    PATTERNS,
    Q_UNKNOWN,
    RECORDED_ID,
    RECORDED_T0,
    SPLITS,
    FakeRun,
    finish,
    recorded_run,
    result,
    started,
    until,
)


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


@pytest.fixture
def mini(fixture_catalog):
    return fixture_catalog.tasks["mini"]


@pytest.fixture
def app(store):
    return IcaeApp(catalog=Catalog(), store=store)


async def open_screen(app: IcaeApp, pilot, screen: RunScreen) -> RunScreen:
    await app.push_screen(screen)
    await until(pilot, lambda: app.screen is screen and screen.is_mounted)
    return screen


def replay(*events) -> RunScreen:
    return RunScreen(ReplaySource(list(events)))


# --- 1. cancel ------------------------------------------------------------------------------


async def test_cancel_says_what_it_does_and_when_it_is_done(mini, app):
    stopped = asyncio.Event()  # the agent has stopped
    removing = asyncio.Event()  # the run is removing its containers
    removed = asyncio.Event()  # ... and is done

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        run.emit(PhaseChanged(phase="generate", detail="scripted:good"))
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await stopped.wait()
            run.emit(RunFinished(status="cancelled", error="cancelled by the operator"))
            removing.set()
            await removed.wait()
            run.leftovers_removed = ["c1", "c2"]
            raise
        raise AssertionError("not cancelled")

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        await until(pilot, lambda: screen.view.phase == "generate")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.screen is screen and screen.cancelling)
        assert screen.status_message == "cancelling: stopping the agent, removing containers…"
        assert "phase cancelling…" in text_of(screen, "#run-header")

        stopped.set()
        await until(pilot, lambda: removing.is_set() and screen.finished is not None)
        assert screen.status_message == "cancelling: run stopped, removing containers…"

        removed.set()
        await until(pilot, lambda: not screen.running and not screen.cancelling)
        assert screen.status_message.startswith(
            "run cancelled: containers removed (2 left over, removed by the final sweep)"
        ), screen.status_message


# --- 2. unknown is not zero -------------------------------------------------------------------


async def test_the_score_line_shows_a_dash_until_a_scored_case_is_done(store):
    public = result("public/upper#0")
    hidden = result("hidden/ops#0", Verdict.WRONG_ANSWER, "stdout differs", 0, "no\n")
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, replay())
        for ev in (
            started(),
            CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
            CaseFinished(result=public),
            ScoreUpdated(score=score_of([public], planned=4)),
        ):
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        line = text_of(screen, "#score")
        assert line.startswith("overall —  macro —"), line
        assert "0.0%" not in line

        screen.handle_event(RunFinished(status="cancelled", error="cancelled by the operator"))
        screen.flush()
        await pilot.pause()
        assert text_of(screen, "#score").startswith("overall —  macro —")

    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:  # a hidden case done: a real zero
        screen = await open_screen(app, pilot, replay())
        for ev in (
            started(),
            CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
            CaseFinished(result=hidden),
            ScoreUpdated(score=score_of([hidden], planned=4)),
        ):
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        assert text_of(screen, "#score").startswith("overall 0.0%  macro 0.0%")


# --- 3. rungs that never ran ----------------------------------------------------------------


async def test_case_detail_says_not_reached_for_rungs_that_never_ran(app):
    r = judge(TASK, REF, side(exit_code=0), side(exit_code=1))
    async with app.run_test(size=(160, 45)) as pilot:
        detail = CaseDetailScreen(r)
        await app.push_screen(detail)
        await pilot.pause()
        summary = text_of(detail, "#case-summary")
        assert "exec ✘" in summary and "SP, EM, FM not reached" in summary, summary
        assert "SP ✘" not in summary and "FM score" not in summary


# --- 4. follow, pause, wrap -------------------------------------------------------------------


def follow_label(screen: RunScreen) -> str:
    return screen.active_bindings["f"].binding.description


def output(n: int, start: int = 0) -> AgentOutput:
    return AgentOutput(stream="stdout", text="".join(f"line {i}\n" for i in range(start, n)))


async def test_follow_shows_its_state_and_scrolling_up_pauses_it(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_screen(app, pilot, replay())
        trace = screen.trace
        screen.handle_event(started())
        screen.handle_event(output(300))
        screen.flush()
        await pilot.pause()
        assert trace.is_vertical_scroll_end
        assert follow_label(screen) == "Follow on"
        assert not trace.border_subtitle

        trace.focus()
        await pilot.press("pageup")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert not trace.auto_scroll and not trace.is_vertical_scroll_end
        assert trace.border_subtitle == "paused — f to follow"
        assert follow_label(screen) == "Follow off"
        y = trace.scroll_y
        screen.handle_event(output(600, 300))
        screen.flush()
        await pilot.pause()
        assert trace.scroll_y == y  # paused: new lines do not move the view

        await pilot.press("f")
        await pilot.pause()
        assert trace.auto_scroll and trace.is_vertical_scroll_end
        assert follow_label(screen) == "Follow on" and not trace.border_subtitle
        await pilot.press("f")
        await pilot.pause()
        assert not trace.auto_scroll and follow_label(screen) == "Follow off"
        assert trace.border_subtitle == "paused — f to follow"


async def test_long_lines_wrap_to_the_trace_width(app):
    said = " ".join(f"word{i}" for i in range(120))
    logical = "agent › " + said
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_screen(app, pilot, replay())
        trace = screen.trace
        screen.handle_event(started())
        screen.handle_event(AgentSaid(text=said))
        screen.flush()
        await pilot.pause()

        def rows_of_said() -> list[str]:
            rows = list(trace.rows)
            first = next(i for i, row in enumerate(rows) if row.startswith("agent › "))
            rest = [row for row in rows[first + 1 :] if row.startswith(WRAP_INDENT)]
            return [rows[first], *rest]

        width = trace.scrollable_content_region.width
        assert logical in trace.lines  # the trace's lines stay whole
        rows = rows_of_said()
        assert len(rows) > 1 and all(cell_len(row) <= width for row in trace.rows)
        assert rows[0] + "".join(row[len(WRAP_INDENT) :] for row in rows[1:]) == logical
        assert trace.max_scroll_x == 0

        await pilot.resize_terminal(160, 40)
        await until(pilot, lambda: trace.scrollable_content_region.width > width)
        await pilot.pause()
        wider = trace.scrollable_content_region.width
        assert all(cell_len(row) <= wider for row in trace.rows)
        assert len(rows_of_said()) < len(rows)  # wrapped again, to the new width


async def test_the_no_docker_error_is_shown_whole(mini, app):
    error = (
        "Docker engine at unix:///var/run/docker.sock is not answering (ClientConnectorError: "
        "Cannot connect to unix socket /var/run/docker.sock ssl:default [No such file or "
        "directory]). Start it with `scripts/engine.sh` (or `dockerd &`)."
    )

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        run.emit(RunFinished(status="failed", error=error))
        return RunOutcome(run.run_id, "failed", None, error)

    told: list[tuple[str, dict]] = []
    async with app.run_test(size=(60, 20)) as pilot:
        screen = RunScreen(LiveSource(FakeRun(mini, script=script)))
        screen.notify = lambda message, **kw: told.append((message, kw))  # type: ignore[method-assign]
        await open_screen(app, pilot, screen)
        await until(pilot, lambda: not screen.running and screen.finished is not None)
        screen.flush()
        await pilot.pause()
        status = screen.query_one("#status", Static)
        assert status.size.height > 1  # wrapped, not cut at one line
        assert str(status.render()).startswith("run failed — Docker engine at")
        assert any(error in message and kw.get("severity") == "error" for message, kw in told)
        rows = "".join(row.removeprefix(WRAP_INDENT) for row in screen.trace.rows)
        assert error in rows


# --- 5. run setup starts on the first choice ------------------------------------------------


async def test_run_setup_starts_on_the_agent_not_on_start(fixture_catalog, store, monkeypatch):
    started_runs: list[object] = []
    monkeypatch.setattr(IcaeApp, "start_run", lambda self, config: started_runs.append(config))
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        assert app.focused is app.screen.query_one("#agent", Select)
        await pilot.press("enter")  # opens the agent's choices; starts nothing
        await pilot.pause()
        assert isinstance(app.screen, RunSetupScreen) and started_runs == []


# --- 8. the results table fits its width ----------------------------------------------------

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


async def test_at_60_columns_the_verdicts_are_whole(app):
    async with app.run_test(size=(60, 20)) as pilot:
        screen = await open_screen(app, pilot, replay(*wide_run()))
        await pilot.pause()
        table = screen.results
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert table.verdicts() == ["accepted", "wrong_answer", "runtime_error", "time_limit"]
        for key in ("case", "verdict"):
            column = table.columns[key]
            assert column.width >= max(cell_len(str(c)) for c in table.get_column(key))


async def test_at_200_columns_the_patterns_are_whole_and_the_table_is_full(app):
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_screen(app, pilot, replay(*wide_run()))
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


# --- 9. labels follow the responder --------------------------------------------------------


async def test_the_status_line_forgets_a_question_once_it_is_answered(mini, app):
    release = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started("human"))
        await run.channel.ask(Q_UNKNOWN)
        await release.wait()
        return finish(run)

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(
            app, pilot, RunScreen(LiveSource(FakeRun(mini, "human", script)))
        )
        await until(pilot, lambda: screen.awaiting == 1)
        assert "Q1" in screen.status_message
        screen.trace.focus()
        await pilot.press("1")  # simulated: it answers Q1 at once
        await until(pilot, lambda: screen.awaiting is None and screen.view.pending is None)
        await until(pilot, lambda: "Q1" not in screen.status_message)
        await pilot.press("2")  # human again, nothing waits
        await pilot.pause()
        assert "Q1" not in screen.status_message and "simulated" not in screen.status_message
        question = next(text for kind, text in screen.clarify.turns if kind == "question")
        assert question.splitlines()[0].endswith("for simulated"), question
        release.set()
        await screen.worker.wait()


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
