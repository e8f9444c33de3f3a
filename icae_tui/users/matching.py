"""Deterministic matching of a clarification question against a level's records.

Algorithm
---------
1. Normalise. Lower case; contractions dropped (`what's` -> `what`, `don't` -> `do not`);
   split into units: a word, or a compound joined by `-`, `_`, `.` or `/` (`pre-release`,
   `snake_case`, `--dry-run`, `.git`), which keeps its parts and their concatenation (`pre`,
   `release`, `prerelease`) so either spelling meets it. English stop words go (in a
   question also a misspelt one: `waht`, `shoud`); every form is stemmed by a few suffix
   rules (`bumping`, `bumped` -> `bump`; `categories` -> `category`). A unit with a digit,
   `.` or `/` is a literal (a version, number, file name or path) and matches only whole;
   words after `like`, `such as`, `e.g.`, `for example` (up to `,` `and` `or` ...) are
   examples.
2. Weigh. Each form gets an IDF weight from the level's own records,
   `log((N + 1) / (df + 0.5))` (N records, df = records whose phrases use it), so a word
   naming one record counts far more than one most records share; a word no record uses
   weighs as one used by a single record. A compound weighs the mean of its parts.
3. Compare forms. Equal forms score 1. With rapidfuzz, a form one typo away (OSA distance
   1, 2 from 8 letters; not a one-letter change in a short word, `pars`/`part`) scores
   `NEAR_SIMILARITY`, as does a form of 5+ letters that begins or ends the other
   (`overwrit`/`overwritten`, `release`/`prerelease`, `folder`/`subfolder`).
4. Score. The question is scored whole and by parts (sentences; `;`/`:`; `and`/`or`
   clauses that start a new question). For a part and a record: recall = the weighted share
   of one record phrase found in the part (phrases: the trigger phrases; for a context
   pointer its vague reference; the best phrase counts; a phrase's examples count only when
   present); precision = the weighted share of the part found among all the record's
   phrases (the question's examples and literals count only when found: they illustrate,
   they are not evidence against). Score = 100 * F-beta with `BETA` = 2: recall counts
   more, so a question with context around the asked thing still matches, while unrelated
   words still cost. A record's score is its best over the parts.
5. Choose. The best record is revealed when it scores at least its bar — `THRESHOLD` for
   task constraints and context pointers, the stricter `GENERIC_THRESHOLD` for generic
   records (ARCH, HARNESS and the TC_ public-case records), which share words with many
   questions — and beats the runner-up by `MARGIN`. A near tie is the fallback (revealing
   the wrong one of two records is a leak), unless the parts of the question tell them
   apart: a record that clearly leads a part is chosen (both, when each leads a part). Another record is added (up to
   `MAX_RECORDS_PER_ANSWER`) when it clears its bar and is the best record of a part of the
   question that no chosen record answers (none scores within `PART_MARGIN` of it there):
   a message asking two things gets both answers. The answer is the chosen records' texts
   verbatim; `MatchResult` keeps the chosen records' scores and the runner-up, so every
   answer can be audited.

Named features (public test cases)
----------------------------------
ICAE's harness record invites "ask me for a specific feature by name". A question that names
features — by number (`feature 12`, `feature12`, `feature #12`) or by a record's file stem
(`feature5_timeout`, `feature5_timeout.json`) — and asks for test material (tests, cases,
a test file, samples, JSON; or names a stem outright) is answered from exactly the records
whose id (`TC_<stem>`) or trigger phrases name those features, one per feature (a TC_ record
first, then the best scored), or the fallback when none names it: never a neighbour's by
shared words or digits. In any question that names features, a record naming only other
features is left out of the ranking.

Beyond the trigger phrases (v3)
-------------------------------
- Synonyms: a question word meets a record word of the same group of a small software
  vocabulary (`users/lexicon.py`: remove/delete, folder/directory, exit code/status, ...) at
  `SYNONYM_SIMILARITY`.
- The response: a question word found only in a record's response text (or a context
  pointer's meaning) counts towards that record's precision at `RESPONSE_SIMILARITY`.
- Novel words: a content word no record uses in any way weighs `NOVEL_WEIGHT` times more
  against every record — it is likely what the question is about, and nothing specifies it.
- Conversational filler ("anything I should know about", "handling", "supposed to") is
  dropped with the stop words.

Calibration
-----------
The bars, the margin and the weights above were chosen on the dev half of the fidelity
corpus (`benchmarks/fidelity/`, questions written by authors who never saw this code) as
the point that beats the previous matcher on all three of recall, leaks and correct
fallbacks there; `python benchmarks/user_fidelity.py` reports the test half, never tuned
on. Lexical matching has a ceiling: on the dev half the right record ranks first for about
three questions in four, and near misses (an unanswerable question that shares a record's
words) score like paraphrases, so lowering the bar buys recall only with leaks. The model
mode (`users/model_user.py`) is where paraphrases beyond the lexicon are recovered.
`candidates()` lists records down to the lower `CANDIDATE_FLOOR` for it.

Tie-breaking and determinism
----------------------------
Scores are rounded to 0.1 before ranking and equal scores keep the records' file order
(hidden constraints in order, then context pointers CP001, CP002 ...). Everything is a pure
function of the question and the records (no randomness, no clock, no hash order), so the
same question always gets the same answer. A level's index is built once per OracleData
object, on first use or by `prepare()`. `python benchmarks/matching.py` measures both, beside
two baselines: on a 2-CPU machine the index of 100 records takes about 6 ms (two phrases each)
to 25 ms (six), and a question against them 0.7 ms to 3.5 ms.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from rapidfuzz import process
from rapidfuzz.distance import OSA

from icae_tui.domain.task import OracleData, generic_record
from icae_tui.users import lexicon

THRESHOLD = 55.0
GENERIC_THRESHOLD = 80.0
MARGIN = 4.0  # over the runner-up: closer than this is ambiguous, and falls back
MAX_RECORDS_PER_ANSWER = 2
# Another record is revealed when it is the best record of a part of the question that no
# chosen record answers: no chosen record scores within this of it in that part.
PART_MARGIN = 15.0
# F-beta: how much more recall (the phrase is in the question) counts than precision.
BETA = 2.0
# What a near form (a typo, a prefix or a suffix; see `_similar`) is worth against an exact one.
NEAR_SIMILARITY = 0.9
# What a word of the same synonym group (users/lexicon.py) is worth.
SYNONYM_SIMILARITY = 0.8
# What a question word found only in a record's response (not its triggers) is worth.
RESPONSE_SIMILARITY = 0.3
# How much more a word no record uses counts against a match (see `_novel`).
NOVEL_WEIGHT = 2.5
AFFIX_MIN = 5  # shortest form that may match as a prefix or suffix of another
# Lower bound for `candidates()`.
CANDIDATE_FLOOR = 30.0

# English stop words (the usual NLTK list) plus conversational filler.
_STOP_WORDS = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against
    between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don
    should now d ll m o re ve y would could might must shall may also please thanks thank
    hi hello ok okay mean meant exactly like e g eg ie etc
    anything something everything know aware regarding regard keep mind special particular
    concern concerns thing things handle handled handling deal dealt want wanted need needed
    expect expected supposed happen happens happened tell wondering wonder quick question
    sure think guess idea rule rules behave behaviour behavior work works
"""
_STOP = frozenset(_STOP_WORDS.split())
_STOP_LONG = sorted(w for w in _STOP if len(w) >= 4)
_CONTRACTION = re.compile(r"(?<=[a-z])['’](s|m|re|ve|ll|d)\b")
_NOT = re.compile(r"n['’]t\b")
# A word, or a compound joined by `-`, `_`, `.`, `/`; a leading `.` too (`.git`, `.txt`).
_RAW = re.compile(r"(?:(?<![a-z0-9])\.)?[a-z0-9]+(?:[-_./]+[a-z0-9]+)*")
_SEP = re.compile(r"[-_./]")
# _RAW, or a mark that ends a clause (for example spans)
_TOKEN = re.compile(_RAW.pattern + r"|[,;:?!()\n]|\.(?=\s|$)")
_EXAMPLE_START = frozenset(["like", "eg", "ie"])
_EG = re.compile(r"\b([eiEI])\.([egEG])\.")
_EXAMPLE_END = frozenset(["and", "or", "but"])
# Parts of a question: sentence ends, `;`/`:`, and `and`/`or`/`but` clauses that start a new
# question (`..., and which one wins`).
_SPLIT = re.compile(
    r"[?!;:]+|\.(?=\s|$)|\n"
    r"|,?\s+(?:and|or|but|also)\s+(?=(?:what|which|how|where|when|who|why|is|are|do|does|"
    r"should|can|could|would|will|must)\b)"
)
_VOWEL = re.compile(r"[aeiouy]")
_LITERAL = re.compile(r"[0-9./]")  # a number, a version, a file name, a path


