"""A stored run replayed at its own pace: gaps from the timestamps (divided by the speed,
long ones shortened), pause, step, seek forward and back, speed steps. Waits go through an
injected sleep that records them: no clock in these tests."""

from __future__ import annotations

import asyncio

from icae_tui.display.replay import PacedReplay
from icae_tui.display.view import RunView
from icae_tui.domain.events import AgentSaid, Event, Progress
from tests.polling import Sleeps


def _events() -> list[Event]:
    stamps = [100.0, 100.5, 101.5, 111.5, 112.0]  # a 10 s idle gap in the middle
    return [AgentSaid(run_id="r1", seq=i + 1, ts=t, text=f"line {i}") for i, t in enumerate(stamps)]


async def test_gaps_follow_the_timestamps_at_the_speed():
    sleep = Sleeps(digits=3)
    replay = PacedReplay(_events(), speed=2.0, max_gap_s=2.0, sleep=sleep)
    got: list[Event] = []
    replay.connect(got.append)
    await replay.job()
    assert [e.text for e in got] == [f"line {i}" for i in range(5)]
    assert sleep.waits == [0.25, 0.5, 1.0, 0.25]  # the 10 s gap shortened to 2 s, then / 2
    assert replay.finished and replay.elapsed_s == replay.duration_s == 12.0


async def test_pause_step_and_seek_back_rebuild_the_view():
    replay = PacedReplay(_events(), sleep=Sleeps(digits=3))
    view = RunView()

    def reset() -> None:
        nonlocal view
        view = RunView()

    replay.connect(lambda ev: view.apply(ev), reset)
    replay.pause()
    job = asyncio.create_task(replay.job())
    await asyncio.sleep(0)
    assert replay.position == 0  # paused: nothing delivered
    assert replay.step() and replay.step()
    assert replay.position == 2 and replay.paused
    replay.seek(4)
    assert view.trace_total == 4
    replay.seek(1)  # back: a fresh view with the first event only
    assert replay.position == 1 and view.trace_total == 1
    replay.seek_time(1.0)
    assert replay.finished
    await asyncio.wait_for(job, 1)


def test_speed_steps():
    replay = PacedReplay([Progress(message="x")])
    assert replay.faster() == 2.0 and replay.faster() == 4.0
    assert replay.slower() == 2.0
    while replay.slower() > 0.5:
        pass
    assert replay.slower() == 0.5  # the slowest stays
