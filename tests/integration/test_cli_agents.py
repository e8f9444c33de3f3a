"""Real CLI agents, installed from the package registries into agent images, build the mini
task inside their containers (network `none`) against the test's local model server — only
through the run's gateway — ask the user with `icae-ask`, and the run is scored with their
steps parsed from their native output.

The first run on a machine installs each agent into an image (minutes: a Python venv with
litellm, or a 400 MB native binary); later runs reuse it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentStopped,
    ModelCallMade,
    QuestionAnswered,
    QuestionAsked,
)
from icae_tui.run import Run, RunConfig
from tests.integration.test_model_agent import KEY, KEY_VAR, _good_code, _tool, upstream

pytestmark = pytest.mark.docker

QUESTION = "How should unknown operations be reported?"


def _agents_file(tmp_path: Path, extends: str, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(
        f'[agents.under-test]\nextends = "{extends}"\nmodel = "stub-model"\n'
        f'base_url = "{base_url}"\napi_key_env = "{KEY_VAR}"\n{extra}'
    )
    return path


async def _run(fixture_catalog, store, agents: Path, **extra: Any):
    task = fixture_catalog.tasks["mini"]
    config = RunConfig(task=task, agent="command:under-test", agent_files=(agents,), **extra)
    run = Run(config, store)
    return run, await run.execute()


def _mini_script() -> list[Any]:
    write = "cat > mini.py <<'EOF'\n" + _good_code() + "EOF"
    bash = lambda command, i: _tool("bash", json.dumps({"command": command}), f"c{i}")  # noqa: E731
    return [
        bash(f'icae-ask "{QUESTION}"', 1),
        bash(write, 2),
        bash("echo '{\"op\": \"upper\", \"text\": \"x\"}' | python3 mini.py", 3),
        bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo built mini.py", 4),
    ]


async def test_mini_swe_agent_builds_mini_inside_its_container(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    async with upstream(_mini_script()) as up:
        agents = _agents_file(tmp_path, "mini-swe-agent", up.base_url)
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted", stopped
    assert outcome.score.overall == 1.0
    # Its steps, parsed from its trajectory: the question, the write, the check.
    commands = [e.command for e in events if isinstance(e, AgentCommand)]
    assert commands[0] == f'icae-ask "{QUESTION}"' and "cat > mini.py" in commands[1]
    done = [e.exit_code for e in events if isinstance(e, AgentCommandDone)]
    assert done[:3] == [0, 0, 0]
    [asked] = [e for e in events if isinstance(e, QuestionAsked)]
    assert asked.text == QUESTION and asked.via == "icae-ask"
    [answer] = [e for e in events if isinstance(e, QuestionAnswered)]
    assert answer.record_ids == ["C001"]
    # Every model call went through the gateway, with the real key only upstream.
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert len(calls) == 4 and {c.call_kind for c in calls} == {"ok"}
    assert {h["Authorization"] for h, _ in up.requests} == {f"Bearer {KEY}"}
    # The native trajectory is kept beside the run's records.
    kept = store.artifacts_dir / run.run_id / "agent_logs" / "traj.json"
    assert json.loads(kept.read_text())["info"]["exit_status"] == "Submitted"
