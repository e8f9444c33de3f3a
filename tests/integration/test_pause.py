"""The operator pauses the agent and lets it go on: a host-driven agent stops before its next
step (the step under way finishes), a CLI agent's container is frozen; paused time is not
counted against the time limit; the run then completes as it would have."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiodocker
import pytest

from icae_tui.domain.events import (
    AgentCommand,
    AgentPaused,
    AgentResumed,
    AgentSaid,
    AgentStopped,
    AgentWrote,
    Event,
    QuestionAsked,
)
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run

pytestmark = pytest.mark.docker

STEPS = (AgentCommand, AgentSaid, AgentWrote, QuestionAsked)


async def test_a_paused_scripted_agent_takes_no_step_until_resumed(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent="scripted:good", pace_s=0), store)
    seen: list[Event] = []
    paused = asyncio.Event()

    def display(ev: Event) -> None:
        seen.append(ev)
        if isinstance(ev, QuestionAsked) and not paused.is_set():
            paused.set()  # the first question: pause right after it

    run.subscribe(display)
    running = asyncio.create_task(run.execute())
    await paused.wait()
    assert await run.pause()
    assert not await run.pause()  # already paused
    await run.gate.waiting.wait()  # the agent is at its next step, waiting
    before = len(seen)
    assert await run.resume()
    outcome = await running
    assert outcome.status == "completed" and outcome.score.overall == 1.0
    kinds = [type(e) for e in seen]
    p, r = kinds.index(AgentPaused), kinds.index(AgentResumed)
    # the step under way when it was paused finished; then nothing until the resume
    assert p < before and r == before
    assert len([k for k in kinds[p:r] if k in STEPS]) <= 1
    assert any(k in STEPS for k in kinds[r:])  # and it went on
    assert not await run.resume()  # over: nothing to resume


CLI = """
[agents.cli]
kind = "command"
model = "m"
base_url = "http://127.0.0.1:9/v1"
parser = "plain"
run = "for i in 1 2 3; do echo tick $i; sleep 1; done"
limits = { max_seconds = 20 }
"""


async def _state(container_id: str) -> dict:
    docker = aiodocker.Docker()
    try:
        return (await (await docker.containers.get(container_id)).show())["State"]
    finally:
        await docker.close()


async def test_a_paused_cli_agent_is_frozen_and_goes_on(fixture_catalog, store, tmp_path: Path):
    agents = tmp_path / "agents.toml"
    agents.write_text(CLI)
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent="command:cli", agent_files=(agents,)), store)
    ticked = asyncio.Event()
    run.subscribe(lambda ev: ticked.set() if "tick 1" in getattr(ev, "text", "") else None)
    running = asyncio.create_task(run.execute())
    await ticked.wait()
    assert await run.pause()
    assert run._building is not None  # noqa: SLF001 - the container under test
    box = run._building[1]  # noqa: SLF001
    assert (await _state(box.id))["Paused"] is True
    assert await run.resume()
    assert (await _state(box.id))["Paused"] is False
    outcome = await running
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted"  # exit 0 after its three ticks
    output = "".join(e.text for e in events if e.kind == "agent_output")
    assert all(f"tick {i}" in output for i in (1, 2, 3))
    assert outcome.status == "completed"
    assert json.dumps([e.kind for e in events]).count("agent_paused") == 1


async def test_cancelling_a_paused_cli_agent_leaves_no_container(
    fixture_catalog, store, tmp_path: Path
):
    agents = tmp_path / "agents.toml"
    agents.write_text(CLI)
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent="command:cli", agent_files=(agents,)), store)
    ticked = asyncio.Event()
    run.subscribe(lambda ev: ticked.set() if "tick 1" in getattr(ev, "text", "") else None)
    running = asyncio.create_task(run.execute())
    await ticked.wait()
    assert await run.pause()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    docker = aiodocker.Docker()
    try:
        left = await docker.containers.list(
            all=True, filters=json.dumps({"label": [f"icae.run={run.run_id}"]})
        )
    finally:
        await docker.close()
    assert left == []
    assert store.run(run.run_id).status == "cancelled"
