"""Who answers a clarification question, switchable at any moment of a run.

- `SimulatedUser`: deterministic grounded matching over the level's records (verbatim).
- `ModelUser` (users/model_user.py): a model that may only choose among candidate records or
  rephrase the chosen ones; same interface.
- the operator, through the `Desk`: in `human` mode the question waits for the operator's
  answer; in `assisted` mode the automatic answer is offered as a draft that the operator
  sends, edits or replaces.

The `Desk` holds the current mode. A question waiting for the operator is answered by the
automatic responder the moment the mode switches back to `simulated`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from icae_tui.domain.states import AnsweredBy, ResponderMode
from icae_tui.domain.task import OracleData
from icae_tui.users.matching import match, prepare
from icae_tui.users.teaching import TaughtLevel, taught_match

MODES = tuple(ResponderMode)  # in the order the console cycles through them


@dataclass(frozen=True)
class Reply:
    text: str
    record_ids: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    runner_up: str = ""
    fallback: bool = False
    responder: AnsweredBy = AnsweredBy.SIMULATED
    edited: bool = False
    model: str = ""


class Responder(Protocol):
    name: str

    async def reply(self, question_id: int, question: str) -> Reply: ...


class SimulatedUser:
    name = "simulated"

    def __init__(self, data: OracleData, *, taught: OracleData | None = None) -> None:
        """`taught`: `data` with the operator's accepted teachings (users/teaching.py)."""
        self.data = data
        self.taught = taught
        prepare(data)  # index the records now, so the first question is as fast as the rest
        if taught is not None:
            prepare(taught)

    async def reply(self, question_id: int, question: str) -> Reply:
        return grounded_reply(question, self.data, taught=self.taught)


def grounded_reply(
    question: str,
    data: OracleData,
    *,
    responder: AnsweredBy = AnsweredBy.SIMULATED,
    taught: OracleData | None = None,
) -> Reply:
    """The matcher's reply from `data`'s records (with `taught`, the operator's accepted
    teachings too: `taught_match`)."""
    if taught is None:
        result = match(question, data)
    else:
        result = taught_match(question, TaughtLevel(data, taught))
    scores = {c.record_id: c.score for c in result.chosen}
    runner_up = ""
    if result.runner_up is not None:
        runner_up = result.runner_up.record_id
        scores[runner_up] = result.runner_up.score
    if result.fallback:
        return Reply(
            data.fallback_response, [], scores, runner_up, fallback=True, responder=responder
        )
    text = "\n\n".join(c.text for c in result.chosen)
    return Reply(text, [c.record_id for c in result.chosen], scores, runner_up, responder=responder)


def _mode(mode: ResponderMode | str) -> ResponderMode:
    try:
        return ResponderMode(mode)
    except ValueError:
        raise ValueError(f"responder mode {mode!r}: choose one of {', '.join(MODES)}") from None


class Desk:
    """The current responder mode, and the operator's answers to waiting questions."""

    def __init__(
        self, auto: Responder, mode: ResponderMode | str = ResponderMode.SIMULATED
    ) -> None:
        self.auto = auto
        self.mode = _mode(mode)
        self._answers: dict[int, asyncio.Future[str]] = {}
        self._switched = asyncio.Event()

    @property
    def waiting(self) -> list[int]:
        return sorted(q for q, f in self._answers.items() if not f.done())

    def set_mode(self, mode: ResponderMode | str) -> None:
        self.mode = _mode(mode)
        self._switched.set()

    def park(self, question_id: int) -> None:
        """Open the question for the operator *before* it is announced, so an answer that
        follows the announcement at once always has somewhere to land."""
        self._answers[question_id] = asyncio.get_running_loop().create_future()

    def answer(self, question_id: int, text: str) -> bool:
        """The operator's answer. False when that question is not waiting."""
        fut = self._answers.get(question_id)
        if fut is None or fut.done():
            return False
        fut.set_result(text)
        return True

    async def resolve(self, question_id: int, draft: Reply) -> Reply:
        """The reply that goes to the agent, given the automatic draft."""
        if question_id not in self._answers:
            self.park(question_id)
        fut = self._answers[question_id]
        try:
            while True:
                if fut.done():
                    return self._operator_reply(fut.result(), draft)
                if self.mode is ResponderMode.SIMULATED:
                    return draft
                self._switched.clear()
                switched: asyncio.Task[bool] = asyncio.ensure_future(self._switched.wait())
                either: list[asyncio.Future[str] | asyncio.Future[bool]] = [fut, switched]
                try:
                    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    switched.cancel()
        finally:
            self._answers.pop(question_id, None)

    def _operator_reply(self, text: str, draft: Reply) -> Reply:
        if self.mode is ResponderMode.ASSISTED and text.strip() == draft.text.strip():
            return Reply(draft.text, draft.record_ids, draft.scores, draft.runner_up,
                         draft.fallback, responder=AnsweredBy.ASSISTED, model=draft.model)  # fmt: skip
        if self.mode is ResponderMode.ASSISTED:
            # Edited: the operator vouches for the text. What it reveals is no longer known,
            # so it claims no record (the draft's records stay on the question, for audit).
            return Reply(text, [], draft.scores, draft.runner_up,
                         responder=AnsweredBy.ASSISTED, edited=True, model=draft.model)  # fmt: skip
        return Reply(text, responder=AnsweredBy.HUMAN)
