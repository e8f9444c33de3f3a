"""Semantic match (SM): a model judge says whether the delivery's stdout means what the
oracle's does, for the cases where exact match cannot say.

SM of a case, given SP (the exit code and side effects match):
- SP fails → SM 0, no question asked (a wrong effect is wrong whatever it prints);
- EM holds → SM 1, no question asked (the same bytes mean the same);
- otherwise the judge is asked once — temperature 0, the model named in the answer — and its
  yes/no is SM, its one-line reason kept beside it (`CaseResult.notes["sm"]`).

Answers are cached by a digest of what was asked (the prompt's version, the model, the
command, both outputs), so re-scoring the same pairs asks nothing. With no judge, or when
the judge fails for a case (the endpoint down, an answer that is no verdict), the case has no
SM: it is "not measured", never a silent 0 or 1, and the score's SM rate is over the measured
cases only (`sm_measured` says how many).

The judge talks to the run's gateway (role `judge`): recorded, limited and replayable like
the agent's calls. In a run, SM is a case scorer like any other (`SEMANTIC_MATCH`, registered
here): it needs the run's judge model, opens its cache for the run's cases and says then
what it could not judge, and sums SM up itself (`with_sm`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icae_tui.domain.results import CaseResult, MetricKind, MetricSpec, Score, SemanticSummary
from icae_tui.domain.states import ModelRole
from icae_tui.evaluation.model_reply import reply_object
from icae_tui.evaluation.scorers import (
    CaseContext,
    CaseScorer,
    Chat,
    RunContext,
    Scored,
    register_case_scorer,
)
from icae_tui.gateway.models import ModelCall, request_hash

PROMPT_VERSION = "sm-1"
JUDGE_CACHE_FILE = "judge_cache.db"  # beside the store's runs.db
SM = "sm"
SM_METRIC = MetricSpec(
    name=SM, label="SM", kind=MetricKind.PASS,
    description="SP, and stdout means what the oracle's does (a model judge; EM implies it)",
)  # fmt: skip
OUTPUT_CAP = 4000  # characters of each output shown to the judge
SYSTEM = (
    "You compare the output of a command-line program with the output of a reference "
    "implementation, given the same input. Answer with one JSON object and nothing else: "
    '{"same": true or false, "why": "<one short sentence>"}. "same" is true when the two '
    "outputs carry the same information for a user of the program (formatting, spacing, "
    "ordering of unordered items or wording may differ), false when a value, an item or a "
    "meaning differs or is missing."
)


@dataclass(frozen=True)
class Judged:
    """The judge's answer for one pair."""

    same: bool
    why: str
    model: str
    cached: bool = False


class JudgeCache:
    """Answers by the digest of what was asked, in a SQLite file of their own."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, same INTEGER, "
            "why TEXT, model TEXT)"
        )

    def get(self, key: str) -> Judged | None:
        row = self.db.execute(
            "SELECT same, why, model FROM answers WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else Judged(bool(row[0]), row[1], row[2], cached=True)

    def put(self, key: str, judged: Judged) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)",
                (key, int(judged.same), judged.why, judged.model),
            )

    def close(self) -> None:
        self.db.close()


def pair_key(model: str, command: str, expected: str, actual: str) -> str:
    digest = hashlib.sha256()
    for part in (PROMPT_VERSION, model, command, expected, actual):
        digest.update(part.encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
    return digest.hexdigest()


def _shown(text: str) -> str:
    if len(text) <= OUTPUT_CAP:
        return text
    return text[:OUTPUT_CAP] + f"\n[… {len(text) - OUTPUT_CAP} more characters not shown]"


def question(command: str, expected: str, actual: str) -> list[dict[str, str]]:
    user = (
        f"Command: {command}\n\n--- reference output ---\n{_shown(expected)}\n"
        f"--- output to judge ---\n{_shown(actual)}\n--- end ---"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def verdict_of(reply: dict[str, Any]) -> tuple[bool, str] | None:
    """(same, why) from a Chat Completions reply, or None when it holds no verdict."""
    data = reply_object(reply)
    if data is None or not isinstance(data.get("same"), bool):
        return None
    why = data.get("why")
    return data["same"], (why if isinstance(why, str) else "")[:300]


class RecordedChat:
    """A judge answered from a stored run's recorded judge calls, by the canonical hash of the
    request (what the gateway recorded it under): re-scoring that run's pairs needs no
    endpoint. A request with no recording is passed to `fallback`, or refused."""

    def __init__(self, calls: Sequence[ModelCall], fallback: Chat | None = None) -> None:
        self.replies: dict[tuple[str, str], str] = {
            (c.model, c.request_hash): c.response_body
            for c in calls
            if c.role is ModelRole.JUDGE and c.kind == "ok" and c.replayable
            and c.response_body is not None
        }  # by the model asked too: another judge model is asked, not answered from these
        self.fallback = fallback
        self.replayed = 0

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (str(body.get("model", "")), request_hash({**body, "stream": False}))
        recorded = self.replies.get(key)
        if recorded is not None:
            self.replayed += 1
            reply = json.loads(recorded)
            return reply if isinstance(reply, dict) else {}
        if self.fallback is None:
            raise LookupError("no recorded answer and no judge endpoint")
        return await self.fallback.complete(body)


class SemanticJudge:
    """Gives a case result its SM (and the reason) through `chat`; `failures` keeps why a
    pair could not be judged."""

    def __init__(self, chat: Chat, model: str, cache: JudgeCache | None = None) -> None:
        self.chat = chat
        self.model = model
        self.cache = cache
        self.asked = 0
        self.failures: list[str] = []

    async def ask(self, command: str, expected: str, actual: str) -> Judged | None:
        key = pair_key(self.model, command, expected, actual)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
        body = {"model": self.model, "temperature": 0,
                "messages": question(command, expected, actual)}  # fmt: skip
        self.asked += 1
        try:
            reply = await self.chat.complete(body)
        except Exception as err:  # the endpoint's failure: this pair is not measured
            self.failures.append(f"{type(err).__name__}: {err}")
            return None
        found = verdict_of(reply)
        if found is None:
            self.failures.append("the judge's answer held no verdict")
            return None
        judged = Judged(found[0], found[1], str(reply.get("model") or self.model))
        if self.cache is not None:
            self.cache.put(key, judged)
        return judged

    async def judge(self, result: CaseResult) -> CaseResult:
        """`result` with its SM (absent when the judge could not say), reason in `notes`."""
        if not result.verdict.counted:
            return result
        if not result.sp:
            return _with(result, 0.0, "")
        if result.em:
            return _with(result, 1.0, "")
        if result.oracle is None or result.delivery is None:  # no oracle ran: nothing to ask
            return result
        judged = await self.ask(result.command, result.oracle.stdout, result.delivery.stdout)
        if judged is None:
            return result
        cached = " (cached)" if judged.cached else ""
        return _with(result, float(judged.same), f"{judged.model}{cached}: {judged.why}")


def judge_failures(failures: Sequence[str]) -> str:
    """One line for a run's progress: how many pairs the judge could not say, and why."""
    n = len(failures)
    kinds = sorted(set(failures))
    shown = "; ".join(kinds[:2]) + (f"; and {len(kinds) - 2} more" if len(kinds) > 2 else "")
    return f"SM judge: {n} case{'s' if n != 1 else ''} not measured ({shown})"


