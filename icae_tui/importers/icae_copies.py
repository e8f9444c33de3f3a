"""Records copied from another task: a level whose task-specific records (or whose PRD) are
another alias's, word for word (texts of at least MIN_CHARS). Such a level would have the simulated user reveal another
task's constraints, so its task is not imported; the first alias (in ICAE's order) that has
the text keeps it. Generic records (ARCH…, HARNESS…, TC_…) are the same in every task by
design and are not compared."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from icae_tui.domain.task import generic_record
from icae_tui.importers.icae_layout import Difficulty
from icae_tui.importers.problems import Problem, Severity

SHOWN_PER_FILE = 3  # copied records named per level file, the rest counted
# A text shorter than this may be the same in two tasks by chance ("Output JSON."): only a
# longer one, repeated word for word, is taken for a copy.
MIN_CHARS = 60


@dataclass(frozen=True)
class LevelText:
    """What is compared of one alias's level."""

    alias: str
    difficulty: Difficulty
    file: str  # as problems name it
    data: dict[str, Any]


def _digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def _records(data: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(index, id, response) of the level's task-specific records."""
    oracle = data.get("oracle_data")
    records = oracle.get("hidden_constraints") if isinstance(oracle, dict) else None
    out = []
    for i, r in enumerate(records if isinstance(records, list) else []):
        if not isinstance(r, dict):
            continue
        rid, response = r.get("constraint_id"), r.get("oracle_response")
        task_record = isinstance(rid, str) and not generic_record(rid)
        if task_record and isinstance(response, str) and len(response.strip()) >= MIN_CHARS:
            out.append((i, str(rid), response))
    return out


def copied_records(levels: Iterable[LevelText]) -> dict[str, list[Problem]]:
    """By alias, the ERROR of each level that repeats an earlier alias's record or PRD.
    `levels` in ICAE's alias order."""
    owners: dict[str, tuple[str, str, str]] = {}  # digest → (alias, file, what)
    found: dict[str, list[Problem]] = {}
    for level in levels:
        copies: list[tuple[str, str]] = []  # (field, message)
        prd = level.data.get("fuzzy_prd")
        if isinstance(prd, str) and len(prd.strip()) >= MIN_CHARS:
            key = "prd:" + _digest(prd)
            owner = owners.setdefault(key, (level.alias, level.file, "fuzzy_prd"))
            if owner[0] != level.alias:
                copies.append(("fuzzy_prd", f"copied from another task: {owner[0]}'s PRD "
                                            f"({owner[1]})"))  # fmt: skip
        for i, rid, response in _records(level.data):
            key = "record:" + _digest(response)
            owner = owners.setdefault(key, (level.alias, level.file, rid))
            if owner[0] != level.alias:
                copies.append((f"oracle_data.hidden_constraints[{i}]",
                               f"copied from another task: {rid} is {owner[0]}'s {owner[2]} "
                               f"({owner[1]}), word for word"))  # fmt: skip
        if not copies:
            continue
        problems = found.setdefault(level.alias, [])
        for where, message in copies[:SHOWN_PER_FILE]:
            problems.append(Problem(Severity.ERROR, level.file, where, message))
        if len(copies) > SHOWN_PER_FILE:
            problems.append(Problem(Severity.ERROR, level.file, "oracle_data.hidden_constraints",
                                    f"and {len(copies) - SHOWN_PER_FILE} more copied records"))  # fmt: skip
    return found
