"""The operator's teachings in use: when one is offered, which record is suggested, and the
accepted ones as trigger phrases of their records (the store is `users/teachings.py`).

A teaching is offered after a question the simulated user could not answer (its draft was
the fallback) that a human answered: in human mode, or in assisted mode with the draft
replaced. It only ever adds a phrase to a record the level already has — never a new
requirement — and only once accepted does the matcher see it, so a pending teaching never
changes an answer.

A taught phrase is a whole question as an agent asked it, with its context around the
asked thing, so its words reach further than a trigger phrase's: `taught_match` lets it
answer the question it was taught from and close rewordings of it, not loosely related
ones. An answer that only the taught phrases give (the level's own phrases give another,
or none) must score `TAUGHT_BAR`, the bar of the generic records, which also share words
with many questions; and teaching never takes an answer away (the level's own phrases
answered, the taught ones fall back: their answer stands). Measured by
`benchmarks/user_fidelity.py --taught`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rapidfuzz import fuzz

from icae_tui.domain.events import Event, QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.domain.states import AnsweredBy
from icae_tui.domain.task import Level, OracleData
from icae_tui.users.matching import GENERIC_THRESHOLD, MatchResult, match, score_records
from icae_tui.users.teachings import (
    TEACHINGS_FILE,
    Teaching,
    TeachingStatus,
    load_teachings,
    normal_phrase,
)

TAUGHT_BAR = GENERIC_THRESHOLD  # an answer only taught phrases give: a near-exact match
# How much the matcher's own score for the question counts beside the likeness of the
# operator's answer to a record's response, when suggesting the record it came from.
QUESTION_WEIGHT = 0.5


def accepted_phrases(teachings: Iterable[Teaching], level: Level) -> dict[str, list[str]]:
    """record id -> the phrases accepted for it at `level`, in the order taught."""
    out: dict[str, list[str]] = {}
    for t in teachings:
        if t.status is TeachingStatus.ACCEPTED and t.taught.level == level:
            out.setdefault(t.taught.record_id, []).append(t.taught.phrase)
    return out


def with_taught(data: OracleData, teachings: Iterable[Teaching], level: Level) -> OracleData:
    """`data` with each accepted phrase added to its record's trigger phrases (one that the
    record already has, or whose record the level no longer has, adds nothing)."""
    phrases = accepted_phrases(teachings, level)
    if not phrases:
        return data
    records = []
    changed = False
    for record in data.hidden_constraints:
        have = {normal_phrase(p) for p in record.trigger_keywords}
        added = []
        for phrase in phrases.get(record.constraint_id, []):
            if normal_phrase(phrase) not in have:
                have.add(normal_phrase(phrase))
                added.append(phrase)
        if added:
            changed = True
            record = record.model_copy(
                update={"trigger_keywords": [*record.trigger_keywords, *added]}
            )
        records.append(record)
    return data.model_copy(update={"hidden_constraints": records}) if changed else data


def taught_data(data: OracleData, task_root: Path, level: Level) -> OracleData:
    """The level's records with the task's accepted teachings; a malformed teachings file
    raises `TeachingsError` (file and line)."""
    return load_taught(data, task_root, level)[0]


def load_taught(
    data: OracleData, task_root: Path, level: Level
) -> tuple[OracleData, list[Teaching]]:
    """`taught_data`, and the teachings it used (accepted, at `level`, for a record `data`
    has): what a run says it answers with, so its answers can be traced to them."""
    teachings = load_teachings(task_root)
    records = {r.constraint_id for r in data.hidden_constraints}
    used = [t for t in teachings if t.status is TeachingStatus.ACCEPTED
            and t.taught.level == level and t.taught.record_id in records]  # fmt: skip
    return with_taught(data, used, level), used


def in_use_note(used: list[Teaching]) -> str:
    """The line a run's trace shows about the teachings its simulated user answers with."""
    which = ", ".join(f"#{t.id} → {t.taught.record_id}" for t in used)
    many = "teaching" if len(used) == 1 else "teachings"
    return f"simulated user: {len(used)} accepted {many} in use ({TEACHINGS_FILE} {which})"


@dataclass(frozen=True)
class TaughtLevel:
    """A level's records (`own`) and the same with the accepted teachings (`taught`)."""

    own: OracleData
    taught: OracleData


def taught_match(question: str, level: TaughtLevel) -> MatchResult:
    """The matcher's answer over the taught records, where the taught phrases may decide
    it only on a near-exact match (see the module's notes)."""
    if level.taught is level.own:
        return match(question, level.own)
    own, taught = match(question, level.own), match(question, level.taught)
    if {c.record_id for c in taught.chosen} == {c.record_id for c in own.chosen}:
        return taught
    if taught.fallback:
        return own  # teaching adds answers; it never takes one away
    return taught if min(c.score for c in taught.chosen) >= TAUGHT_BAR else own


# --- offering a teaching -------------------------------------------------------------------


def teachable(asked: QuestionAsked, answered: QuestionAnswered) -> bool:
    """The simulated user fell back on `asked`, and a human wrote the answer."""
    if not asked.draft_fallback or answered.over_budget or not answered.text.strip():
        return False
    if answered.responder is AnsweredBy.HUMAN:
        return True
    return answered.responder is AnsweredBy.ASSISTED and answered.edited


@dataclass(frozen=True)
class TeachOffer:
    """A question the operator may attach to a record, with what they answered."""

    run_id: str
    level: Level
    question_id: int
    question: str
    answer: str


class OfferWatch:
    """Follows one run's events and says when a teaching is to be offered."""

    def __init__(self) -> None:
        self._asked: dict[int, QuestionAsked] = {}
        self._run_id = ""
        self._level: Level | None = None

    def observe(self, ev: Event) -> TeachOffer | None:
        if isinstance(ev, RunStarted):
            self._run_id = ev.run_id
            self._level = Level(ev.level) if ev.level in set(Level) else None
        elif isinstance(ev, QuestionAsked):
            self._asked[ev.question_id] = ev
        elif isinstance(ev, QuestionAnswered):
            asked = self._asked.pop(ev.question_id, None)
            if asked is not None and self._level is not None and teachable(asked, ev):
                return TeachOffer(self._run_id or ev.run_id, self._level, ev.question_id,
                                  asked.text, ev.text)  # fmt: skip
        return None


@dataclass(frozen=True)
class RecordChoice:
    record_id: str
    response: str


def record_choices(data: OracleData, offer: TeachOffer) -> tuple[list[RecordChoice], int]:
    """The level's records the question may be attached to (its hidden constraints, in file
    order: never a context pointer, never a new one), and the position of the one the
    answer most likely came from: the likeness of the operator's answer to each response,
    with the matcher's score for the question beside it."""
    choices = [RecordChoice(r.constraint_id, r.oracle_response) for r in data.hidden_constraints]
    if not choices:
        return [], -1
    by_question = {c.record_id: c.score for c in score_records(offer.question, data)}

    def likeness(c: RecordChoice) -> float:
        answer = fuzz.token_set_ratio(offer.answer, c.response, processor=str.lower)
        return float(answer) + QUESTION_WEIGHT * by_question.get(c.record_id, 0.0)

    scores = [likeness(c) for c in choices]
    best = max(range(len(choices)), key=lambda i: (scores[i], -i))
    return choices, best