# --- public results ---------------------------------------------------------------------


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


# --- normalisation ------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light suffix stemmer (no dictionary): plurals, -ing, -ed, -ly, a final e."""
    w = word
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith(("ies", "ied")) and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("ches", "shes")) or (w.endswith("es") and w[-3] in "sxz"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        stem = w[: -len(suffix)]
        if w.endswith(suffix) and not w.endswith("eed") and len(stem) >= 2 and _VOWEL.search(stem):
            w = stem
            if len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # skipped -> skip
            break
    if w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


class _Unit(NamedTuple):
    forms: tuple[str, ...]  # forms[0]: the whole unit; forms[1:]: a compound's parts
    literal: bool = False  # a number, version, file name or path
    example: bool = False  # after `like`, `such as`, `e.g.`, `for example` (to `,` `and` ...)

    @property
    def parts(self) -> tuple[str, ...]:
        return self.forms[1:] if len(self.forms) > 1 else self.forms


@lru_cache(maxsize=1 << 12)
def _units(text: str) -> tuple[_Unit, ...]:
    text = _NOT.sub(" not", _CONTRACTION.sub("", text.lower()))
    text = _EG.sub(r" \1\2 ", text)  # `e.g.` -> `eg`: its dots do not end a sentence
    units: list[_Unit] = []
    example = False
    previous = ""
    for raw in _TOKEN.findall(text):
        before, previous = previous, raw
        if raw in _EXAMPLE_END or not raw[-1].isalnum():
            example = False  # punctuation, `and`, `or`, `but` end an example
            continue
        if (
            raw in _EXAMPLE_START
            or (raw == "as" and before == "such")
            or (raw in ("example", "instance") and before == "for")
        ):
            example = True
            continue
        if raw.isalpha():  # the common case: a plain word
            if raw not in _STOP:
                units.append(_Unit((_stem(raw),), False, example))
            continue
        parts = [p for p in _SEP.split(raw) if p]
        if all(p in _STOP for p in parts):
            continue
        literal = _LITERAL.search(raw) is not None
        if len(parts) == 1:
            units.append(_Unit((_stem(parts[0]),), literal, example))
            continue
        # A literal matches only as a whole: its parts say little (`1.0.0` vs `2.1.0`).
        kept = () if literal else tuple(_stem(p) for p in parts if p not in _STOP)
        units.append(_Unit((_stem("".join(parts)), *kept), literal, example))
    return tuple(units)


_SYNONYMS = lexicon.build(_stem)


def _segments(question: str) -> list[str]:
    """The whole question, then its parts when it has more than one."""
    text = _EG.sub(r"\1\2", question)  # the dots of `e.g.` do not end a sentence
    parts = [p.strip() for p in _SPLIT.split(text) if p and p.strip()]
    return [question, *parts] if len(parts) > 1 else [question]


# --- features named by number or name (public test cases) -----------------------------------

# `feature 12`, `feature12`, `feature_12`, `feature #12`, `feature no. 12`, `feature5_timeout`
_FEATURE_NUMBER = re.compile(
    r"(?<![a-z0-9])features?[\s_\-]*(?:#\s*|no\.?\s*|number\s*)?0*(\d+)(?![0-9])"
)
# a feature's file stem written in a trigger phrase: `feature5_timeout`, `feature5-timeout`
_FEATURE_STEM = re.compile(r"(?<![a-z0-9])feature\d+(?:[_\-][a-z0-9]+)*(?![a-z0-9])")
_TC_STEM = re.compile(r"[a-z0-9]+(?:[_\-][a-z0-9]+)*")
# the question asks for test material (not `for example`, not `in case`)
_CASES_WORDS = re.compile(
    r"\b(?:tests?|testcases?|cases|fixtures?|samples?|json)\b|(?<!for )\bexamples?\b"
)


@dataclass(frozen=True)
class _Names:
    """The features a record names: numbers (`feature 5`) and file stems (`feature5_timeout`,
    a TC_ record's stem when it is a name with a digit or a separator)."""

    numbers: frozenset[int] = frozenset()
    stems: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.numbers or self.stems)


