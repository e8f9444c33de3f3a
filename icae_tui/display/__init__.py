"""The display model shared by every display of a run (no Textual, no Rich).

- `view`: `RunView`, the state of a run as displays show it, and its reducer `apply(event)`;
- `wording`: every string displays say about a run, with style hints (`metric_text`: of
  the scorers' metrics);
- `sources`: where a display's events come from (`LiveSource`, `ReplaySource`);
- `handle`: what a run can do, and the way to do it (`RunHandle`: a source's `handle()`);
- `operator`: the operator's state over a run display, and its decisions (`Operator`).
"""

from icae_tui.display.sources import LiveRun, LiveSource, ReplaySource, RunSource
from icae_tui.display.view import CaseRow, RunView, TraceLine, Turn

__all__ = [
    "CaseRow",
    "LiveRun",
    "LiveSource",
    "ReplaySource",
    "RunSource",
    "RunView",
    "TraceLine",
    "Turn",
]
