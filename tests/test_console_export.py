"""Exporting a run from a display (display/export.py), the pause events' wording and the
sources' pause commands: no Textual."""

from __future__ import annotations

import json

from icae_tui.display.export import FILES, export_folder, export_run, trace_lines
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.display.view import TRACE_KEEP, RunView
from icae_tui.display.wording import ended_notice
from icae_tui.domain.events import (
    AgentOutput,
    AgentPaused,
    AgentResumed,
    PhaseChanged,
    RunFinished,
)
from icae_tui.domain.results import Score, SplitScore
from icae_tui.report import build_report
from icae_tui.runlog import RunLog
from icae_tui.trajectory import build_trajectory
from tests.ui.helpers import RECORDED_ID, recorded_run, score, started


def test_the_three_files_are_those_of_the_run(tmp_path):
    events = recorded_run()
    folder = export_folder(tmp_path, RECORDED_ID)
    assert folder == tmp_path / f"icae-{RECORDED_ID}"
    exported = export_run(events, folder)
    assert [p.name for p in exported.files] == list(FILES)
    assert exported.events == len(events)
    assert json.loads((folder / "report.json").read_text()) == json.loads(
        json.dumps(build_report(events))
    )
    assert json.loads((folder / "trajectory.json").read_text()) == json.loads(
        json.dumps(build_trajectory(events))
    )
    trace = (folder / "trace.txt").read_text().splitlines()
    assert trace == [line.text for line in RunView.from_events(events).trace]
    assert any(line.startswith("run 20240101-000000-c0ffee") for line in trace)
    assert "  err│ warn: \\x1b[2Jcleared?" in trace  # printable, as the console shows it


def test_the_trace_text_keeps_every_line(tmp_path):
    events = [
        started(),
        *(AgentOutput(stream="stdout", text=f"{i}\n") for i in range(TRACE_KEEP + 5)),
    ]
    lines = trace_lines(events)
    assert len(lines) == TRACE_KEEP + 6  # the view keeps the last TRACE_KEEP only
    assert lines[1] == "  out│ 0"


def test_an_export_folder_is_one_safe_path_component(tmp_path):
    assert export_folder(tmp_path, "../../etc/x\x1b") == tmp_path / "icae-.._.._etc_x_x1b"
    assert export_folder(tmp_path, "..").parent == tmp_path
    assert export_folder(tmp_path, "") == tmp_path / "icae-run"


def test_pause_events_in_the_view():
    view = RunView.from_events([
        started(), PhaseChanged(phase="generate"), AgentPaused(ts=100.0),
    ])  # fmt: skip
    assert view.agent_paused
    assert [line.text for line in view.trace][-1] == "⏸ agent paused by operator"
    assert view.status[0] == ("agent paused", "warn-strong")
    view.apply(AgentResumed(ts=112.5, paused_s=12.5))
    assert not view.agent_paused and view.paused_s == 12.5
    assert view.trace[-1].text == (
        "▶ agent resumed after 12.5s (not counted against its time limit)"
    )


def test_end_notices():
    done = RunFinished(status="completed", score=score(4, 4, 0.75))
    assert ended_notice(done) == ("Run completed", "overall 75.0% · 4/4 cases done")
    failed = RunFinished(status="failed", error="Docker engine lost")
    assert ended_notice(failed) == ("Run failed", "Docker engine lost")
    cancelled = RunFinished(status="cancelled", error="cancelled by the operator")
    assert ended_notice(cancelled, score(1, 4, 0.0)) == (
        "Run cancelled", "cancelled by the operator · 1/4 cases done",
    )  # fmt: skip
    public_only = Score(done=1, planned=1, by_split={"public": SplitScore(total=1, passed=1)})
    unmeasured = RunFinished(status="completed", score=public_only)
    assert ended_notice(unmeasured)[1].startswith("overall —")


class PausableRun:
    run_id = "r"
    leftovers_removed: list[str] = []

    def __init__(self) -> None:
        self.calls: list[str] = []

    def subscribe(self, callback) -> None:
        self.callback = callback

    async def pause(self) -> bool:
        self.calls.append("pause")
        return True

    async def resume(self) -> bool:
        self.calls.append("resume")
        return False


async def test_a_live_source_passes_pauses_on_and_a_stored_one_refuses_them():
    run = PausableRun()
    live = LiveSource(run)
    assert await live.pause_agent() is True
    assert await live.resume_agent() is False
    assert run.calls == ["pause", "resume"]
    got = []
    live.connect(got.append)
    ev = started()
    run.callback(ev)
    assert got == [ev] and live.recorded() == [ev]

    stored = ReplaySource(recorded_run())
    assert await stored.pause_agent() is False
    assert await stored.resume_agent() is False
    assert stored.recorded() == stored.events


class LoggedRun(PausableRun):
    """A run that keeps its events (as `Run` does, in its RunLog)."""

    def __init__(self, store) -> None:
        super().__init__()
        self.log = RunLog("logged", store)

    def subscribe(self, callback) -> None:
        self.log.subscribe(callback)


async def test_a_live_source_hands_out_the_runs_own_record_and_keeps_none(store):
    run = LoggedRun(store)
    live = LiveSource(run)
    got = []
    live.connect(got.append)
    events = [started(), *(AgentOutput(stream="stdout", text=f"{i}\n") for i in range(50))]
    for ev in events:
        await run.log.emit(ev)
    assert got == events and live.recorded() == events
    assert live.events == []  # no second list growing with the trace