def _stem_key(stem: str) -> str:
    return re.sub(r"[_\-]+", "_", stem.lower())


def _record_names(record_id: str, phrases: list[str]) -> _Names:
    numbers: set[int] = set()
    stems: set[str] = set()
    if record_id.startswith("TC_"):
        stem = record_id[3:].lower()
        # a name with a letter and a digit or separator (`feature5_timeout`, `cli_basic`); a
        # plain word (`list`) is left to the lexical match
        if _TC_STEM.fullmatch(stem) and re.search(r"[0-9_\-]", stem) and re.search("[a-z]", stem):
            stems.add(_stem_key(stem))
        numbers.update(int(n) for n in _FEATURE_NUMBER.findall(stem))
    for phrase in phrases:
        low = phrase.lower()
        numbers.update(int(n) for n in _FEATURE_NUMBER.findall(low))
        stems.update(_stem_key(m) for m in _FEATURE_STEM.findall(low) if "_" in m or "-" in m)
    return _Names(frozenset(numbers), frozenset(stems))


@lru_cache(maxsize=1 << 12)
def _stem_pattern(stem: str) -> re.Pattern[str]:
    body = r"[_\-]".join(re.escape(p) for p in stem.split("_"))
    return re.compile(r"(?<![a-z0-9_\-])" + body + r"(?:\.json)?(?![a-z0-9_\-])")


