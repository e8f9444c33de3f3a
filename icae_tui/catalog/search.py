"""Finding a task in a catalog: fuzzy search, language and size filters with their counts, and
the card the task browser shows of each task. No Textual, no Rich: the console draws it.

Search. A query is split into words (lower-cased, punctuation as spaces: `ini-go` is `ini go`).
A word matches a field of a task — id, title, language, summary — when rapidfuzz's
`partial_ratio` (the best-aligned window of the field) reaches `WORD_CUTOFF`; against a field
shorter than the word the whole field is compared (`ratio`), so `minimal` does not match a
task called `mini`. Every word must match some field (more words narrow the list). A task's
score is the mean over the words of each word's best field score, summary matches weighted
by `SUMMARY_WEIGHT` so the same word in an id or title ranks first. Ties go to the task whose
id and title are closest to the whole query, then to the catalog's order.

Origin and capabilities. A card says where its task came from (`origin`: bundled, the ICAE-EVAL
alias, the CLI-Tool-Bench tool) and what it can do (`capabilities`: its levels, how many
user-agent records each level has or none, and its reference — a golden oracle or stored
expected outputs); the origin is searched like the summary.

Size. Tasks are sized by their number of cases, all splits (what a run costs to judge):
small below `SIZE_LIMITS[0]`, medium below `SIZE_LIMITS[1]`, large from there.

Filters: language, size, origin (the benchmark: bundled, ICAE-EVAL, CLI-Tool-Bench) and
ability (user-agent records or none; golden oracle or expected outputs — each task has one of
each pair).

Counts. Each filter's counts are taken over the tasks that match the query and the *other*
filters (faceted), so the counts say what choosing a value would show; cycling a filter
(`cycled`) skips the values that would show no task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from rapidfuzz import fuzz, process, utils

from icae_tui.domain.runtimes import runtime_key
from icae_tui.domain.task import Level, Reference, Split, Task

WORD_CUTOFF = 75.0
SUMMARY_WEIGHT = 0.9
SIZE_LIMITS = (30, 100)  # cases: small < 30 <= medium < 100 <= large
QUERY_CACHE = 32  # scored queries kept (filters change without scoring again)
SPLITS = tuple(Split)
LEVELS = tuple(Level)

Choice = TypeVar("Choice", bound=str)
SOURCE_LABELS = {"icae-eval": "ICAE-EVAL", "cli-tool-bench": "CLI-Tool-Bench"}


class Ability(StrEnum):
    """What a task can do that filters the browser: a simulated user needs records; a task
    judged against expected outputs has no oracle to run."""

    RECORDS = "user-agent records"
    NO_RECORDS = "no records"
    GOLDEN = "golden oracle"
    EXPECTED = "expected outputs"


def source_of(task: Task) -> str:
    """The benchmark a task came from (`bundled`, `ICAE-EVAL`, `CLI-Tool-Bench`): the origin
    filter's value."""
    origin = task.spec.origin
    if origin is None:
        return "bundled"
    return SOURCE_LABELS.get(origin.source.value, origin.source.value)


def abilities_of(task: Task) -> tuple[Ability, ...]:
    records = any(ua.oracle_data.hidden_constraints for ua in task.user_agent.values())
    expected = task.spec.cases.reference is Reference.EXPECTED
    return (
        Ability.RECORDS if records else Ability.NO_RECORDS,
        Ability.EXPECTED if expected else Ability.GOLDEN,
    )


def origin_of(task: Task) -> str:
    """`bundled` for a task written here; else the benchmark and the task's name there."""
    origin = task.spec.origin
    if origin is None:
        return "bundled"
    source = origin.source.value
    return f"{SOURCE_LABELS.get(source, source)} {origin.alias}"


def capabilities_of(task: Task) -> str:
    """`levels L1 L2 L3 ground · records L1 9 · L2 6 · L3 3 · ground 0 · golden oracle`:
    counts only, never a record's content."""
    levels = [level for level in LEVELS if level in task.prd]
    counts = {
        level: len(task.user_agent[level].oracle_data.hidden_constraints)
        for level in LEVELS
        if level in task.user_agent
    }
    records = (
        "records " + " · ".join(f"{level.value} {n}" for level, n in counts.items())
        if any(counts.values())
        else "no user-agent records"
    )
    reference = (
        "expected outputs" if task.spec.cases.reference is Reference.EXPECTED else "golden oracle"
    )
    return f"levels {' '.join(level.value for level in levels)} · {records} · {reference}"


class Size(StrEnum):
    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"


def size_of(cases: int) -> Size:
    if cases < SIZE_LIMITS[0]:
        return Size.SMALL
    return Size.MEDIUM if cases < SIZE_LIMITS[1] else Size.LARGE


