"""The plain display's order (icae_tui/display/plain.py over the run view): a phase's heading
comes before what the phase says. The run publishes its final score before the score phase
begins (and a run whose build failed has no score phase), so the view heads the score
itself; a recording made that way reads the same."""

from __future__ import annotations

import io
from pathlib import Path

from icae_tui.catalog import recordings
from icae_tui.display.plain import PlainPrinter
from icae_tui.domain.events import (
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    RunFinished,
    ScoreUpdated,
)
from icae_tui.domain.states import Phase, RunStatus
from icae_tui.evaluation.scoring import score
from tests.test_wording import PLANNED, case, started

RECORDING = Path(__file__).resolve().parent.parent / "tasks" / "semver" / "recordings"


def printed(events) -> list[str]:
    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in events:
        printer(ev)
    return out.getvalue().splitlines()


def test_the_score_heading_comes_before_the_score_in_a_recording():
    lines = printed(recordings.load(RECORDING / "good-L1.jsonl"))
    headings = [n for n, line in enumerate(lines) if line == "━━ score"]
    scores = [n for n, line in enumerate(lines) if line.startswith("score: ")]
    assert len(headings) == 1 and len(scores) == 1, lines[-5:]
    assert headings[0] < scores[0]
    assert lines[headings[0] + 1 : scores[0]] == []  # the score right under its heading
    assert lines[scores[0] + 1] == "━━ run completed"


def test_the_score_heading_comes_first_when_the_run_says_it_first():
    results = [case(c, True) for c in PLANNED]
    events = [started(), CasesPlanned(case_ids=PLANNED)]
    for n, r in enumerate(results, 1):
        events += [CaseFinished(result=r), ScoreUpdated(score=score(results[:n], planned=4))]
    events += [PhaseChanged(phase=Phase.SCORE), RunFinished(status=RunStatus.COMPLETED)]
    lines = printed(events)
    assert lines[-3:] == ["━━ score", lines[-2], "━━ run completed"]
    assert lines[-2].startswith("score: ")


def test_a_failed_build_is_scored_under_a_heading_too():
    results = [case(c, False) for c in PLANNED]
    events = [
        started(),
        BuildChecked(ok=False, exit_code=2, reason="build failed (exit 2): oops"),
        CasesPlanned(case_ids=PLANNED),
        *(CaseFinished(result=r) for r in results),
        ScoreUpdated(score=score(results, planned=4, build_ok=False)),
        RunFinished(status=RunStatus.COMPLETED),
    ]
    lines = printed(events)
    assert lines[-3] == "━━ score" and lines[-2].startswith("score: ")
    assert lines[-1] == "━━ run completed"