@dataclass(frozen=True)
class _Asked:
    """The features a question names, in the order it names them, and whether it asks for
    their test cases (or names a file stem outright)."""

    keys: tuple[int | str, ...]  # a number, or a stem a record names
    wants_cases: bool

    def names(self, names: _Names) -> bool:
        return any(k in names.numbers or k in names.stems for k in self.keys)


def _asked(question: str, index: _Index) -> _Asked:
    low = question.lower()
    found: list[tuple[int, int | str]] = []
    stems = [(m.start(), s) for s in index.stems if (m := _stem_pattern(s).search(low))]
    found += stems
    stem_numbers = {int(n) for _, s in stems for n in _FEATURE_NUMBER.findall(s)}
    found += [
        (m.start(), int(m.group(1)))
        for m in _FEATURE_NUMBER.finditer(low)
        if int(m.group(1)) not in stem_numbers  # a stem named whole decides its number
    ]
    keys: list[int | str] = []
    for _, key in sorted(found, key=lambda t: t[0]):
        if key not in keys:
            keys.append(key)
    return _Asked(tuple(keys), bool(stems) or _CASES_WORDS.search(low) is not None)


# --- a level's index -----------------------------------------------------------------------

# weight, forms, parts, optional (an example: counts only when the question has it)
_PhraseUnit = tuple[float, tuple[str, ...], tuple[str, ...], bool]


@dataclass(frozen=True)
class _Phrase:
    units: tuple[_PhraseUnit, ...]
    total: float  # weight of the units that are not optional