def _with(result: CaseResult, sm: float, note: str) -> CaseResult:
    notes = {**result.notes, SM: note} if note else result.notes
    return result.model_copy(update={"metrics": {**result.metrics, SM: sm}, "notes": notes})


def without_sm(score: Score) -> Score:
    """`score` as if no judge had measured SM (before SM is judged again)."""
    rates = {k: v for k, v in score.rates.items() if k != SM}
    metrics = [m for m in score.metrics if m.name != SM]
    return score.model_copy(update={"rates": rates, "metrics": metrics, "semantic": None})


def unjudged(result: CaseResult) -> CaseResult:
    if SM not in result.metrics and SM not in result.notes:
        return result
    metrics = {k: v for k, v in result.metrics.items() if k != SM}
    notes = {k: v for k, v in result.notes.items() if k != SM}
    return result.model_copy(update={"metrics": metrics, "notes": notes})


def with_sm(score: Score, scored: Sequence[CaseResult]) -> Score:
    """`score` with SM's rate over the scored cases that have one, and `semantic`: how many
    were measured and how often SM agrees with EM and with FM where SP held; no rate at all
    when no case was measured — SM is then "not measured"."""
    measured = [r for r in scored if SM in r.metrics]
    if not measured:
        return score
    rates = {**score.rates, SM: round(sum(r.metrics[SM] for r in measured) / len(measured), 4)}
    with_sp = [r for r in measured if r.sp]

    def agreement(flag: str) -> float | None:
        if not with_sp:
            return None
        agree = sum((r.metrics[SM] >= 1.0) == r.holds(flag) for r in with_sp)
        return round(agree / len(with_sp), 4)

    semantic = SemanticSummary(
        measured=len(measured), agrees_em=agreement("em"), agrees_fm=agreement("fm")
    )
    metrics = list(score.metrics)
    if all(m.name != SM for m in metrics):
        metrics.append(SM_METRIC)
    return score.model_copy(update={"rates": rates, "metrics": metrics, "semantic": semantic})


class SemanticMatch:
    """SM as a case scorer: in a run with a judge model, each case's SM (and the judge's
    reason in its notes) through the run's gateway, answers cached beside the store."""

    name = "semantic"
    metrics: tuple[MetricSpec, ...] = (SM_METRIC,)
    needs_judge = True

    def __init__(self, judge: SemanticJudge | None = None) -> None:
        self.judge = judge

    @contextlib.asynccontextmanager
    async def open(self, run: RunContext) -> AsyncIterator[CaseScorer]:
        """The scorer of `run`'s cases; after them, one progress line when the judge could
        not say for some."""
        if run.judge is None or run.judge_model is None:
            yield SemanticMatch()  # no endpoint: no case has SM
            return
        cache = JudgeCache(run.cache_dir / JUDGE_CACHE_FILE) if run.cache_dir else None
        try:
            judge = SemanticJudge(run.judge, run.judge_model, cache)
            yield SemanticMatch(judge)
            if judge.failures and run.say is not None:
                await run.say(judge_failures(judge.failures))
        finally:
            if cache is not None:
                cache.close()

    async def score(self, case: CaseContext) -> Scored:
        if self.judge is None:
            return Scored({})
        judged = await self.judge.judge(case.result)
        values = {SM: judged.metrics[SM]} if SM in judged.metrics else {}
        return Scored(values, {SM: judged.notes[SM]} if SM in judged.notes else {})

    def finish(self, score: Score, scored: Sequence[CaseResult]) -> Score:
        return with_sm(score, scored)


SEMANTIC_MATCH = register_case_scorer(SemanticMatch())
