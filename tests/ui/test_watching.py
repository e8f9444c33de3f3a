"""Watching and taking over a run from the run screen: pausing the agent, the progress line,
the notification of the run's end, exporting the run (sorting and filtering the results:
test_results.py). No Docker: a fake run, or stored events. Every wait is on a condition,
never a sleep."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

import pytest
from textual import notifications
from textual.widgets._toast import Toast, ToastRack

from icae_tui.catalog.loader import Catalog
from icae_tui.display.operator import Operator
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
from icae_tui.runs.run import RunOutcome
from icae_tui.ui.commands import action_commands, key_rows
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.progress import ProgressLine

from .helpers import (
    CASE_IDS,
    RECORDED_ID,
    RECORDED_T0,
    Console,
    FakeRun,
    evaluating,
    finish,
    key_description,
    open_palette,
    open_screen,
    recorded_run,
    result,
    score,
    started,
    stream,
    text_of,
    until,
)


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


pytestmark = pytest.mark.app(tasks=True, animations=False)


def progress_of(screen: RunScreen) -> str:
    return screen.query_one("#run-progress", ProgressLine).plain


# --- pausing the agent ----------------------------------------------------------------------


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


# --- the progress line ----------------------------------------------------------------------


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


# --- the run's end is notified ----------------------------------------------------------------


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


async def test_the_end_notification_leaves_when_its_time_is_up_and_the_screen_is_redrawn(
    mini, store, monkeypatch
):
    """At 80×24 the notification lies over the score and status lines: once its time is up
    it is gone, and the whole screen is drawn again (a repaint Textual dropped, while the
    footer recomposed as the run ended, left it on the terminal for minutes). The toast's own
    timer takes it away (0.3 s here); the notifications' clock is held, so it cannot expire
    before it is shown."""
    end_notice = Operator.end_notice

    def soon(op: Operator):
        notice = end_notice(op)
        return None if notice is None else replace(notice, timeout=0.3)

    monkeypatch.setattr(Operator, "end_notice", soon)
    held = time.time()  # a notification is stamped with the real time, then read by this one
    monkeypatch.setattr(notifications, "time", lambda: held)
    app = Console(catalog=Catalog(), store=store, animations=False)
    go = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        await go.wait()
        return finish(run)

    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        rack = screen.get_child_by_type(ToastRack)
        shown: list[str] = []
        repaints: list[int] = []
        refresh = screen.refresh

        def spied(*regions, **kwargs):
            if not regions and not kwargs:
                repaints.append(1)  # the whole screen
            return refresh(*regions, **kwargs)

        monkeypatch.setattr(screen, "refresh", spied)
        go.set()
        await until(pilot, lambda: len(rack.query(Toast)) == 1)
        shown.append(str(rack.query_one(Toast).render()))
        assert "Run completed" in shown[0]
        repaints.clear()
        await until(pilot, lambda: not rack.query(Toast) and not rack.children)
        await until(pilot, lambda: bool(repaints))
        await until(
            pilot, lambda: not any(isinstance(w, Toast) for w in screen._compositor.widgets)
        )


async def test_a_replay_is_not_notified_as_a_run_ending(app):
    async with app.run_test(size=(160, 45)) as pilot:
        await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        assert not any(t.startswith("Run ") for t, _, _ in app.notified)


# --- exporting the run ------------------------------------------------------------------------


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
        assert "report.json, trajectory.json, trace.txt" in message
        assert str(folder) in message.replace("/\n", "/")  # on lines broken after a "/"


async def test_at_80x24_the_export_folder_is_broken_after_a_slash_never_inside_a_name(
    app, tmp_path
):
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        screen.export_base = tmp_path / ("deep-folder-name-" * 2) / "x"
        await pilot.press("e")
        await until(pilot, lambda: any(t == "Exported" for t, _, _ in app.notified))
        message = next(m for t, m, _ in app.notified if t == "Exported")
        folder = message.split("\n")[1:]  # the folder on lines of its own
        room = 80 // 2 - 3  # the toast's text at 80 columns
        assert all(len(line) <= room for line in folder), folder
        assert all(line.endswith("/") for line in folder[:-1]), folder
        assert "".join(folder) == str(screen.exported.folder)


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
    app = Console(catalog=Catalog(), store=store, animations=False)
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
