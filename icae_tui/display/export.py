"""Exporting a run from a display: its report (report.json), its ATIF trajectory
(trajectory.json) and its trace as text (trace.txt), built from its events with the same
functions as the run's own files and `icae runs --export`. A run still going exports what
happened so far.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from icae_tui.display.view import RunView
from icae_tui.domain.events import Event
from icae_tui.results.report import write_report
from icae_tui.results.trajectory import build_trajectory
from icae_tui.util.safe_text import printable

REPORT_FILE = "report.json"
TRAJECTORY_FILE = "trajectory.json"
TRACE_FILE = "trace.txt"
FILES = (REPORT_FILE, TRAJECTORY_FILE, TRACE_FILE)


@dataclass(frozen=True)
class Exported:
    folder: Path
    files: tuple[Path, ...]
    events: int


def export_folder(base: Path, run_id: str) -> Path:
    """Where a run's export goes under `base`: `icae-<run id>` (made printable and safe as
    one path component)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in printable(run_id))
    return base / f"icae-{name or 'run'}"


def trace_lines(events: Sequence[Event]) -> list[str]:
    """Every line of the run's trace, as a display shows it (printable), none left out: the
    view keeps only its last lines, so they are taken as they come."""
    view = RunView()
    lines: list[str] = []
    cursor = 0
    for ev in events:
        view.apply(ev)
        new, cursor = view.trace_since(cursor)
        lines.extend(line.text for line in new)
    return lines


def export_run(events: Sequence[Event], folder: Path) -> Exported:
    """Write the three files into `folder` (made if needed; files of an earlier export of
    the run are replaced)."""
    events = list(events)
    folder.mkdir(parents=True, exist_ok=True)
    report = write_report(events, folder / REPORT_FILE)
    trajectory = folder / TRAJECTORY_FILE
    trajectory.write_text(
        json.dumps(build_trajectory(events), indent=1, ensure_ascii=False), encoding="utf-8"
    )
    trace = folder / TRACE_FILE
    trace.write_text("".join(line + "\n" for line in trace_lines(events)), encoding="utf-8")
    return Exported(folder, (report, trajectory, trace), len(events))
