"""Responders, the desk's modes, the budgeted channel and interaction metrics (no Docker)."""

from __future__ import annotations

import asyncio

import pytest

from icae_tui.domain.events import QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.metrics import interaction_metrics
from icae_tui.users.responders import Desk, SimulatedUser
from tests.polling import eventually


def _channel(desk: Desk, budget: int = 3):
    events: list = []

    async def emit(ev):
        events.append(ev)

    return ClarificationChannel(desk, budget, emit), events


async def test_simulated_answers_verbatim_and_budget_is_enforced(mini_data):
    channel, events = _channel(Desk(SimulatedUser(mini_data)), budget=2)
    a1 = await channel.ask("How should unknown operations be reported?")
    assert a1.text == "Print error=unknown_op and exit 2." and a1.remaining == 1
    a2 = await channel.ask("What is your favourite colour?")
    assert a2.text == mini_data.fallback_response and a2.remaining == 0
    a3 = await channel.ask("How is the word count formatted?")
    assert a3.over_budget and "budget of 2 is spent" in a3.text
    answers = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [a.record_ids for a in answers] == [["C001"], [], []]
    assert [a.responder for a in answers] == ["simulated", "simulated", "budget"]
    assert answers[1].fallback and answers[1].runner_up  # the audit keeps the runner-up
    assert [e.question_id for e in events if isinstance(e, QuestionAsked)] == [1, 2, 3]


async def test_same_question_same_answer(mini_data):
    desk = Desk(SimulatedUser(mini_data))
    first = await desk.auto.reply(1, "How is the word count formatted?")
    assert first == await desk.auto.reply(2, "How is the word count formatted?")


async def test_human_mode_waits_and_switch_back_releases(mini_data):
    desk = Desk(SimulatedUser(mini_data), "human")
    channel, events = _channel(desk)
    asking = asyncio.create_task(channel.ask("How is the word count formatted?"))
    await eventually(lambda: desk.waiting, what="Q1 to wait at the desk")
    assert desk.waiting == [1] and not asking.done()
    assert desk.answer(1, "Just the number.")
    answer = await asking
    assert answer.text == "Just the number."
    second = asyncio.create_task(channel.ask("How should unknown operations be reported?"))
    await eventually(lambda: desk.waiting == [2], what="Q2 to wait at the desk")
    desk.set_mode("simulated")  # the operator leaves: the simulated user takes the question
    assert (await second).text == "Print error=unknown_op and exit 2."
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [(a.responder, a.record_ids) for a in answered] == [
        ("human", []),
        ("simulated", ["C001"]),
    ]
    assert answered[0].latency_s > 0


async def test_assisted_draft_sent_as_is_or_edited(mini_data):
    desk = Desk(SimulatedUser(mini_data), "assisted")
    channel, events = _channel(desk)
    task = asyncio.create_task(channel.ask("How is the word count formatted?"))
    await eventually(lambda: desk.waiting == [1], what="Q1 to wait at the desk")
    [asked] = [e for e in events if isinstance(e, QuestionAsked)]
    assert (
        asked.mode == "assisted"
        and asked.draft == "Print words=<n>."
        and asked.draft_records == ["C002"]
    )
    assert desk.answer(1, asked.draft)
    await task
    task = asyncio.create_task(channel.ask("How is the word count formatted?"))
    await eventually(lambda: desk.waiting == [2], what="Q2 to wait at the desk")
    assert desk.answer(2, "Print words=<n>, e.g. words=3.")
    await task
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [(a.responder, a.edited, a.record_ids) for a in answered] == [
        ("assisted", False, ["C002"]),
        ("assisted", True, []),  # edited: what it reveals is the operator's, not a record's
    ]


async def test_answers_land_only_on_waiting_questions(mini_data):
    desk = Desk(SimulatedUser(mini_data), "human")
    assert not desk.answer(1, "a stale or invented id")  # nothing waits: refused

    async def emit(ev):  # a display that answers the instant the question is announced
        if isinstance(ev, QuestionAsked):
            assert desk.answer(ev.question_id, "instant")

    channel = ClarificationChannel(desk, 3, emit)
    assert (await channel.ask("anything")).text == "instant"


def test_bad_mode_is_refused(mini_data):
    with pytest.raises(ValueError, match="responder mode"):
        Desk(SimulatedUser(mini_data), "robot")


def test_metrics_from_what_was_revealed():
    started = RunStarted(task_id="t", task_title="t", agent="a", level="L1", responder="simulated",
                         budget=4, prd="", task_records=["C001", "C002", "C003"], generic_records=["ARCH001"])  # fmt: skip
    answers = [
        QuestionAnswered(question_id=1, text="x", record_ids=["C001", "ARCH001"], latency_s=0.2),
        QuestionAnswered(
            question_id=2, text="x", record_ids=["C001"], responder="human", latency_s=1.0
        ),
        QuestionAnswered(question_id=3, text="fb", fallback=True, latency_s=0.0),
        QuestionAnswered(question_id=4, text="x", record_ids=["CP001"], latency_s=0.0),
        QuestionAnswered(question_id=5, text="spent", over_budget=True, responder="budget"),
    ]
    edited_q = QuestionAsked(
        question_id=6, text="q", remaining_before=0, mode="assisted", draft_records=["C003"]
    )
    m = interaction_metrics([started, *answers, edited_q])
    assert m.turns == 4 and m.over_budget == 1 and m.budget_usage == 1.0
    assert m.coverage == round(1 / 3, 4) and m.covered == ["C001"]
    assert m.never_asked == ["C002"]  # C003 was asked about, though not revealed verbatim
    assert m.generic_revealed == ["ARCH001"] and m.pointers_revealed == ["CP001"]
    assert m.fallback_rate == 0.25
    assert m.by_responder == {"simulated": 3, "human": 1, "budget": 1}
