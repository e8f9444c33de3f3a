"""The agent's only way to ask: counts questions against the budget, emits the turns.

Whatever path a question takes (a host-driven agent's `ask`, `icae-ask` in the container,
the ICAE-EVAL wire shape), it lands here: one question at a time, in order, each answered by
the desk's current mode, each turn stored with who answered, from which records, how fast.

Past the budget every question gets the same budget-spent reply. The first is stored as a
turn like the others; the next ones are only counted, into a cumulative `QuestionsRefused`
emitted when their number reaches 1, 10, 100, … and when the channel closes: an agent that
asks in a loop costs O(log n) events, not two per question.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from icae_tui.domain.events import Event, QuestionAnswered, QuestionAsked, QuestionsRefused
from icae_tui.domain.states import AnsweredBy
from icae_tui.users.responders import Desk

MAX_QUESTION_CHARS = 2000
REFUSED_SAMPLE_CHARS = 200  # of the first refused question, kept in the summaries

Emit = Callable[[Event], Awaitable[None]]


@dataclass(frozen=True)
class Answer:
    question_id: int
    text: str
    remaining: int
    over_budget: bool = False


def budget_spent_text(budget: int) -> str:
    return (
        f"The question budget of {budget} is spent; no more questions can be answered. "
        "Please proceed with your best judgement."
    )


def _power_of_ten(n: int) -> bool:
    while n >= 10 and n % 10 == 0:
        n //= 10
    return n == 1


class ClarificationChannel:
    """Close it when the agent phase ends (`close()`, or `async with`): the refused questions
    counted since the last summary are emitted then."""

    def __init__(self, desk: Desk, budget: int, emit: Emit) -> None:
        self.desk = desk
        self.budget = budget
        self.used = 0
        self.asked = 0
        self.over_budget = 0  # questions past the budget, the stored first one included
        self._refused: QuestionsRefused | None = None  # those after the first, counted
        self._reported = 0  # refused questions in the last summary emitted
        self._emit = emit
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> ClarificationChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Emit the refused questions not yet reported; safe to call more than once."""
        async with self._lock:
            await self._report_refused()

    @property
    def remaining(self) -> int:
        return max(0, self.budget - self.used)

    async def ask(self, question: str, *, via: str = "agent") -> Answer:
        question = question.strip()[:MAX_QUESTION_CHARS]
        async with self._lock:
            self.asked += 1
            qid = self.asked
            started = time.monotonic()
            if self.remaining == 0:
                self.over_budget += 1
                text = budget_spent_text(self.budget)
                if self.over_budget > 1:
                    await self._refuse(qid, question)
                    return Answer(qid, text, 0, over_budget=True)
                await self._emit(QuestionAsked(question_id=qid, text=question, remaining_before=0,
                                               mode=AnsweredBy.BUDGET, via=via))  # fmt: skip
                await self._emit(QuestionAnswered(question_id=qid, text=text, over_budget=True,
                                                  responder=AnsweredBy.BUDGET, remaining=0))  # fmt: skip
                return Answer(qid, text, 0, over_budget=True)
            self.used += 1
            draft = await self.desk.auto.reply(qid, question)
            self.desk.park(qid)
            await self._emit(
                QuestionAsked(
                    question_id=qid,
                    text=question,
                    remaining_before=self.remaining + 1,
                    mode=AnsweredBy(self.desk.mode),
                    via=via,
                    draft=draft.text,
                    draft_records=draft.record_ids,
                    draft_fallback=draft.fallback,
                )
            )
            reply = await self.desk.resolve(qid, draft)
            await self._emit(
                QuestionAnswered(
                    question_id=qid,
                    text=reply.text,
                    record_ids=reply.record_ids,
                    scores=reply.scores,
                    runner_up=reply.runner_up,
                    fallback=reply.fallback,
                    responder=reply.responder,
                    edited=reply.edited,
                    model=reply.model,
                    remaining=self.remaining,
                    latency_s=round(time.monotonic() - started, 4),
                )
            )
            return Answer(qid, reply.text, self.remaining)

    async def _refuse(self, qid: int, question: str) -> None:
        refused = self._refused
        if refused is None:
            sample = question[:REFUSED_SAMPLE_CHARS]
            refused = self._refused = QuestionsRefused(
                count=0, chars=0, first_id=qid, last_id=qid, sample=sample
            )
        refused.count += 1
        refused.chars += len(question)
        refused.last_id = qid
        if _power_of_ten(refused.count):
            await self._report_refused()

    async def _report_refused(self) -> None:
        refused = self._refused
        if refused is None or refused.count == self._reported:
            return
        self._reported = refused.count
        await self._emit(refused.model_copy())  # a snapshot: emitting stamps seq and time on it
