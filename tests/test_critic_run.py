"""The model critic in a run (the `processes` backend, no Docker): through the run's gateway
(role judge) to a local OpenAI-compatible server started here, recorded; a dead endpoint is
reported, not zeroed; a stored run's recorded critic (beside an SM judge's calls) answers a
replay with no endpoint; no critic configured, no call."""

from __future__ import annotations

import json
import os
import socket

import pytest

from icae_tui.domain.events import DiagnosticsMade, ModelCallMade, Progress
from icae_tui.domain.states import ModelRole, RunStatus
from icae_tui.domain.task import ReviewWeights
from icae_tui.evaluation.semantic import JUDGE_CACHE_FILE, SM
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from icae_tui.users.model_user import ModelConfig
from tests.openai_stub import serve

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")

ANSWER = {
    "semantic_similarity": {"score": 0.9, "rationale": "does what the reference does"},
    "api_similarity": {"score": 1.0, "rationale": "the same JSON operations"},
    "design_quality": {"score": 0.6, "rationale": "one flat function"},
}


@pytest.fixture(autouse=True)
def unsafe_allowed(monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")


def _answer(body) -> str:
    system = body["messages"][0]["content"]
    if "[critic-1]" in system:
        return "Review:\n" + json.dumps(ANSWER)
    return json.dumps({"same": True, "why": "the same count"})  # the SM judge


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _config(task, critic_url: str, agent: str = "scripted:good", **extra) -> RunConfig:
    critic = ModelConfig(model="critic-1", base_url=critic_url)
    return RunConfig(task=task, agent=agent, pace_s=0, engine="processes",
                     critic_model=critic, **extra)  # fmt: skip


def _diagnostics(store: RunStore, run_id: str):
    made = [e for e in store.events(run_id) if isinstance(e, DiagnosticsMade)]
    assert len(made) == 1
    return made[0].diagnostics


async def test_the_critic_goes_through_the_gateway_and_counts_in_the_review(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    async with serve(_answer) as stub:
        run = Run(
            _config(task, stub.base_url, review_weights=ReviewWeights(execution=0.5, review=0.5)),
            store,
        )
        outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    assert len(stub.requests) == 1
    asked = stub.requests[0]
    assert asked["temperature"] == 0 and asked["model"] == "critic-1"
    shown = asked["messages"][1]["content"]
    assert (
        "=== mini.py ===" in shown and "Golden API signature: python3 /workspace/mini.py" in shown
    )
    assert shown.count("=== mini.py ===") == 2  # the oracle's file and the delivery's
    made = _diagnostics(store, run.run_id)
    assert made.critic is not None and made.critic.measured and made.critic.model == "critic-1"
    assert made.critic.design_quality is not None and made.critic.design_quality.score == 0.6
    assert made.critic.api_similarity.rationale == "the same JSON operations"
    review = made.review
    assert review is not None and review.weights_from == "run"
    # mini's good delivery: 5/5 scored cases, its one signature item (the file) found
    assert review.components == {"signature": 1.0, "critic_api": 1.0, "critic_design": 0.6}
    assert review.review == pytest.approx(0.8667) and review.execution == 1.0
    assert review.combined == pytest.approx(0.5 * 1.0 + 0.5 * 0.8667, abs=1e-4)
    assert outcome.score is not None and outcome.score.review == review  # on the stored score
    calls = [e for e in store.events(run.run_id) if isinstance(e, ModelCallMade)]
    assert [c.role for c in calls] == [ModelRole.JUDGE]
    report = json.loads(outcome.report_path.read_text())
    assert report["diagnostics"]["critic"]["semantic_similarity"]["score"] == 0.9
    assert report["score"]["review"]["combined"] == review.combined


async def test_a_dead_critic_endpoint_is_reported_not_zeroed(fixture_catalog, store):
    run = Run(_config(fixture_catalog.tasks["mini"], _dead_url()), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    made = _diagnostics(store, run.run_id)
    assert made.critic is not None and not made.critic.measured and made.critic.error
    assert made.critic.design_quality is None  # no score, not a 0
    assert made.review is not None and made.review.components == {"signature": 1.0}
    assert made.review.combined == pytest.approx(0.8 * 1.0 + 0.2 * 1.0)
    said = [e.message for e in store.events(run.run_id) if isinstance(e, Progress)]
    assert any(m.startswith("critic: not measured") for m in said), said


async def test_a_recorded_critic_and_judge_replay_with_no_endpoint(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    async with serve(_answer) as stub:
        judge = ModelConfig(model="judge-1", base_url=stub.base_url)
        recorded = Run(
            _config(task, stub.base_url, agent="scripted:partial", judge_model=judge), store
        )
        first = await recorded.execute()
        assert first.status is RunStatus.COMPLETED, first.error
        assert len(stub.requests) == 3  # two SM pairs, then the critic
    (store.path.parent / JUDGE_CACHE_FILE).unlink()
    dead = _dead_url()
    replay = Run(_config(task, dead, agent="scripted:partial",
                         judge_model=ModelConfig(model="judge-1", base_url=dead),
                         model_replay=recorded.run_id), store)  # fmt: skip
    again = await replay.execute()
    assert again.status is RunStatus.COMPLETED, again.error
    assert again.score is not None and first.score is not None
    assert again.score.rates[SM] == first.score.rates[SM] == 0.8
    assert _diagnostics(store, replay.run_id).critic == _diagnostics(store, recorded.run_id).critic
    assert _diagnostics(store, replay.run_id).critic.measured


async def test_no_critic_configured_asks_nothing_and_diagnostics_still_come(fixture_catalog, store):
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"], agent="scripted:broken", pace_s=0,
                        engine="processes"), store)  # fmt: skip
    outcome = await run.execute()
    assert outcome.score is not None and not outcome.score.build_ok
    made = _diagnostics(store, run.run_id)
    assert made.critic is None and made.structure is not None
    assert made.structure.delivery.files == 1  # a broken build is still read
    assert made.review is not None and made.review.combined == 0.0  # a failed build zeroes it
    assert not [e for e in store.events(run.run_id) if isinstance(e, ModelCallMade)]
