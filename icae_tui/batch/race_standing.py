"""Where a race stands (`icae race`): each lane's run — started, finished, with what status
and score — and the banner over the race screen, or the lines printed after it. No Textual.

The race's clock starts at the first lane's RunStarted; a lane's time is its RunFinished
less that start. Only a completed run can be first: one that failed or was cancelled is
said so, with its time and its error, and never wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from icae_tui.display.view import RunView
from icae_tui.display.wording import pct
from icae_tui.domain.events import RunFinished
from icae_tui.util.safe_text import printable

ERROR_LIMIT = 80  # characters of a failed lane's error in the banner


class LaneState(StrEnum):
    STARTING = "starting"  # its run has not started (images, the engine)
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Lane:
    name: str  # the agent (with its repeat when an agent races itself)
    started: float | None  # its RunStarted's time
    finished: RunFinished | None

    @classmethod
    def of(cls, name: str, view: RunView) -> Lane:
        return cls(name, view.started.ts if view.started is not None else None, view.finished)

    @property
    def state(self) -> LaneState:
        if self.finished is not None:
            return LaneState(str(self.finished.status))
        return LaneState.RUNNING if self.started is not None else LaneState.STARTING

    @property
    def over(self) -> bool:
        return self.finished is not None

    @property
    def overall(self) -> str:
        """Its overall score, "—" until one is measured."""
        score = self.finished.score if self.finished is not None else None
        return pct(score.overall) if score is not None and score.measured else "—"

    @property
    def overall_value(self) -> float | None:
        score = self.finished.score if self.finished is not None else None
        return score.overall if score is not None and score.measured else None

    def why(self) -> str:
        """A failed lane's kind of failure and error, short."""
        ev = self.finished
        if ev is None:
            return ""
        kind = f"{ev.failure}" if ev.failure is not None else ""
        error = printable(ev.error, limit=ERROR_LIMIT)
        return ": ".join(part for part in (kind, error) if part)


def seconds(value: float) -> str:
    return f"{max(0.0, value):.1f} s"


@dataclass(frozen=True)
class Standing:
    lanes: tuple[Lane, ...]

    @property
    def start(self) -> float | None:
        """The race's start: its first lane's."""
        starts = [lane.started for lane in self.lanes if lane.started is not None]
        return min(starts) if starts else None

    @property
    def over(self) -> bool:
        return all(lane.over for lane in self.lanes)

    def time_of(self, lane: Lane) -> float | None:
        """How long after the race's start the lane finished."""
        start = self.start
        if lane.finished is None or start is None:
            return None
        return lane.finished.ts - start

    @property
    def first(self) -> Lane | None:
        """The first completed lane (a failure never wins)."""
        done = [lane for lane in self.lanes if lane.state is LaneState.COMPLETED]
        return min(done, key=lambda lane: self.time_of(lane) or 0.0) if done else None

    @property
    def best(self) -> Lane | None:
        """The best overall of the completed lanes, when they differ."""
        scored = [lane for lane in self.lanes if lane.overall_value is not None]
        values = {lane.overall_value for lane in scored}
        if len(scored) < 2 or len(values) < 2:
            return None
        return max(scored, key=lambda lane: lane.overall_value or 0.0)

    def said(self, lane: Lane) -> str:
        """One lane's part of the banner."""
        time = self.time_of(lane)
        when = seconds(time) if time is not None else ""
        match lane.state:
            case LaneState.COMPLETED:
                return f"{lane.name} overall {lane.overall} in {when}"
            case LaneState.FAILED | LaneState.CANCELLED:
                why = lane.why()
                return f"{lane.name} {lane.state} after {when}" + (f" ({why})" if why else "")
            case LaneState.RUNNING:
                return f"{lane.name} still running"
        return f"{lane.name} starting"

    def banner(self, now: float) -> str:
        """What the race screen says over its lanes; `now`: the clock while it runs."""
        start, first = self.start, self.first
        if start is None:
            return "the race starts: " + " vs ".join(lane.name for lane in self.lanes)
        names = " vs ".join(lane.name for lane in self.lanes)
        if not any(lane.over for lane in self.lanes):
            return f"racing: {names} · {seconds(now - start)}"
        head = "🏁 " if self.over else ""
        if first is not None:
            head += f"{first.name} finished first"
        else:
            head += "no lane completed" if self.over else "no lane has completed yet"
        parts = [self.said(lane) for lane in self.lanes]
        best = self.best
        if self.over and best is not None and first is not None and best is not first:
            parts.append(f"best overall: {best.name}")
        return f"{head} — " + " · ".join(parts)

    def lines(self) -> list[str]:
        """The race once over, for the terminal: the banner, then a line per lane."""
        if self.start is None:
            return ["━━ race: neither run started"]
        out = [f"━━ race: {self.banner(self.start)}"]
        width = max((len(lane.name) for lane in self.lanes), default=0)
        first = self.first
        for lane in self.lanes:
            mark = "1st" if lane is first else "   "
            time = self.time_of(lane)
            when = seconds(time) if time is not None else "—"
            line = f"   {mark} {lane.name:<{width}}  {lane.state:<9}  {when:>8}  overall {lane.overall}"
            if lane.state in (LaneState.FAILED, LaneState.CANCELLED) and lane.why():
                line += f"  ({lane.why()})"
            out.append(line)
        return out


def lane_names(agents: Sequence[str]) -> list[str]:
    """Each lane's name: its agent, numbered when an agent races itself."""
    return [
        f"{agent} #{agents[: i + 1].count(agent)}" if agents.count(agent) > 1 else agent
        for i, agent in enumerate(agents)
    ]
