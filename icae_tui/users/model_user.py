"""A model-backed simulated user that cannot leak: it chooses, it does not invent.

Three ways to use the model (`UserMode`):
- choose: one call; the model picks among the matcher's top candidates (below);
- verify: the top candidates checked one at a time with a constrained yes/no
  (users/verifier.py); the answer is the confirmed ones, verbatim; none → the fallback;
- hybrid: the matcher's own answer, vetoed where the model says a record does not answer;
  where the matcher fell back, its candidates are verified as in `verify`.
A small model does `verify` and `hybrid` well; `choose` asks more of it.

In `choose`, the model (any OpenAI-compatible endpoint, temperature 0) sees only the question and the
top candidate records of deterministic matching — never the golden code, the cases, or the
other records. It must answer with JSON naming the records it chose (a subset of the
candidates) and, optionally, a rephrasing of them. Its output is checked:
- chosen ids outside the candidates are dropped; none left → the level's fallback;
- a rephrasing may only use words that occur in the chosen records, plus neutral glue words
  (no negations, no yes/no: those could flip or invent a requirement; not even words from
  the question, which could smuggle in a confirmation of the agent's guess); otherwise the
  chosen records' text is sent verbatim.
So nothing outside the chosen records reaches the agent, whatever the model says.

In a run the model is reached through the run's model gateway (role `user`): its calls are
recorded, counted and replayable like the agent's. Outside a run (the fidelity benchmark, a
test) it talks to the endpoint directly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from icae_tui.domain.states import AnsweredBy, UserMode
from icae_tui.domain.task import OracleData
from icae_tui.users import matching
from icae_tui.users.matching import Candidate
from icae_tui.users.responders import Reply, grounded_reply
from icae_tui.users.verifier import Check, Verdict, Verifier

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

SYSTEM_PROMPT = """You are the product owner answering a developer's clarification question.
You may use ONLY the candidate requirement records listed below; never add facts of your own.
Choose the records (at most 2) that answer the question, and optionally restate them in plain
words without adding anything. Reply with JSON only:
{"records": ["<id>", ...], "answer": "<restated text, or empty to send the records verbatim>"}
If no candidate answers the question, reply {"records": [], "answer": ""}."""

_WORD = re.compile(r"[A-Za-z0-9_]+")
# Words any restatement needs; none of them can carry a requirement on its own.
_GLUE = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "be",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "at",
        "as",
        "from",
        "or",
        "and",
        "you",
        "your",
        "we",
        "our",
        "should",
        "will",
        "can",
        "do",
        "does",
        "if",
        "then",
        "so",
        "when",
        "which",
        "what",
        "how",
        "also",
        "use",
        "used",
        "using",
    ]
)


@dataclass(frozen=True)
class ModelConfig:
    model: str
    base_url: str
    api_key: str = "not-needed"  # the key itself: only for a direct client (no run)
    candidates: int = 5
    timeout_s: float = 60.0
    api_key_env: str | None = None  # in a run: the host variable the gateway reads it from
    local_model: str | None = None  # `icae models`' model instead of base_url (in a run)
    mode: UserMode = UserMode.CHOOSE
    verify_k: int = 3  # verify, hybrid: how many of the matcher's candidates are checked
    # verify, hybrid: a record counts as answering when the model's p(yes), plus
    # lexical_weight × (its matcher score − the matcher's bar) / 100, reaches yes_bar; in
    # hybrid, the matcher's own answer is vetoed below veto_bar (tuned on the dev half)
    yes_bar: float = 0.5
    veto_bar: float = 0.5
    lexical_weight: float = 0.0


class ChatClient(Protocol):
    """Chat Completions, not streamed: the run's gateway endpoint, or a direct client."""

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...


class DirectChat:
    """The endpoint itself through the openai package: for use outside a run."""

    def __init__(self, config: ModelConfig) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_s,
            max_retries=1,
        )  # fmt: skip

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        completion: ChatCompletion = await self.client.chat.completions.create(**body)
        return completion.model_dump()


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def grounded_rephrase(answer: str, chosen: list[Candidate]) -> bool:
    allowed = set().union(*(_words(c.text) for c in chosen)) | _GLUE
    return bool(answer.strip()) and _words(answer) <= allowed


