"""What an agent does to its own box is the agent's doing, on the real engine: a step that
ends every process in its box (`kill -9 -1`, the keepalive with them) or that fills its
disk stops the agent with that reason; what it wrote is frozen and judged — a score, never
a failed run — and nothing of the run is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import aiodocker
import pytest

from icae_tui.domain.events import AgentCommandDone, AgentStopped, BuildChecked
from icae_tui.domain.states import RunStatus, StopReason
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from tests.task_copies import add_solution, copy_mini, edit_toml, good_step, load_mini

pytestmark = pytest.mark.docker

KILL_ALL = "kill -9 -1"
# Ends the box while the next step runs: a process that outlives the step that started it.
KILL_LATER = "setsid sh -c 'sleep 0.5; kill -9 -1' >/dev/null 2>&1 < /dev/null &"


def _mini(tmp_path: Path, steps: list[dict], *, disk_mb: int | None = None):
    """The mini fixture task with one solution `steps`: `write` stands for the good
    solution's write of mini.py."""
    folder = copy_mini(tmp_path)
    write = good_step(folder)
    add_solution(folder, "hostile", [write if step == "write" else step for step in steps])
    if disk_mb is not None:
        edit_toml(folder, "[delivery]\n", f"[delivery]\ndisk_mb = {disk_mb}\n")
    return load_mini(folder)


async def _left(run_id: str) -> list:
    docker = aiodocker.Docker()
    try:
        filters = json.dumps({"label": [f"icae.run={run_id}"]})
        return await docker.containers.list(all=True, filters=filters)
    finally:
        await docker.close()


async def _run(task, store, agent: str = "scripted:hostile", **kw):
    run = Run(RunConfig(task=task, agent=agent, pace_s=0, **kw), store)
    outcome = await run.execute()
    assert await _left(run.run_id) == []  # the agent's box, the build's, the cases'
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    return outcome, events, stopped


@pytest.mark.parametrize(
    ("steps", "ran"),
    [
        (["write", {"run": KILL_ALL}, {"run": "echo never"}, {"submit": "x"}], [KILL_ALL]),
        (
            ["write", {"run": KILL_LATER}, {"run": "sleep 30"}, {"run": "echo never"}],
            [KILL_LATER, "sleep 30"],
        ),
    ],
    ids=["in a step", "between steps"],
)
async def test_an_agent_that_kills_its_own_box_is_scored_on_what_it_wrote(
    tmp_path, store, steps, ran
):
    outcome, events, stopped = await _run(_mini(tmp_path, steps), store)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert stopped.reason == StopReason.BOX_DIED, stopped
    assert "its box died" in stopped.detail
    assert [e.command for e in events if isinstance(e, AgentCommandDone)] == ran
    # mini.py was written before the box died: frozen and judged like any delivery
    assert outcome.score is not None and outcome.score.overall == 1.0


async def test_an_agent_that_kills_its_box_before_writing_scores_zero(tmp_path, store):
    steps = [{"run": KILL_ALL}, "write", {"submit": "x"}]
    outcome, events, stopped = await _run(_mini(tmp_path, steps), store)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert stopped.reason == StopReason.BOX_DIED
    [build] = [e for e in events if isinstance(e, BuildChecked)]
    assert not build.ok  # no mini.py: the build gate fails, every case a build error
    assert outcome.score is not None and outcome.score.overall == 0.0


async def test_a_cli_agent_that_kills_its_own_box_stops_with_that_reason(
    fixture_catalog, store, tmp_path
):
    agents = tmp_path / "agents.toml"
    agents.write_text(
        '[agents.cli]\nkind = "command"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'parser = "plain"\nrun = "echo working; kill -9 -1"\n'
    )
    outcome, _events, stopped = await _run(
        fixture_catalog.tasks["mini"], store, "command:cli", agent_files=(agents,)
    )
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert stopped.reason == StopReason.BOX_DIED, stopped


async def test_an_agent_that_fills_its_disk_stops_and_is_judged(tmp_path, store):
    """A 64 MiB disk: files of 8 MiB (its file-size limit) until the kernel refuses."""
    fill = "for i in $(seq 40); do head -c 8M /dev/zero > /root/f$i || break; done; true"
    steps = ["write", {"run": fill}, {"run": "echo never"}, {"submit": "x"}]
    outcome, events, stopped = await _run(_mini(tmp_path, steps, disk_mb=64), store)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert stopped.reason == StopReason.DISK_LIMIT, stopped
    assert "disk is full" in stopped.detail and "limit 64 MiB" in stopped.detail
    assert [e.command for e in events if isinstance(e, AgentCommandDone)] == [fill]
    assert outcome.score is not None and outcome.score.overall == 1.0
