"""How far a run is, phase by phase, with an estimate of what is left: the run screen's
progress bar. No clock of its own: the display passes its time (`now`), so tests pass
timestamps.

- generate: the agent's own time (the operator's pauses left out) against its time limit,
  when it has one;
- evaluate: the cases done of those planned, and an estimate of the time left from the pace
  so far: `remaining × (now − planned) / done`, where `planned` is when the cases were
  planned. With cases judged concurrently they finish in bursts; this pace takes the time
  between bursts into account, so the estimate grows a little while nothing finishes and
  drops when a case does;
- the other phases (prepare, freeze, build, score): how long the phase has taken;
- once the run is over: its outcome, the cases done, its whole time.
"""

from __future__ import annotations

from dataclasses import dataclass

from icae_tui.display.view import RunView
from icae_tui.display.wording import Seg, clock, phase_step
from icae_tui.domain.states import Phase, RunStatus

BAR_FULL = "━"
BAR_EMPTY = "─"
BAR_MIN = 8  # a bar narrower than this is left out
STARTING = "starting"  # the phase's word before the first phase is announced


@dataclass(frozen=True)
class RunProgress:
    """Where a run is. `phase`: the phase (None: none announced yet), or the run's end
    status once it is over."""

    phase: Phase | RunStatus | None
    elapsed_s: float  # of the phase (generate: the agent's time); of the run once over
    limit_s: float | None = None  # generate: the agent's time limit
    done: int = 0  # cases
    planned: int = 0
    eta_s: float | None = None  # evaluate: the estimated time left
    paused: bool = False  # the operator paused the agent
    over: bool = False  # the run has finished

    @property
    def fraction(self) -> float | None:
        """How much of the phase is done (0…1), or None when that is not known."""
        if self.phase == Phase.EVALUATE or (self.over and self.planned):
            return self.done / self.planned if self.planned else None
        if self.over:
            return 1.0 if self.phase == RunStatus.COMPLETED else None
        if self.phase == Phase.GENERATE and self.limit_s:
            return min(1.0, self.elapsed_s / self.limit_s)
        return None


def eta(done: int, planned: int, since: float | None, now: float) -> float | None:
    """The time left for `planned − done` cases at the pace so far (cases done since
    `since`); None before the first case is done."""
    if since is None or done <= 0 or planned <= 0:
        return None
    remaining = max(0, planned - done)
    return remaining * max(0.0, now - since) / done


def run_progress(view: RunView, now: float) -> RunProgress | None:
    """The progress of the run `view` shows, at `now` (None before it started)."""
    st = view.started
    if st is None:
        return None
    done, planned = view.cases_done, view.cases_planned  # the score line's count too
    if view.finished is not None:
        return RunProgress(
            view.finished.status, max(0.0, view.finished.ts - st.ts), done=done,
            planned=planned, over=True,
        )  # fmt: skip
    phase = view.phase
    if phase == Phase.GENERATE:
        agent_s = view.usage(now).agent_s or 0.0
        return RunProgress(phase, agent_s, limit_s=view.limits.max_seconds,
                           paused=view.agent_paused)  # fmt: skip
    since = view.phase_t0 if view.phase_t0 is not None else st.ts
    elapsed = max(0.0, now - since)
    if phase == Phase.EVALUATE:
        t0 = view.planned_t0 if view.planned_t0 is not None else since
        return RunProgress(phase, elapsed, done=done, planned=planned,
                           eta_s=eta(done, planned, t0, now))  # fmt: skip
    return RunProgress(phase, elapsed)


# --- how a display shows it ---------------------------------------------------------------


def bar(fraction: float | None, width: int) -> tuple[str, str]:
    """A bar `width` cells wide, as its done and its left parts; unknown: all left."""
    if width <= 0:
        return "", ""
    full = 0 if fraction is None else round(max(0.0, min(1.0, fraction)) * width)
    return BAR_FULL * full, BAR_EMPTY * (width - full)


def head_segments(p: RunProgress) -> list[Seg]:
    """What goes before the bar: the phase and its step, or the outcome."""
    word = p.phase or STARTING
    if p.over:
        return [(word, f"status:{word}")]
    return [(word, "warn-strong" if p.paused else "strong"), (phase_step(p.phase), "muted")]


def tail_segments(p: RunProgress) -> list[Seg]:
    """What goes after the bar: the figures of the phase."""
    segs: list[Seg] = []
    if p.over:
        if p.planned:
            segs += [(f"{p.done}/{p.planned}", "strong"), (" cases · ", "muted")]
        segs += [(clock(p.elapsed_s), ""), (" in all", "muted")]
        return segs
    if p.phase == Phase.GENERATE:
        if p.paused:
            segs += [("agent paused", "warn-strong"), (" · ", "muted")]
        segs.append((clock(p.elapsed_s), ""))
        if p.limit_s:
            segs += [(" / ", "muted"), (clock(p.limit_s), "")]
        segs.append((" agent time" + ("" if p.limit_s else " (no time limit)"), "muted"))
        return segs
    if p.phase == Phase.EVALUATE:
        if p.planned:
            segs += [(f"{p.done}/{p.planned}", "strong"), (" cases · ", "muted")]
        segs += [(clock(p.elapsed_s), ""), (" elapsed", "muted")]
        if p.done < p.planned:
            left = "—" if p.eta_s is None else clock(p.eta_s)
            segs += [(" · ETA ", "muted"), (left, "strong")]
        return segs
    return [(clock(p.elapsed_s), ""), (" elapsed", "muted")]