def _parse(content: str) -> dict[str, Any] | None:
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(content[start : end + 1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _stand_in(base: Reply, why: str) -> Reply:
    """The deterministic answer, when the model could not give one."""
    return Reply(base.text, base.record_ids, base.scores, base.runner_up, base.fallback,
                 responder=AnsweredBy.SIMULATED, model=why)  # fmt: skip


class ModelUser:
    name = "model"

    def __init__(
        self, data: OracleData, config: ModelConfig, endpoint: ChatClient | None = None
    ) -> None:
        self.data = data
        self.config = config
        matching.prepare(data)
        # a run sets its gateway's endpoint before the agent may ask; else a direct client
        self.endpoint = endpoint

    def _client(self) -> ChatClient:
        if self.endpoint is None:
            self.endpoint = DirectChat(self.config)
        return self.endpoint

    async def reply(self, question_id: int, question: str) -> Reply:
        base = grounded_reply(question, self.data)  # the audit trail: scores and runner-up
        if self.config.mode is UserMode.CHOOSE:
            return await self._choose(question, base)
        try:
            return await self._verified(question, base)
        except Exception as err:  # an unreachable model, a refusal: must not stop the run
            return _stand_in(base, f"{self.config.model} unavailable: {type(err).__name__}")

    async def _verified(self, question: str, base: Reply) -> Reply:
        """verify and hybrid: which records the model confirms, one call per record."""
        verifier = Verifier(self._client(), self.config.model)
        if self.config.mode is UserMode.HYBRID and not base.fallback:
            by_id = {c.record_id: c for c in matching.candidates(question, self.data, k=50)}
            kept = []
            for record_id in base.record_ids:
                record = by_id.get(record_id)
                if record is None or self._belief(
                    await verifier.check(question, record.text), record
                ) >= self.config.veto_bar:
                    kept.append(record_id)
            if kept == base.record_ids:
                return Reply(base.text, base.record_ids, base.scores, base.runner_up,
                             responder=AnsweredBy.MODEL, model=self.config.model)  # fmt: skip
            chosen = [by_id[i] for i in kept]
        else:
            chosen = []
            for c in matching.candidates(question, self.data, k=self.config.verify_k):
                if len(chosen) < matching.MAX_RECORDS_PER_ANSWER:
                    check = await verifier.check(question, c.text)
                    if self._belief(check, c) >= self.config.yes_bar:
                        chosen.append(c)
        scores = {**base.scores, **{c.record_id: c.score for c in chosen}}
        if not chosen:
            return Reply(self.data.fallback_response, [], scores, base.runner_up,
                         fallback=True, responder=AnsweredBy.MODEL, model=self.config.model)  # fmt: skip
        return Reply("\n\n".join(c.text for c in chosen), [c.record_id for c in chosen], scores,
                     base.runner_up, responder=AnsweredBy.MODEL, model=self.config.model)  # fmt: skip

    def _belief(self, check: Check, record: Candidate) -> float:
        """How much `record` is taken to answer: the model's p(yes) (unsure: 0), moved by
        its matcher score."""
        if check.verdict is Verdict.UNSURE:
            return 0.0
        lexical = (record.score - matching.THRESHOLD) / 100
        return check.p_yes + self.config.lexical_weight * lexical

    async def _choose(self, question: str, base: Reply) -> Reply:
        offered = matching.candidates(question, self.data, k=self.config.candidates)
        if not offered:
            return Reply(self.data.fallback_response, [], base.scores, base.runner_up,
                         fallback=True, responder=AnsweredBy.MODEL, model=self.config.model)  # fmt: skip
        listing = "\n".join(f"[{c.record_id}] {c.text}" for c in offered)
        body = {
            "model": self.config.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Candidate records:\n{listing}\n\nQuestion: {question}"},
            ],
        }
        try:
            completion = await self._client().complete(body)
            content = completion["choices"][0]["message"]["content"] or ""
        except Exception as err:  # an unreachable model, a refusal: must not stop the run
            return _stand_in(base, f"{self.config.model} unavailable: {type(err).__name__}")
        parsed = _parse(content)
        if parsed is None:  # not JSON: the deterministic answer stands in
            return _stand_in(base, f"{self.config.model} unparseable")
        by_id = {c.record_id: c for c in offered}
        records = parsed.get("records")
        ids: list[Any] = records if isinstance(records, list) else []
        chosen = [by_id[i] for i in dict.fromkeys(ids) if isinstance(i, str) and i in by_id][:2]
        scores = {**base.scores, **{c.record_id: c.score for c in chosen}}
        if not chosen:
            return Reply(self.data.fallback_response, [], scores, base.runner_up,
                         fallback=True, responder=AnsweredBy.MODEL, model=self.config.model)  # fmt: skip
        said = parsed.get("answer")
        answer = said if isinstance(said, str) else ""
        if not grounded_rephrase(answer, chosen):
            answer = "\n\n".join(c.text for c in chosen)  # verbatim: nothing else can leak
        return Reply(answer, [c.record_id for c in chosen], scores, base.runner_up,
                     responder=AnsweredBy.MODEL, model=self.config.model)  # fmt: skip