@dataclass(frozen=True)
class _Record:
    record_id: str
    text: str
    phrases: tuple[_Phrase, ...]
    forms: frozenset[str]  # every form of every phrase


class _Index:
    """A level's records, tokenised and weighted once."""

    def __init__(self, data: OracleData) -> None:
        raw: list[tuple[str, str, list[tuple[_Unit, ...]]]] = [
            (r.constraint_id, r.oracle_response, [_units(t) for t in r.trigger_keywords])
            for r in data.hidden_constraints
        ]
        raw += [
            (f"CP{i:03d}", p.actual_meaning, [_units(p.vague_reference)])
            for i, p in enumerate(data.context_pointers, start=1)
        ]
        record_forms = [
            frozenset(f for units in phrases for u in units for f in u.forms)
            for _, _, phrases in raw
        ]
        df: dict[str, int] = {}
        for forms in record_forms:
            for form in forms:
                df[form] = df.get(form, 0) + 1
        n = len(raw)
        self.weight = {f: math.log((n + 1) / (d + 0.5)) for f, d in df.items()}
        self.unknown_weight = math.log((n + 1) / 1.5)
        self.vocab = sorted(df)
        self.vocab_set = frozenset(df)
        self.reversed_vocab = sorted(f[::-1] for f in df)
        # form -> records using it; form -> phrases using it, as (record, phrase) positions
        self.by_form: dict[str, list[int]] = {}
        self.phrases_by_form: dict[str, list[tuple[int, int]]] = {}
        # form -> records whose response (or a context pointer's meaning) uses it: a question's
        # word found there is weaker evidence than in a trigger phrase, but evidence
        self.resp_by_form: dict[str, list[int]] = {}
        for i, (_, text, _) in enumerate(raw):
            for form in sorted({f for u in _units(text) for f in u.forms}):
                self.resp_by_form.setdefault(form, []).append(i)
        records = []
        for i, ((rid, text, phrases), forms) in enumerate(zip(raw, record_forms, strict=True)):
            built: list[_Phrase] = []
            for units in phrases:
                unique = _dedupe(units)  # a repeated word counts once
                if not unique:
                    continue
                # examples in a phrase are optional, unless the phrase is nothing else
                all_examples = all(u.example for u in unique)
                entries = tuple(
                    (self.unit_weight(u), u.forms, u.parts, u.example and not all_examples)
                    for u in unique
                )
                key = (i, len(built))
                for form in {f for u in unique for f in u.forms}:
                    self.phrases_by_form.setdefault(form, []).append(key)
                built.append(_Phrase(entries, sum(e[0] for e in entries if not e[3])))
            for form in forms:
                self.by_form.setdefault(form, []).append(i)
            records.append(_Record(rid, text, tuple(built), forms))
        self.records = tuple(records)
        self.named = tuple(
            [_record_names(r.constraint_id, r.trigger_keywords) for r in data.hidden_constraints]
            + [_record_names("", [p.vague_reference]) for p in data.context_pointers]
        )
        self.stems = sorted({s for n in self.named for s in n.stems})

    def unit_weight(self, unit: _Unit) -> float:
        """A form's IDF weight; a compound's is the mean of its parts'."""
        forms = unit.forms
        if len(forms) == 1:
            return self.weight.get(forms[0], self.unknown_weight)
        return sum(self.weight.get(p, self.unknown_weight) for p in forms[1:]) / (len(forms) - 1)


_CACHE: dict[int, tuple[OracleData, _Index]] = {}


def _index(data: OracleData) -> _Index:
    hit = _CACHE.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    index = _Index(data)
    if len(_CACHE) >= 32:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(data)] = (data, index)  # holding `data` keeps its id from being reused
    return index


# --- form similarity -----------------------------------------------------------------------


def _typo(a: str, b: str, distance: float) -> bool:
    """One typo apart: 4+ letters, OSA distance 1 (2 from 8 letters), and not one changed
    letter in a short word (`pars`/`part` are different words)."""
    shortest = min(len(a), len(b))
    if shortest < 4 or distance > (2 if shortest >= 8 else 1):
        return False
    return not (len(a) == len(b) <= 5 and sum(x != y for x, y in zip(a, b, strict=True)) == 1)


