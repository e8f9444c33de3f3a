"""Stdout comparators: EM after whitespace normalisation, FM by normalised similarity."""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

_SPACES = re.compile(r"[ \t\r\f\v]+")


def normalise_whitespace(text: str) -> str:
    """Runs of blanks become one space; lines are stripped; blank lines at the ends dropped."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def exact_match(expected: str, actual: str) -> bool:
    return normalise_whitespace(expected) == normalise_whitespace(actual)


def fuzzy_score(expected: str, actual: str) -> float:
    """Normalised Levenshtein similarity in [0, 1] on whitespace-normalised text."""
    a, b = normalise_whitespace(expected), normalise_whitespace(actual)
    if not a and not b:
        return 1.0
    return Levenshtein.normalized_similarity(a, b)
