"""A run's event log: numbers each event, stores it, then shows it to every display.

Every event is stored before any display sees it, so nothing is lost on a crash. Past the
run's bound (`icae_tui.store.bounds`) low-value events are only counted: one `EventsDropped` says
so at the first, one more gives the totals just before `RunFinished`. Displays see exactly
what is stored. When the run is over, the log writes the report from what it holds.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Literal, Protocol

from icae_tui.domain.events import Event, PhaseChanged, RunFinished
from icae_tui.domain.states import Phase
from icae_tui.results.report import write_report
from icae_tui.results.trajectory import build_trajectory
from icae_tui.store.bounds import RunBound
from icae_tui.store.database import RunStore

log = logging.getLogger(__name__)


class Display(Protocol):
    """Anything that shows a run: called once per stored event, in order, on the run's loop.
    It must return quickly and never raise into the run (a failure is logged, not shown)."""

    def __call__(self, event: Event, /) -> None: ...


class RunLog:
    def __init__(self, run_id: str, store: RunStore) -> None:
        self.run_id = run_id
        self.store = store
        self.phase: Phase | Literal["start"] = "start"  # the last announced: failures say where
        self._displays: list[Display] = []
        self._seq = 0
        self._events: list[Event] = []
        self._bound = RunBound()

    @property
    def events(self) -> list[Event]:
        return list(self._events)

    def subscribe(self, display: Display) -> None:
        self._displays.append(display)

    async def emit(self, event: Event) -> None:
        if isinstance(event, PhaseChanged):
            self.phase = event.phase
        if isinstance(event, RunFinished) and self._bound.dropped:
            self._publish(self._bound.summary(final=True))
        if not self._publish(event) and self._bound.dropped == 1:
            self._publish(self._bound.summary())

    def _publish(self, event: Event) -> bool:
        """False when the bound drops the event (it then takes no sequence number)."""
        event.run_id, event.seq, event.ts = self.run_id, self._seq + 1, time.time()
        payload = event.model_dump_json()
        if not self._bound.admit(event, len(payload.encode())):
            return False
        self._seq += 1
        self.store.append(event, payload)
        self._events.append(event)
        self._show(event)
        return True

    def mirror(self, event: Event, payload: str) -> None:
        """An event another process's log numbered and bounded (a cluster node's run, whose
        `payload` is its JSON): stored and shown as it is."""
        if isinstance(event, PhaseChanged):
            self.phase = event.phase
        self._seq = event.seq
        self.store.append(event, payload)
        self._events.append(event)
        self._show(event)

    @property
    def last_seq(self) -> int:
        return self._seq

    def _show(self, event: Event) -> None:
        for display in self._displays:
            try:
                display(event)
            except Exception:  # a broken display must not break the run, nor scribble on it
                log.exception("display %r failed on %s", display, type(event).__name__)

    def write_report(self) -> Path:
        """report.json, and the ATIF trajectory beside it (trajectory.json)."""
        path = self.report_path
        write_report(self._events, path)
        trajectory = build_trajectory(self._events)
        path.with_name("trajectory.json").write_text(
            json.dumps(trajectory, indent=1, ensure_ascii=False), encoding="utf-8"
        )
        return path

    @property
    def report_path(self) -> Path:
        return self.store.artifacts_dir / self.run_id / "report.json"