def _similar(form: str, index: _Index) -> dict[str, float]:
    """The vocabulary forms a question form matches, with their similarity in (0, 1]."""
    out: dict[str, float] = {}
    if form in index.vocab_set:
        out[form] = 1.0
    for other in _SYNONYMS.get(form, ()):
        if other in index.vocab_set:
            out.setdefault(other, SYNONYM_SIMILARITY)
    if len(form) < 4 or form.isdigit():
        return out
    for other, distance, _ in process.extract(
        form, index.vocab, scorer=OSA.distance, score_cutoff=2, limit=None
    ):
        if other != form and _typo(form, other, distance):
            out[other] = NEAR_SIMILARITY
    if len(form) >= AFFIX_MIN:
        near: list[str] = []
        # vocabulary forms that start or end with this one
        for other in index.vocab[bisect_left(index.vocab, form) :]:
            if not other.startswith(form):
                break
            near.append(other)
        back = form[::-1]
        for other in index.reversed_vocab[bisect_left(index.reversed_vocab, back) :]:
            if not other.startswith(back):
                break
            near.append(other[::-1])
        # vocabulary forms this one starts or ends with
        for cut in range(AFFIX_MIN, len(form)):
            near += [form[:cut], form[-cut:]]
        for other in near:
            if other != form and other in index.vocab_set:
                out.setdefault(other, NEAR_SIMILARITY)
    return out


def _dedupe(units: tuple[_Unit, ...] | list[_Unit]) -> list[_Unit]:
    """Each unit once (first place); not an example if any occurrence is not one."""
    seen: dict[tuple[str, ...], _Unit] = {}
    for unit in units:
        prev = seen.get(unit.forms)
        if prev is None:
            seen[unit.forms] = unit
        elif prev.example and not unit.example:
            seen[unit.forms] = prev._replace(example=False)
    return list(seen.values())


def _question_units(text: str, index: _Index) -> list[_Unit]:
    """A part's units, each once; an unknown word one typo from a stop word is dropped."""
    units: list[_Unit] = []
    for unit in _units(text):
        word = unit.forms[0]
        if len(unit.forms) == 1 and len(word) >= 4 and word not in index.vocab_set:
            near_stop = process.extract(
                word, _STOP_LONG, scorer=OSA.distance, score_cutoff=1, limit=None
            )
            if any(_typo(word, stop, d) for stop, d, _ in near_stop):
                continue
        units.append(unit)
    return _dedupe(units)


# --- scoring -------------------------------------------------------------------------------


def _f_beta(precision: float, recall: float) -> float:
    if precision <= 0 or recall <= 0:
        return 0.0
    b2 = BETA * BETA
    return (1 + b2) * precision * recall / (b2 * precision + recall)


def _found_in_records(
    unit: _Unit, index: _Index, sims: dict[str, dict[str, float]]
) -> dict[int, float]:
    """Record position -> how well a question unit is found among the record's forms."""

    def one(form: str) -> dict[int, float]:
        out: dict[int, float] = {}
        for i in index.resp_by_form.get(form, ()):
            out[i] = RESPONSE_SIMILARITY
        for other in _SYNONYMS.get(form, ()):
            for i in index.resp_by_form.get(other, ()):
                out[i] = max(out.get(i, 0.0), RESPONSE_SIMILARITY * SYNONYM_SIMILARITY)
        for other, s in sims[form].items():
            for i in index.by_form.get(other, ()):
                if s > out.get(i, 0.0):
                    out[i] = s
        return out

    found = one(unit.forms[0])
    if len(unit.forms) > 1:
        parts = [one(p) for p in unit.forms[1:]]
        for i in sorted({i for part in parts for i in part}):
            mean = sum(part.get(i, 0.0) for part in parts) / len(parts)
            if mean > found.get(i, 0.0):
                found[i] = mean
    return found


