"""Where a display's events come from (icae_tui/display/sources.py): a live source passes the
operator's pauses on to its run and hands out the run's own record, keeping none of its own;
a stored one refuses pauses. No Textual."""

from __future__ import annotations

from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.events import AgentOutput
from icae_tui.runs.log import RunLog
from tests.ui.helpers import recorded_run, started


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
