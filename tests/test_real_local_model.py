"""Opt-in (`ICAE_LOCAL_MODEL_TESTS=1`, after `icae models install`): the real local model,
not a stand-in — the model-mode user verifying records against it, and the built-in agent
(`model:local`, with the hybrid user) driving a short run of the fixture task `mini` on the
Docker engine (the agent reaches the gateway through its box's model proxy). Slow on a CPU
(minutes); not in CI's required path. Opted in and the model missing: a failure, not a skip."""

from __future__ import annotations

import os
import textwrap

import pytest

from icae_tui.domain.events import ModelCallMade, QuestionAnswered
from icae_tui.domain.states import AnsweredBy, ModelRole, RunStatus, UserMode
from icae_tui.domain.task import Level
from icae_tui.local_models.catalog import DEFAULT_MODEL, MODELS
from icae_tui.local_models.server import SERVERS, not_ready
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.users.model_user import DirectChat, ModelConfig, ModelUser
from icae_tui.users.verifier import Verifier
from tests.conftest import MACHINE_MODELS_ENV

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(os.environ.get("ICAE_LOCAL_MODEL_TESTS") != "1",
                       reason="opt-in: ICAE_LOCAL_MODEL_TESTS=1, after `icae models install`"),  # fmt: skip
]


@pytest.fixture(autouse=True)
def installed(monkeypatch):
    monkeypatch.setenv("ICAE_MODELS_DIR", os.environ[MACHINE_MODELS_ENV])  # the suite hides them
    why = not_ready(MODELS[DEFAULT_MODEL])
    assert not why, why  # opted in: the model must be there


async def test_the_real_model_confirms_a_records_own_question_and_the_user_stays_verbatim(mini_data):
    question = "How is the word count formatted?"  # C002's own trigger phrase
    async with SERVERS.lease(DEFAULT_MODEL, owner="tests") as served:
        config = ModelConfig(model=served.model, base_url=served.base_url,
                             api_key=served.api_key, timeout_s=300, mode=UserMode.VERIFY)  # fmt: skip
        check = await Verifier(DirectChat(config), served.model).check(question, "Print words=<n>.")
        user = ModelUser(mini_data, config)
        replies = [await user.reply(n, q) for n, q in enumerate(
            [question, "What colour should the logo be?"], start=1)]  # fmt: skip
    assert check.confirmed and 0.0 < check.p_yes < 1.0  # the log-probabilities came back
    records = {r.constraint_id: r.oracle_response for r in mini_data.hidden_constraints}
    for reply in replies:
        assert reply.responder is AnsweredBy.MODEL, reply.model
        expected = "\n\n".join(records[i] for i in reply.record_ids)
        assert reply.text == (expected if reply.record_ids else mini_data.fallback_response)


async def test_the_built_in_agent_drives_a_run_on_the_real_model(fixture_catalog, store, tmp_path,
                                                                monkeypatch):  # fmt: skip
    agents = tmp_path / "agents.toml"
    agents.write_text(textwrap.dedent("""
        [agents.local-short]
        extends = "local"
        limits = { max_steps = 4, max_model_calls = 6, max_seconds = 1200 }
    """))
    user = ModelConfig(model=DEFAULT_MODEL, base_url="", local_model=DEFAULT_MODEL,
                       timeout_s=300, mode=UserMode.HYBRID)  # fmt: skip
    config = RunConfig(task=fixture_catalog.tasks["mini"], agent="model:local-short",
                       level=Level.L1, user_model=user, agent_files=(agents,), pace_s=0,
                       engine="docker")  # fmt: skip
    try:
        outcome = await Run(config, store).execute()
    finally:
        await SERVERS.close()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    events = store.events(outcome.run_id)
    calls = [e for e in events if isinstance(e, ModelCallMade)]
    agent = [c for c in calls if c.role is ModelRole.AGENT]
    assert agent and all(c.call_kind == "ok" for c in agent) and sum(c.tokens_out for c in agent)
    for answer in (e for e in events if isinstance(e, QuestionAnswered)):
        assert answer.responder in (AnsweredBy.MODEL, AnsweredBy.SIMULATED)
    assert outcome.score is not None
