"""Deterministic matching of a clarification question against a level's records.

Scoring: each record's score is the best, over its trigger phrases (for a context pointer:
its vague reference), of a blend of rapidfuzz's `token_set_ratio` (0.7) and `token_sort_ratio` (0.3), computed on normalised text (lower case, punctuation to spaces, stop words removed).
A record matches at or above `THRESHOLD`. Ties break by record order in the file, so the
same question always gets the same answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz import fuzz

from icae_tui.domain.task import OracleData

THRESHOLD = 62.0
MAX_RECORDS_PER_ANSWER = 2
# A second record is revealed only when it scores almost as well as the first.
SECOND_RECORD_MARGIN = 6.0

_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "be",
        "been",
        "do",
        "does",
        "did",
        "should",
        "would",
        "could",
        "can",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "i",
        "we",
        "you",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
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
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "when",
        "where",
        "why",
        "please",
        "tell",
        "me",
        "us",
        "my",
        "our",
        "your",
        "if",
        "any",
        "some",
        "so",
        "then",
        "than",
        "about",
        "into",
        "out",
        "up",
    ]
)
_WORD = re.compile(r"[a-z0-9_./-]+")


def normalise(text: str) -> str:
    words = _WORD.findall(text.lower())
    kept = [w.strip("./-") for w in words if w not in _STOP]
    return " ".join(w for w in kept if w)


@dataclass(frozen=True)
class Candidate:
    record_id: str
    score: float
    text: str  # the response to reveal (oracle_response or actual_meaning)


@dataclass(frozen=True)
class MatchResult:
    chosen: list[Candidate]
    runner_up: Candidate | None

    @property
    def fallback(self) -> bool:
        return not self.chosen


def _phrase_score(question: str, phrase: str) -> float:
    if not question or not phrase:
        return 0.0
    # token_set_ratio rewards a question that contains the phrase's words; the sort ratio
    # keeps long questions from matching every short phrase with one shared word.
    token_set = fuzz.token_set_ratio(question, phrase)
    sort = fuzz.token_sort_ratio(question, phrase)
    return 0.7 * token_set + 0.3 * sort


def score_records(question: str, data: OracleData) -> list[Candidate]:
    """Every record with its score, best first (stable on ties: file order)."""
    q = normalise(question)
    scored: list[tuple[float, int, Candidate]] = []
    order = 0
    for record in data.hidden_constraints:
        best = max(_phrase_score(q, normalise(t)) for t in record.trigger_keywords)
        scored.append(
            (best, order, Candidate(record.constraint_id, round(best, 1), record.oracle_response))
        )
        order += 1
    for i, pointer in enumerate(data.context_pointers, start=1):
        best = _phrase_score(q, normalise(pointer.vague_reference))
        scored.append(
            (best, order, Candidate(f"CP{i:03d}", round(best, 1), pointer.actual_meaning))
        )
        order += 1
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [c for _, _, c in scored]


def match(question: str, data: OracleData) -> MatchResult:
    ranked = score_records(question, data)
    chosen: list[Candidate] = []
    for cand in ranked:
        if cand.score < THRESHOLD or len(chosen) >= MAX_RECORDS_PER_ANSWER:
            break
        if chosen and cand.score < chosen[0].score - SECOND_RECORD_MARGIN:
            break
        chosen.append(cand)
    rest = ranked[len(chosen) :]
    return MatchResult(chosen=chosen, runner_up=rest[0] if rest else None)
