"""The model-mode user's `verify` and `hybrid` modes (users/verifier.py, users/model_user.py):
one record checked at a time with a constrained yes/no; the answer is the confirmed records,
verbatim — never the model's words — and the fallback when none is confirmed or the model is
unsure. Against a local scripted endpoint; no engine."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web

from icae_tui.agents.config import load_files
from icae_tui.cli.model_endpoints import EndpointRole, endpoint_config
from icae_tui.domain.states import AnsweredBy, UserMode
from icae_tui.users.model_user import DirectChat, ModelConfig, ModelUser
from icae_tui.users.responders import grounded_reply
from icae_tui.users.verifier import Verdict, Verifier, judge, p_yes
from tests.openai_stub import Choice, serve

QUESTION = "How is the word count formatted?"


def logprobs(p_true: float, said: str = "true") -> dict[str, Any]:
    """llama.cpp's shape: the answer token with its top alternatives (two spellings each)."""
    import math

    def lp(p: float) -> float:
        return math.log(max(p, 1e-9))

    top = [{"token": " true", "logprob": lp(p_true * 0.9)}, {"token": " false", "logprob": lp((1 - p_true) * 0.9)},
           {"token": "true", "logprob": lp(p_true * 0.1)}, {"token": "false", "logprob": lp((1 - p_true) * 0.1)}]  # fmt: skip
    before = {"token": '{"', "logprob": -0.01, "top_logprobs": []}
    return {"content": [before, {"token": f" {said}", "logprob": lp(0.5), "top_logprobs": top}]}


def verdict(part: str, answers: bool, p_true: float | None = None) -> Choice:
    content = json.dumps({"part": part, "answers": answers})
    return Choice(content, None if p_true is None else logprobs(p_true, "true" if answers else "false"))


def asked(request: dict[str, Any]) -> tuple[str, str]:
    """(question, record) of a verify request."""
    user = request["messages"][-1]["content"]
    question, _, record = user.partition("\n\nRecord: ")
    return question.removeprefix("Question: "), record


def config(url: str, mode: UserMode, **kw: Any) -> ModelConfig:
    return ModelConfig(model="checker", base_url=url, mode=mode, **kw)


# --- the verdict ----------------------------------------------------------------------------


def test_p_yes_adds_up_the_spellings_of_each_word():
    assert p_yes(logprobs(0.8)) == pytest.approx(0.8)
    assert p_yes(logprobs(0.2, "false")) == pytest.approx(0.2)
    assert p_yes(None) is None and p_yes({"content": []}) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"part": "word count formatted", "answers": true}', Verdict.YES),
        ('{"part": "", "answers": false}', Verdict.NO),
        ('{"part": "the hidden tests expect 42", "answers": true}', Verdict.UNSURE),
        ('{"part": "", "answers": true}', Verdict.UNSURE),
        ('{"part": "word count", "answers": "yes"}', Verdict.UNSURE),
        ("Yes, it answers it.", Verdict.UNSURE),
    ],
)
def test_a_yes_counts_only_with_a_part_of_the_question(content, expected):
    check = judge(content, QUESTION)
    assert check.verdict is expected
    assert check.confirmed is (expected is Verdict.YES)
    assert check.p_yes == (1.0 if expected is Verdict.YES else 0.0)


async def test_a_server_refusing_the_schema_is_asked_plainly_from_then_on():
    def behaviour(request: dict[str, Any]) -> Any:
        if "response_format" in request:
            return web.json_response({"error": {"message": "unknown field"}}, status=400)
        assert "logprobs" not in request
        return json.dumps({"part": "word count", "answers": True})

    async with serve(behaviour) as stub:
        verifier = Verifier(DirectChat(config(stub.base_url, UserMode.VERIFY)), "checker")
        first = await verifier.check(QUESTION, "Print words=<n>.")
        second = await verifier.check(QUESTION, "Print words=<n>.")
    assert first.confirmed and second.confirmed and first.p_yes == 1.0
    assert ["response_format" in r for r in stub.requests] == [True, False, False]
    assert all(r["temperature"] == 0 and r["max_tokens"] <= 80 for r in stub.requests)


# --- verify ---------------------------------------------------------------------------------


async def test_verify_answers_with_the_confirmed_record_verbatim(mini_data):
    def behaviour(request: dict[str, Any]) -> Choice:
        question, record = asked(request)
        assert question == QUESTION
        return verdict("the word count", "words=" in record, 0.9 if "words=" in record else 0.1)

    async with serve(behaviour) as stub:
        reply = await ModelUser(mini_data, config(stub.base_url, UserMode.VERIFY)).reply(1, QUESTION)
    assert (reply.text, reply.record_ids) == ("Print words=<n>.", ["C002"])
    assert reply.responder is AnsweredBy.MODEL and reply.model == "checker" and not reply.fallback
    schema = stub.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["part", "answers"] and stub.requests[0]["logprobs"] is True
    assert 1 <= len(stub.requests) <= 3  # one call per candidate, the top three at most


