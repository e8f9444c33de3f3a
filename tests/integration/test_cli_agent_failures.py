"""How a CLI agent can go wrong, each recorded with a clear reason and no container left:
an install step that fails, an agent that exits non-zero, one that never submits (stopped
at its time limit) and one that floods its output."""

from __future__ import annotations

import json
from pathlib import Path

import aiodocker
import pytest

from icae_tui.domain.events import AgentStopped, Progress
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run

pytestmark = pytest.mark.docker

ENTRY = """
[agents.cli]
kind = "command"
model = "m"
base_url = "http://127.0.0.1:9/v1"
parser = "plain"
"""


def _agents(tmp_path: Path, settings: str) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(ENTRY + settings)
    return path


async def _left(run_id: str) -> list:
    docker = aiodocker.Docker()
    try:
        return await docker.containers.list(
            all=True, filters=json.dumps({"label": [f"icae.run={run_id}"]})
        )
    finally:
        await docker.close()


async def _run(fixture_catalog, store, tmp_path: Path, settings: str):
    task = fixture_catalog.tasks["mini"]
    agents = _agents(tmp_path, settings)
    run = Run(RunConfig(task=task, agent="command:cli", agent_files=(agents,)), store)
    outcome = await run.execute()
    assert await _left(run.run_id) == []  # the agent's and any install's container
    return run, outcome, store.events(run.run_id)


async def test_a_failing_install_step_fails_the_run_naming_agent_and_step(
    fixture_catalog, store, tmp_path
):
    settings = 'run = "true"\ninstall = ["true", "echo no such package >&2; exit 3"]\n'
    run, outcome, events = await _run(fixture_catalog, store, tmp_path, settings)
    assert outcome.status == "failed"
    assert "agent command:cli: install step 2/2" in outcome.error
    assert "exited 3" in outcome.error and "no such package" in outcome.error
    assert any("install 2/2" in e.message for e in events if isinstance(e, Progress))


@pytest.mark.parametrize(
    ("settings", "reason", "detail"),
    [
        ('run = "echo working; exit 3"\n', "agent_error", "exited with code 3"),
        ('run = "sleep 600"\nlimits = { max_seconds = 3 }\n', "time_limit", "time"),
        ('run = "yes flood-flood-flood-flood"\n', "agent_error", "flooded its output"),
    ],
    ids=["exits non-zero", "never submits", "floods"],
)
async def test_an_agent_that_goes_wrong_stops_with_its_reason(
    fixture_catalog, store, tmp_path, settings, reason, detail
):
    run, outcome, events = await _run(fixture_catalog, store, tmp_path, settings)
    assert outcome.status == "completed", outcome.error  # what is there is judged
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert (stopped.reason, detail in stopped.detail) == (reason, True), stopped
    assert not outcome.score.build_ok  # it wrote nothing
