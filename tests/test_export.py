"""Exporting a run from a display (icae_tui/display/export.py): the run's report, trajectory
and trace, the trace whole, a safe folder name. No Textual."""

from __future__ import annotations

import json

from icae_tui.display.export import FILES, export_folder, export_run, trace_lines
from icae_tui.display.view import TRACE_KEEP, RunView
from icae_tui.domain.events import AgentOutput
from icae_tui.results.report import build_report
from icae_tui.results.trajectory import build_trajectory
from tests.ui.helpers import RECORDED_ID, recorded_run, started


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