def _novel(unit: _Unit, where: dict[int, float]) -> float:
    """A content word that no record uses in any way (trigger, response, synonym, typo) is
    likely what the question is really about, and nothing specifies it: it weighs more
    against every record."""
    return NOVEL_WEIGHT if not where and not unit.literal and not unit.example else 1.0


def _part_scores(
    units: list[_Unit],
    index: _Index,
    sims: dict[str, dict[str, float]],
    found: dict[_Unit, dict[int, float]],
) -> dict[int, float]:
    """Record position -> score for one part of the question (records it touches only)."""
    best: dict[str, float] = {}  # vocabulary form -> best similarity to a form of the part
    for unit in units:
        for form in unit.forms:
            for other, s in sims[form].items():
                if s > best.get(other, 0.0):
                    best[other] = s
    recall: dict[int, float] = {}
    for i, j in sorted({p for form in best for p in index.phrases_by_form.get(form, ())}):
        phrase = index.records[i].phrases[j]
        hit, total = 0.0, phrase.total
        for w, forms, parts, optional in phrase.units:
            m = best.get(forms[0], 0.0)
            if len(forms) > 1 and m < 1.0:
                m = max(m, sum(best.get(p, 0.0) for p in parts) / len(parts))
            hit += w * m
            if optional and m > 0:
                total += w
        if hit > 0:
            recall[i] = max(recall.get(i, 0.0), hit / total)
    if not recall:
        return {}
    # precision: an example or literal the record does not mention is not evidence
    weighted = [(_novel(u, found[u]) * index.unit_weight(u), u.literal or u.example, found[u])
                for u in units]  # fmt: skip
    base = sum(w for w, optional, _ in weighted if not optional)
    scores: dict[int, float] = {}
    for i in sorted(recall):
        hit, total = 0.0, base
        for w, optional, where in weighted:
            m = where.get(i, 0.0)
            hit += w * m
            if optional and m > 0:
                total += w
        score = 100.0 * _f_beta(hit / total if total else 0.0, recall[i])
        if score > 0:
            scores[i] = score
    return scores


@dataclass(frozen=True)
class _Scored:
    ranked: list[tuple[float, int]]  # (score rounded to 0.1, record position), best first
    parts: list[dict[int, float]]  # per part of the question: record position -> score
    asked: _Asked  # the features the question names


def _score(question: str, index: _Index) -> _Scored:
    parts = [_question_units(s, index) for s in _segments(question)]
    forms = sorted({f for units in parts for u in units for f in u.forms})
    sims = {f: _similar(f, index) for f in forms}
    found = {u: _found_in_records(u, index, sims) for units in parts for u in units}
    per_part = [_part_scores(units, index, sims, found) for units in parts]
    asked = _asked(question, index)
    if asked.keys:  # a record naming only other features is never an answer (a neighbour)
        other = {i for i, n in enumerate(index.named) if n and not asked.names(n)}
        per_part = [{i: s for i, s in p.items() if i not in other} for p in per_part]
    totals = [0.0] * len(index.records)
    for scores in per_part:
        for i, s in scores.items():
            totals[i] = max(totals[i], s)
    ranked = sorted(((round(s, 1), i) for i, s in enumerate(totals)), key=lambda t: (-t[0], t[1]))
    return _Scored(ranked, per_part, asked)


def _candidate(index: _Index, score: float, i: int) -> Candidate:
    return Candidate(index.records[i].record_id, score, index.records[i].text)


def prepare(data: OracleData) -> None:
    """Build the level's index now (e.g. when a run starts), so the first question does not
    pay for it; `match` builds it on first use otherwise."""
    _index(data)


def score_records(question: str, data: OracleData) -> list[Candidate]:
    """Every record with its score, best first (equal scores: file order)."""
    index = _index(data)
    return [_candidate(index, s, i) for s, i in _score(question, index).ranked]


