"""What a batch came to so far, as both its watchers show it — the headless printer
(watch.py) and the console's batch screen: items done, failed, gave up, running, retried,
the throughput and the time left. Neither Rich nor Textual: each watcher draws it its own way."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping

from icae_tui.batch.plan import ItemProgress, ItemState


class BatchCounts:
    """Items per state, and this session's finished runs (for its pace)."""

    def __init__(
        self, progress: Mapping[str, ItemProgress], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.total = len(progress)
        self.states: Counter[ItemState] = Counter(p.state for p in progress.values())
        self.finished_at: list[float] = []
        self.retried = 0
        self.clock = clock
        self.started_at = clock()

    def update(self, progress: Mapping[str, ItemProgress]) -> None:
        """The items' states again (the runner's progress, after a run started or ended)."""
        self.states = Counter(p.state for p in progress.values())

    def started(self, attempt: int) -> None:
        if attempt > 1:
            self.retried += 1

    def finished(self) -> None:
        self.finished_at.append(self.clock())

    @property
    def done(self) -> int:
        return sum(self.states[s] for s in (ItemState.DONE, ItemState.FAILED, ItemState.GAVE_UP))

    def per_minute(self) -> float | None:
        """Runs ended per minute since this session began (None before the first)."""
        if not self.finished_at:
            return None
        return 60 * len(self.finished_at) / max(1e-9, self.finished_at[-1] - self.started_at)

    def eta_s(self) -> float | None:
        """Time left at this session's pace."""
        rate = self.per_minute()
        return None if rate is None else 60 * (self.total - self.done) / rate

    def line(self, *, throughput: bool = False) -> str:
        parts = [f"{self.done}/{self.total} done"]
        if n := self.states[ItemState.FAILED]:
            parts.append(f"{n} failed")
        if n := self.states[ItemState.GAVE_UP]:
            parts.append(f"{n} gave up")
        parts.append(f"{self.states[ItemState.RUNNING]} running")
        if self.retried:
            parts.append(f"{self.retried} retried")
        if throughput and (rate := self.per_minute()) is not None:
            parts.append(f"{rate:.1f} runs/min")
        if (eta := self.eta_s()) is not None and self.done < self.total:
            parts.append(f"~{eta:.0f} s left")
        return " · ".join(parts)
