"""The agent's only way to ask: counts questions against the budget, emits the turns.

Whatever path a question takes (a host-driven agent's `ask`, `icae-ask` in the container,
the ICAE-EVAL wire shape), it lands here: one question at a time, in order, each answered by
the desk's current mode, each turn stored with who answered, from which records, how fast.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from icae_tui.domain.events import Event, QuestionAnswered, QuestionAsked
from icae_tui.users.responders import Desk

MAX_QUESTION_CHARS = 2000

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


class ClarificationChannel:
    def __init__(self, desk: Desk, budget: int, emit: Emit) -> None:
        self.desk = desk
        self.budget = budget
        self.used = 0
        self.asked = 0
        self._emit = emit
        self._lock = asyncio.Lock()

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
                await self._emit(QuestionAsked(question_id=qid, text=question, remaining_before=0,
                                               mode="budget", via=via))  # fmt: skip
                text = budget_spent_text(self.budget)
                await self._emit(QuestionAnswered(question_id=qid, text=text, over_budget=True,
                                                  responder="budget", remaining=0))  # fmt: skip
                return Answer(qid, text, 0, over_budget=True)
            self.used += 1
            draft = await self.desk.auto.reply(qid, question)
            self.desk.park(qid)
            await self._emit(
                QuestionAsked(
                    question_id=qid,
                    text=question,
                    remaining_before=self.remaining + 1,
                    mode=self.desk.mode,
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
