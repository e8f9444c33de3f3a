"""Responders answer clarification questions; the channel enforces the budget.

`SimulatedUser` answers only from a level's records (grounded, deterministic).
`HumanResponder` parks each question on a future that a display resolves (the console's
answer box, or the terminal in headless runs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from icae_tui.domain.events import QuestionAnswered, QuestionAsked
from icae_tui.domain.task import OracleData
from icae_tui.users.matching import match


@dataclass(frozen=True)
class Reply:
    text: str
    record_ids: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    fallback: bool = False
    responder: str = "simulated"


class Responder(Protocol):
    name: str

    async def reply(self, question_id: int, question: str) -> Reply: ...


class SimulatedUser:
    name = "simulated"

    def __init__(self, data: OracleData) -> None:
        self.data = data

    async def reply(self, question_id: int, question: str) -> Reply:
        result = match(question, self.data)
        scores = {c.record_id: c.score for c in result.chosen}
        if result.runner_up is not None:
            scores[result.runner_up.record_id] = result.runner_up.score
        if result.fallback:
            return Reply(self.data.fallback_response, [], scores, fallback=True)
        text = "\n\n".join(c.text for c in result.chosen)
        return Reply(text, [c.record_id for c in result.chosen], scores)


class HumanResponder:
    """Questions wait here until `answer()` is called for them."""

    name = "human"

    def __init__(self) -> None:
        self.pending: dict[int, asyncio.Future[str]] = {}
        self._early: dict[int, str] = {}  # answers that arrived before the question parked

    async def reply(self, question_id: int, question: str) -> Reply:
        if question_id in self._early:
            return Reply(self._early.pop(question_id), responder="human")
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.pending[question_id] = fut
        try:
            text = await fut
        finally:
            self.pending.pop(question_id, None)
        return Reply(text, responder="human")

    def answer(self, question_id: int, text: str) -> bool:
        fut = self.pending.get(question_id)
        if fut is None:
            self._early[question_id] = text  # the display was faster than the run
            return True
        if fut.done():
            return False
        fut.set_result(text)
        return True


Emit = Callable[[object], Awaitable[None]]


class ClarificationChannel:
    """The agent's only way to ask. Counts questions against the budget and emits events."""

    def __init__(self, responder: Responder, budget: int, emit: Emit) -> None:
        self.responder = responder
        self.budget = budget
        self.used = 0
        self.asked = 0
        self._emit = emit
        self._lock = asyncio.Lock()

    @property
    def remaining(self) -> int:
        return max(0, self.budget - self.used)

    async def ask(self, question: str) -> str:
        async with self._lock:  # one question at a time, in order
            self.asked += 1
            question_id = self.asked
            await self._emit(
                QuestionAsked(
                    question_id=question_id, text=question, remaining_before=self.remaining
                )
            )
            started = time.monotonic()
            if self.remaining == 0:
                text = (
                    f"The question budget of {self.budget} is spent; no more questions can be "
                    "answered. Please proceed with your best judgement."
                )
                await self._emit(
                    QuestionAnswered(
                        question_id=question_id, text=text, over_budget=True,
                        responder="budget", remaining=0,
                    )
                )  # fmt: skip
                return text
            self.used += 1
            reply = await self.responder.reply(question_id, question)
            await self._emit(
                QuestionAnswered(
                    question_id=question_id,
                    text=reply.text,
                    record_ids=reply.record_ids,
                    scores=reply.scores,
                    fallback=reply.fallback,
                    responder=reply.responder,
                    remaining=self.remaining,
                    latency_s=round(time.monotonic() - started, 4),
                )
            )
            return reply.text