@dataclass(frozen=True)
class PatternCount:
    pattern: str
    public: int
    hidden: int
    enhanced: int

    @property
    def total(self) -> int:
        return self.public + self.hidden + self.enhanced


@dataclass(frozen=True)
class TaskCard:
    """What the task browser shows of a task: what an agent could be given (the spec's
    description, the PRD of each level) and *counts* of its cases. It holds no case's content
    and no user-agent record, so nothing built from it can show them."""

    id: str
    title: str
    language: str
    summary: str
    interface: str
    origin: str
    source: str
    capabilities: str
    abilities: tuple[Ability, ...]
    root: str
    solutions: tuple[str, ...]
    prd: Mapping[Level, str]
    prd_word_counts: Mapping[Level, int]
    budgets: Mapping[Level, int]
    by_split: Mapping[Split, int]
    by_pattern: tuple[PatternCount, ...]
    # the runtime image's key (domain/runtimes.runtime_key): its language version is the
    # engine's to say (sandbox/docker/runtime_labels.py), never stored here
    runtime: str = ""

    @classmethod
    def of(cls, task: Task) -> TaskCard:
        spec = task.spec
        counts = Counter((ref.pattern, ref.split) for ref in task.cases)
        by_split = Counter(ref.split for ref in task.cases)
        return cls(
            id=task.id,
            title=spec.title,
            language=spec.language,
            summary=spec.summary,
            interface=f"{spec.interface.kind} ({spec.interface.tool})",
            origin=origin_of(task),
            source=source_of(task),
            capabilities=capabilities_of(task),
            abilities=abilities_of(task),
            root=task.root,
            solutions=tuple(task.solutions),
            prd={level: task.prd.get(level, "") for level in LEVELS},
            prd_word_counts={level: len(task.prd.get(level, "").split()) for level in LEVELS},
            budgets={level: task.budget_for(level) for level in LEVELS},
            by_split={s: by_split[s] for s in SPLITS},
            by_pattern=tuple(
                PatternCount(p, *(counts[p, s] for s in SPLITS))
                for p in sorted({pattern for pattern, _ in counts})
            ),
            runtime=runtime_key(spec),
        )

    @property
    def cases(self) -> int:
        return sum(self.by_split.values())

    @property
    def size(self) -> Size:
        return size_of(self.cases)

    @property
    def language_key(self) -> str:
        return language_key(self.language)

    def prd_words(self, level: Level) -> int:
        return self.prd_word_counts.get(level, 0)


def language_key(language: str) -> str:
    """Languages are grouped case-insensitively: `Python` and `python` are one filter."""
    return language.strip().lower()


def words(query: str) -> list[str]:
    return utils.default_process(query).split()


@dataclass(frozen=True)
class Hit:
    id: str
    score: float  # 0–100; 100 for every task when there is no query


@dataclass(frozen=True)
class Found:
    """One search: the ranked hits after both filters, and each filter's counts."""

    hits: tuple[Hit, ...]
    matching: int  # tasks that match the query, before the filters
    languages: tuple[tuple[str, int], ...]  # every language of the catalog, in its order
    sizes: tuple[tuple[Size, int], ...]
    origins: tuple[tuple[str, int], ...] = ()  # every source of the catalog, in its order
    abilities: tuple[tuple[Ability, int], ...] = ()  # those some task of the catalog has
    ability_all: int = 0  # the tasks the ability filter's "all" shows (each has two abilities)

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]


