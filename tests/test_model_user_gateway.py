"""The model-mode simulated user goes through the run's gateway like the agent (role `user`):
its calls are recorded beside the agent's, shown as the user's, not counted against the
agent's limits, and a recorded run replays them with no endpoint at all. Run on the
`processes` backend (no engine; root for its mounts)."""

from __future__ import annotations

import json
import os

import pytest

from icae_tui.domain.events import ModelCallMade, QuestionAnswered
from icae_tui.domain.states import ModelRole, RunStatus
from icae_tui.gateway import load_calls
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.store.database import MODEL_CALLS_FILE
from icae_tui.users.model_user import ModelConfig
from tests.openai_stub import serve

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")


def _answers(request) -> str:
    """The user model chooses the first record it is offered, restated verbatim."""
    user = request["messages"][-1]["content"]
    first = user.split("[", 1)[1].split("]", 1)[0] if "[" in user else ""
    return json.dumps({"records": [first] if first else [], "answer": ""})


def _run(task, store, user_model: ModelConfig, **kw) -> Run:
    config = RunConfig(task=task, agent="scripted:good", pace_s=0, engine="processes",
                       user_model=user_model, **kw)  # fmt: skip
    return Run(config, store)


async def test_the_model_user_is_recorded_and_replays_without_an_endpoint(
    fixture_catalog, store, monkeypatch
):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    task = fixture_catalog.tasks["mini"]
    async with serve(_answers) as stub:
        run = _run(task, store, ModelConfig(model="user-model", base_url=stub.base_url))
        outcome = await run.execute()
        asked = len(stub.requests)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    events = store.events(run.run_id)
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    assert asked == 2 and [c.role for c in calls] == [ModelRole.USER, ModelRole.USER]
    answers = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [a.responder for a in answers] == ["model", "model"]
    recorded = load_calls((run.log.report_path.parent / MODEL_CALLS_FILE).read_text())
    assert [c.role for c in recorded] == [ModelRole.USER, ModelRole.USER]

    # the endpoint is gone: the recorded calls answer the same questions the same way
    again = _run(task, store, ModelConfig(model="user-model", base_url="http://127.0.0.1:9/v1"),
                 model_replay=run.run_id)  # fmt: skip
    replayed = await again.execute()
    assert replayed.status == RunStatus.COMPLETED, replayed.error
    texts = [e.text for e in store.events(again.run_id) if isinstance(e, QuestionAnswered)]
    assert texts == [a.text for a in answers]
    assert replayed.score == outcome.score


async def test_the_verifying_user_goes_through_the_gateway_and_replays(
    fixture_catalog, store, monkeypatch
):
    """`verify`: the constrained request (schema, log-probabilities) passes the gateway both
    ways; the recorded calls replay it with no endpoint."""
    from icae_tui.domain.states import UserMode
    from tests.openai_stub import Choice
    from tests.test_user_verifier import logprobs

    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    task = fixture_catalog.tasks["mini"]

    def behaviour(request) -> Choice:
        assert request["response_format"]["type"] == "json_schema" and request["logprobs"]
        question = request["messages"][-1]["content"].split("\n\n")[0].removeprefix("Question: ")
        part = " ".join(question.split()[:4])
        return Choice(json.dumps({"part": part, "answers": True}), logprobs(0.9))

    user = ModelConfig(model="checker", base_url="", mode=UserMode.VERIFY)
    async with serve(behaviour) as stub:
        run = _run(task, store, ModelConfig(**{**user.__dict__, "base_url": stub.base_url}))
        outcome = await run.execute()
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    answers = [e for e in store.events(run.run_id) if isinstance(e, QuestionAnswered)]
    assert answers and all(a.responder == "model" and not a.fallback for a in answers)
    recorded = load_calls((run.log.report_path.parent / MODEL_CALLS_FILE).read_text())
    assert recorded and all(c.role is ModelRole.USER for c in recorded)
    assert all("json_schema" in (c.request_body or "") for c in recorded)
    assert all("top_logprobs" in (c.response_body or "") for c in recorded)
    again = _run(task, store, ModelConfig(**{**user.__dict__, "base_url": "http://127.0.0.1:9/v1"}),
                 model_replay=run.run_id)  # fmt: skip
    replayed = await again.execute()
    assert replayed.status == RunStatus.COMPLETED, replayed.error
    texts = [e.text for e in store.events(again.run_id) if isinstance(e, QuestionAnswered)]
    assert texts == [a.text for a in answers]
