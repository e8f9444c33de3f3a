"""Speed of question matching against N records, beside two baselines, in one process.

    python benchmarks/matching.py [--records 100] [--questions 20] [--repeat 5]

Two synthetic levels of N records each (seeded, so every run measures the same work):
  2 phrases — two short trigger phrases per record (`how does feature 42 behave on empty
              input`); each question is one record's phrase;
  6 phrases — six phrases of 4-8 words from a small vocabulary of shared stems (`prerelease`,
              `subfolder`, ...), so that most words occur in many records; each question joins
              three such phrases.
Each is matched three ways:
  matcher     — `icae_tui.users.matching.match` (the index built beforehand, as a run does);
  v1          — the first matcher (commit e622712): every phrase of every record scored with
                rapidfuzz `token_set_ratio` and `token_sort_ratio` on normalised text;
  extractOne  — a plain rapidfuzz `process.extractOne` of the question over all trigger phrases
                (`token_set_ratio`), the least a matcher can do.
Prints ms per question (the best of `--repeat` passes over all questions, each pass meeting
the questions as new text) and the time to build the matcher's index for the level (once per
run, at its start). Nothing is asserted: a figure to read, not a test.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rapidfuzz import fuzz, process  # noqa: E402

from icae_tui.domain.task import OracleData  # noqa: E402
from icae_tui.users import matching  # noqa: E402
from icae_tui.users.matching import match, prepare  # noqa: E402

# --- the levels --------------------------------------------------------------------------------


def level(phrases: list[list[str]]) -> OracleData:
    return OracleData.model_validate(
        {
            "hidden_constraints": [
                {"constraint_id": f"C{i:03d}", "trigger_keywords": p, "oracle_response": str(i)}
                for i, p in enumerate(phrases)
            ],
            "fallback_response": "fb",
        }
    )


def two_phrases(n: int, questions: int) -> tuple[OracleData, list[str]]:
    phrases = [
        [
            f"question number {i} about feature {i * 7}",
            f"how does feature {i} behave on empty input",
        ]
        for i in range(n)
    ]
    rng = random.Random(7)
    return level(phrases), [rng.choice(phrases)[1] for _ in range(questions)]


def six_phrases(n: int, questions: int) -> tuple[OracleData, list[str]]:
    rng = random.Random(7)
    stems = ["release", "name", "sort", "parse", "folder", "range", "file", "match", "write",
             "link"]  # fmt: skip
    words = [p + s for p in ("pre", "re", "un", "over", "sub", "de") for s in stems]
    words += ["version", "error", "output", "empty", "hidden", "order", "print", "exit", "code"]

    def phrase() -> str:
        return "how should " + " ".join(rng.choice(words) for _ in range(rng.randint(4, 8)))

    data = level([[phrase() for _ in range(6)] for _ in range(n)])
    return data, [f"{phrase()}, and {phrase()}? {phrase()}" for _ in range(questions)]


# --- the baselines -----------------------------------------------------------------------------

_V1_STOP_WORDS = """a an the is are be been do does did should would could can will shall may
    might must i we you it its this that these those there here of to in on for with by at as
    from or and what which who whom whose how when where why please tell me us my our your if
    any some so then than about into out up"""
_V1_STOP = frozenset(_V1_STOP_WORDS.split())
_V1_WORD = re.compile(r"[a-z0-9_./-]+")


def _v1_normalise(text: str) -> str:
    kept = [w.strip("./-") for w in _V1_WORD.findall(text.lower()) if w not in _V1_STOP]
    return " ".join(w for w in kept if w)


def v1_match(question: str, data: OracleData) -> str | None:
    """The v1 matcher's best record (threshold 62), phrases normalised per question as it did."""
    q = _v1_normalise(question)
    best, best_id = 0.0, None
    for record in data.hidden_constraints:
        for t in record.trigger_keywords:
            p = _v1_normalise(t)
            s = 0.7 * fuzz.token_set_ratio(q, p) + 0.3 * fuzz.token_sort_ratio(q, p)
            if s > best:
                best, best_id = s, record.constraint_id
    return best_id if best >= 62.0 else None


def extract_one(data: OracleData) -> Callable[[str], str | None]:
    phrases = [t for r in data.hidden_constraints for t in r.trigger_keywords]
    owner = [r.constraint_id for r in data.hidden_constraints for _ in r.trigger_keywords]

    def best(question: str) -> str | None:
        hit = process.extractOne(question, phrases, scorer=fuzz.token_set_ratio)
        return owner[hit[2]] if hit else None

    return best


# --- measuring ---------------------------------------------------------------------------------


def per_question_ms(fn: Callable[[str], object], questions: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        matching._units.cache_clear()  # each pass meets the questions as new text
        started = time.perf_counter()
        for q in questions:
            fn(q)
        best = min(best, time.perf_counter() - started)
    return 1000 * best / len(questions)


def index_ms(build: Callable[[], OracleData], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        data = build()  # a fresh object: the index is cached per object
        matching._units.cache_clear()
        started = time.perf_counter()
        prepare(data)
        best = min(best, time.perf_counter() - started)
    return 1000 * best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n, nq, repeat = args.records, args.questions, args.repeat

    print(f"{n} records, {nq} questions, best of {repeat} passes; ms per question")
    print(f"{'level':<10} {'matcher':>9} {'v1':>9} {'extractOne':>11} {'index build':>12}")
    for name, make in (("2 phrases", two_phrases), ("6 phrases", six_phrases)):
        data, questions = make(n, nq)
        prepare(data)
        ours = per_question_ms(lambda q, d=data: match(q, d), questions, repeat)
        v1 = per_question_ms(lambda q, d=data: v1_match(q, d), questions, repeat)
        naive = per_question_ms(extract_one(data), questions, repeat)
        build = index_ms(lambda m=make: m(n, nq)[0], repeat)
        print(f"{name:<10} {ours:>9.3f} {v1:>9.3f} {naive:>11.3f} {build:>9.1f} ms")


if __name__ == "__main__":
    main()