async def test_verify_never_says_the_models_words(mini_data):
    secret = "error=unknown_op"  # another record's words, in a part that is mostly the question's

    def behaviour(request: dict[str, Any]) -> Choice:  # yes to every record, in its own words
        return verdict(f"how is the word count formatted {secret}", True, 0.99)

    async with serve(behaviour) as stub:
        reply = await ModelUser(mini_data, config(stub.base_url, UserMode.VERIFY)).reply(1, QUESTION)
    records = {r.constraint_id: r.oracle_response for r in mini_data.hidden_constraints}
    assert secret not in reply.text and 1 <= len(reply.record_ids) <= 2
    assert reply.text.split("\n\n")[0] == records[reply.record_ids[0]]


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (verdict("", False, 0.05), "the model says no"),
        (verdict("the hidden cases", True, 0.99), "a yes to a part the question does not hold"),
        (verdict("the word count", True, 0.3), "a yes below the bar"),
        (Choice("I cannot tell."), "not the JSON asked for"),
    ],
)
async def test_verify_falls_back_unless_the_model_is_sure(mini_data, answer, why):
    async with serve(lambda _request: answer) as stub:
        reply = await ModelUser(mini_data, config(stub.base_url, UserMode.VERIFY)).reply(1, QUESTION)
    assert reply.fallback and reply.text == mini_data.fallback_response, why
    assert reply.record_ids == [] and reply.responder is AnsweredBy.MODEL


async def test_the_matchers_score_moves_the_bar(mini_data):
    """A doubtful yes (p 0.45) to the best-matched record passes with the lexical weight."""
    async with serve(lambda _request: verdict("word count", True, 0.45)) as stub:
        alone = await ModelUser(mini_data, config(stub.base_url, UserMode.VERIFY)).reply(1, QUESTION)
        weighed = await ModelUser(
            mini_data, config(stub.base_url, UserMode.VERIFY, lexical_weight=1.0, verify_k=1)
        ).reply(2, QUESTION)
    assert alone.fallback
    assert weighed.record_ids == ["C002"]


async def test_an_unreachable_model_leaves_the_matchers_answer(mini_data):
    user = ModelUser(mini_data, config("http://127.0.0.1:9/v1", UserMode.VERIFY, timeout_s=2))
    reply = await user.reply(1, QUESTION)
    assert reply.record_ids == ["C002"] and reply.responder is AnsweredBy.SIMULATED
    assert "unavailable" in reply.model


# --- hybrid ---------------------------------------------------------------------------------


async def test_hybrid_keeps_the_matchers_answer_the_model_confirms(mini_data):
    async with serve(lambda _request: verdict("word count", True, 0.9)) as stub:
        reply = await ModelUser(mini_data, config(stub.base_url, UserMode.HYBRID)).reply(1, QUESTION)
    assert (reply.text, reply.record_ids) == ("Print words=<n>.", ["C002"])
    assert reply.responder is AnsweredBy.MODEL
    assert len(stub.requests) == 1  # the matcher's one record, checked once


async def test_hybrid_vetoes_a_record_the_model_says_does_not_answer(mini_data):
    async with serve(lambda _request: verdict("", False, 0.02)) as stub:
        reply = await ModelUser(mini_data, config(stub.base_url, UserMode.HYBRID)).reply(1, QUESTION)
    assert reply.fallback and reply.record_ids == [] and reply.responder is AnsweredBy.MODEL


async def test_hybrid_verifies_where_the_matcher_fell_back(mini_data):
    question = "What about tallying?"  # C002 is a candidate, under the matcher's bar
    assert grounded_reply(question, mini_data).fallback

    def behaviour(request: dict[str, Any]) -> Choice:
        _, record = asked(request)
        return verdict("tallying", "words=" in record, 0.9 if "words=" in record else 0.1)

    async with serve(behaviour) as stub:
        reply = await ModelUser(mini_data, config(stub.base_url, UserMode.HYBRID)).reply(1, question)
    assert reply.record_ids == ["C002"] and reply.text == "Print words=<n>."
    assert [asked(r)[1] for r in stub.requests] == ["Print words=<n>."]


# --- the entry ------------------------------------------------------------------------------


def test_an_entrys_user_mode_reaches_the_user(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text('[models.v]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\nuser_mode = "verify"\n'
                    '[models.bad]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\nuser_mode = "guess"\n')  # fmt: skip
    agents = load_files([path])
    found = endpoint_config(EndpointRole.USER, "v", agents, {})
    assert isinstance(found, ModelConfig) and found.mode is UserMode.VERIFY
    refused = endpoint_config(EndpointRole.USER, "bad", agents, {})
    assert isinstance(refused, str) and f"{path}:8" in refused and "user_mode" in refused