def _answers_new_part(i: int, chosen: list[int], parts: list[dict[int, float]]) -> bool:
    """Record `i` is the best of some part of the question that no chosen record answers."""
    for scores in parts:
        mine = scores.get(i, 0.0)
        if mine < THRESHOLD or any(s > mine for s in scores.values()):
            continue
        if all(scores.get(c, 0.0) < mine - PART_MARGIN for c in chosen):
            return True
    return False


is_generic = generic_record  # one rule, the task format's (domain/task.py)


def _bar(record_id: str) -> float:
    """Generic records (`is_generic`) answer many loosely related questions: they are
    revealed only on a near-exact match."""
    return GENERIC_THRESHOLD if is_generic(record_id) else THRESHOLD


def _feature_records(index: _Index, scored: _Scored) -> list[int]:
    """For a request for named features' test cases: per feature, in the question's order,
    the record naming it (a TC_ record first, then the best scored, then file order); none
    when no record names it."""
    rank = {i: r for r, (_, i) in enumerate(scored.ranked)}
    chosen: list[int] = []
    for key in scored.asked.keys:
        named = [
            i for i, n in enumerate(index.named) if key in n.numbers or key in n.stems
        ]  # fmt: skip
        if not named:
            continue
        best = min(named, key=lambda i: (not index.records[i].record_id.startswith("TC_"), rank[i]))
        if best not in chosen:
            chosen.append(best)
    return chosen[:MAX_RECORDS_PER_ANSWER]


def _clear_leads(parts: list[dict[int, float]]) -> set[int]:
    """Records that lead some part of a many-part question by MARGIN over every other."""
    out = set()
    for p in parts[1:]:
        ranked = sorted(p.values(), reverse=True)
        if ranked and (len(ranked) == 1 or ranked[0] - ranked[1] >= MARGIN):
            out.add(max(p, key=lambda i: (p[i], -i)))
    return out


def match(question: str, data: OracleData) -> MatchResult:
    """The best record, when it clears its bar and the runner-up by MARGIN. A near tie is a
    fallback — revealing the wrong one of two is a leak — unless the two answer different
    parts of the question. Besides, a record is added when it is the clear best of a part of
    the question that the chosen record does not answer (a message asking two things)."""
    index = _index(data)
    scored = _score(question, index)
    chosen: list[int] = []
    ranked = scored.ranked

    def bar(i: int) -> float:
        return _bar(index.records[i].record_id)

    if scored.asked.keys and scored.asked.wants_cases:
        # "the test cases for feature 12", "the feature5_timeout test file": exactly the
        # records naming those features, or the fallback — never a neighbour's
        chosen = _feature_records(index, scored)
    elif ranked and ranked[0][0] >= bar(ranked[0][1]):
        best, i = ranked[0]
        second, j = ranked[1] if len(ranked) > 1 else (0.0, -1)
        if best - second >= MARGIN:
            chosen.append(i)
        else:  # a near tie: the parts of the question may tell them apart
            leads = _clear_leads(scored.parts)
            if i in leads and j in leads and second >= bar(j):
                chosen += [i, j]  # each the clear answer to a part: both
            elif i in leads:
                chosen.append(i)
            elif j in leads and second >= bar(j):
                chosen.append(j)
        for score, k in ranked[1:]:
            if not chosen or len(chosen) >= MAX_RECORDS_PER_ANSWER or score < bar(k):
                break
            if k not in chosen and _answers_new_part(k, chosen, scored.parts):
                chosen.append(k)
    picked = [_candidate(index, s, i) for s, i in ranked if i in chosen]
    rest = [(s, i) for s, i in ranked if i not in chosen]
    runner_up = _candidate(index, *rest[0]) if rest else None
    return MatchResult(chosen=picked, runner_up=runner_up)


def candidates(
    question: str, data: OracleData, *, k: int = 5, floor: float = CANDIDATE_FLOOR
) -> list[Candidate]:
    """The best `k` records scoring at least `floor`, best first (equal scores: file order):
    the records a model-assisted mode may choose among."""
    if k <= 0:
        return []
    return [c for c in score_records(question, data) if c.score >= floor][:k]