class TaskFinder:
    """Search and filter a catalog's tasks. Built once; each search scores the query against
    the fields of every task with rapidfuzz's batch calls (`process.extract`), keeps
    the scores of recent queries, and only filters and counts in Python."""

    def __init__(self, tasks: Iterable[Task | TaskCard]) -> None:
        self.cards: list[TaskCard] = [
            t if isinstance(t, TaskCard) else TaskCard.of(t) for t in tasks
        ]
        self.by_id: dict[str, TaskCard] = {c.id: c for c in self.cards}
        self.order = {c.id: i for i, c in enumerate(self.cards)}
        self.fields: list[tuple[list[str], float]] = [
            ([normalised(c.id) for c in self.cards], 1.0),
            ([normalised(c.title) for c in self.cards], 1.0),
            ([normalised(c.language) for c in self.cards], 1.0),
            ([normalised(c.summary) for c in self.cards], SUMMARY_WEIGHT),
            ([normalised(c.origin) for c in self.cards], SUMMARY_WEIGHT),
        ]
        self.languages: tuple[str, ...] = most_first(c.language_key for c in self.cards)
        self.origins: tuple[str, ...] = most_first(c.source for c in self.cards)
        having = Counter(a for c in self.cards for a in c.abilities)
        self.abilities: tuple[Ability, ...] = tuple(a for a in Ability if having[a])
        # a filter whose every value shows all tasks or none is no filter: not offered
        self.origins_differ = len(self.origins) > 1
        self.abilities_differ = any(n < len(self.cards) for n in having.values())
        self.scored: dict[str, dict[int, float]] = {}

    # --- scoring ----------------------------------------------------------------------------

    def scores(self, query: str) -> dict[int, float] | None:
        """Card index → score for the cards that match `query`; None: no query (all match)."""
        terms = words(query)
        if not terms:
            return None
        key = " ".join(terms)
        cached = self.scored.get(key)
        if cached is None:
            cached = self._score(terms)
            if len(self.scored) >= QUERY_CACHE:
                self.scored.pop(next(iter(self.scored)))
            self.scored[key] = cached
        return cached

    def _score(self, terms: list[str]) -> dict[int, float]:
        total: dict[int, float] | None = None
        for term in terms:
            best: dict[int, float] = {}
            for choices, weight in self.fields:
                for choice, score, index in process.extract(
                    term,
                    choices,
                    scorer=fuzz.partial_ratio,
                    processor=None,
                    limit=None,
                    score_cutoff=WORD_CUTOFF,
                ):
                    if len(choice) < len(term):  # the field inside the word: compare whole
                        score = fuzz.ratio(term, choice)
                        if score < WORD_CUTOFF:
                            continue
                    if score * weight > best.get(index, 0.0):
                        best[index] = score * weight
            if total is None:
                total = best
            else:  # every word must match
                total = {i: total[i] + s for i, s in best.items() if i in total}
            if not total:
                return {}
        assert total is not None
        return {i: s / len(terms) for i, s in total.items()}

    def _closeness(self, index: int, query: str) -> float:
        """How close the card's id and title are to the whole query (the tie-break)."""
        return fuzz.ratio(query, self.fields[0][0][index]) + fuzz.ratio(
            query, self.fields[1][0][index]
        )

    # --- search -----------------------------------------------------------------------------

    def find(
        self,
        query: str = "",
        language: str | None = None,
        size: Size | None = None,
        origin: str | None = None,
        ability: Ability | None = None,
    ) -> Found:
        scores = self.scores(query)
        if scores is None:
            matched = [(i, 100.0) for i in range(len(self.cards))]
        else:
            joined = " ".join(words(query))
            matched = sorted(
                scores.items(),
                key=lambda item: (-item[1], -self._closeness(item[0], joined), item[0]),
            )
        lang = language_key(language) if language else None
        hits: list[Hit] = []
        by_language: Counter[str] = Counter()
        by_size: Counter[Size] = Counter()
        by_origin: Counter[str] = Counter()
        by_ability: Counter[Ability] = Counter()
        ability_all = 0
        for index, score in matched:
            card = self.cards[index]
            ok = (
                lang is None or card.language_key == lang,
                size is None or card.size is size,
                origin is None or card.source == origin,
                ability is None or ability in card.abilities,
            )
            # each filter's counts: over the tasks the *other* filters let through
            if all(ok[1:]):
                by_language[card.language_key] += 1
            if ok[0] and all(ok[2:]):
                by_size[card.size] += 1
            if all(ok[:2]) and ok[3]:
                by_origin[card.source] += 1
            if all(ok[:3]):
                by_ability.update(card.abilities)
                ability_all += 1
            if all(ok):
                hits.append(Hit(card.id, round(score, 1)))
        return Found(
            hits=tuple(hits),
            matching=len(matched),
            languages=tuple((lang, by_language[lang]) for lang in self.languages),
            sizes=tuple((s, by_size[s]) for s in Size),
            origins=tuple((o, by_origin[o]) for o in self.origins),
            abilities=tuple((a, by_ability[a]) for a in self.abilities),
            ability_all=ability_all,
        )


def most_first(values: Iterable[str]) -> tuple[str, ...]:
    """Distinct values, the most frequent first (ties alphabetically)."""
    counts = Counter(values)
    return tuple(sorted(counts, key=lambda value: (-counts[value], value)))


def cycled(
    values: Sequence[Choice], current: Choice | None, counts: Mapping[Choice, int]
) -> Choice | None:
    """The filter value after `current` (None: all tasks, before the first value and after
    the last) that shows some task: a value whose count is 0 is skipped, so cycling never
    empties the list. A `current` not among `values` cycles from the start."""
    order: list[Choice | None] = [None, *values]
    at = order.index(current) if current in order else 0
    for step in range(1, len(order)):
        value = order[(at + step) % len(order)]
        if value is None or counts.get(value, 0) > 0:
            return value
    return None


def normalised(text: str) -> str:
    """A field as search sees it: lower case, punctuation as spaces."""
    return utils.default_process(text)
