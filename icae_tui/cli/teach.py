"""`icae tasks teach TASK`: the review list of the operator's teachings of a task.

With no option it lists them (pending first) and, at a terminal, asks about each pending
one in turn — accept, drop, skip or quit — each decision written as it is made, so quitting
loses none. `--accept 1,3` / `--drop 2` decide without asking (all or none: an unknown id,
an id both accepted and dropped, or a teaching whose record the level no longer has changes
nothing). Exit 0; 1 when the teachings file is malformed or cannot be written; 2 for bad
usage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from icae_tui.domain.task import Level, Task
from icae_tui.users.teachings import (
    Teaching,
    TeachingsError,
    TeachingStatus,
    UnknownTeaching,
    load_teachings,
    review,
    teachings_path,
)
from icae_tui.util.safe_text import printable

PHRASE_SHOWN = 90  # characters of a phrase or an answer in the listing
_ID = re.compile(r"#?(\d+)")


class Exit(IntEnum):
    OK = 0
    BROKEN = 1  # the file is malformed or cannot be written
    USAGE = 2


class Choice(IntEnum):
    ACCEPT = 1
    DROP = 2
    SKIP = 3
    QUIT = 4


ANSWERS = {"a": Choice.ACCEPT, "d": Choice.DROP, "s": Choice.SKIP, "": Choice.SKIP,
           "q": Choice.QUIT}  # fmt: skip
PROMPT = "  [a]ccept, [d]rop, [s]kip, [q]uit? "


def parse_ids(values: Iterable[str] | None) -> set[int]:
    """`["1,2", "#3"]` -> {1, 2, 3}; anything else raises ValueError."""
    out: set[int] = set()
    for value in values or ():
        for part in value.replace(",", " ").split():
            m = _ID.fullmatch(part)
            if m is None:
                raise ValueError(f"not a teaching id: {part!r} (ids are numbers: 1,2)")
            out.add(int(m.group(1)))
    return out


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PHRASE_SHOWN else text[: PHRASE_SHOWN - 1] + "…"


def describe(t: Teaching) -> list[str]:
    """A teaching's lines in the listing: what, then who, when and which run."""
    tt = t.taught
    head = f"#{t.id:<3} {t.status.value:<8} {tt.level.value:<6} {tt.record_id:<10} "
    head += repr(_clip(tt.phrase))
    where = f"run {tt.run_id}" + (f" Q{tt.question_id}" if tt.question_id is not None else "")
    by = f"      taught by {tt.who} at {tt.when}, {where}"
    if t.status is not TeachingStatus.PENDING:
        by += f"; {t.status.value} by {t.reviewed_by} at {t.reviewed_at}"
    lines = [head, by]
    if tt.answer:
        lines.append(f"      answered: {_clip(tt.answer)!r}")
    return [printable(line) for line in lines]


def _level_records(task: Task) -> dict[Level, set[str]]:
    return {level: {r.constraint_id for r in ua.oracle_data.hidden_constraints}
            for level, ua in task.user_agent.items()}  # fmt: skip


def _orphan(t: Teaching, records: dict[Level, set[str]]) -> bool:
    return t.taught.record_id not in records.get(t.taught.level, set())


@dataclass
class Io:
    out: Callable[[str], None]
    err: Callable[[str], None]
    ask: Callable[[str], str] | None  # None: not at a terminal, never ask


def run(task: Task, accept: set[int], drop: set[int], io: Io) -> Exit:
    root = Path(task.root)
    try:
        teachings = load_teachings(root)
    except TeachingsError as err:
        io.err(f"error: {printable(str(err))}")
        return Exit.BROKEN
    records = _level_records(task)
    if accept or drop:
        return _decide(task, teachings, records, accept, drop, io)
    if not teachings:
        io.out(f"{task.id}: no teachings ({teachings_path(root)})")
        return Exit.OK
    pending = [t for t in teachings if t.status is TeachingStatus.PENDING]
    counts = {s: sum(t.status is s for t in teachings) for s in TeachingStatus}
    io.out(f"{task.id}: " + ", ".join(f"{n} {s.value}" for s, n in counts.items())
           + f" ({teachings_path(root)})")  # fmt: skip
    for t in sorted(teachings, key=lambda t: (t.status is not TeachingStatus.PENDING, t.id)):
        io.out("\n".join(describe(t)))
        if _orphan(t, records):
            io.out(f"      the level {t.taught.level.value} has no record {t.taught.record_id}")
    if not pending:
        return Exit.OK
    if io.ask is None:
        io.out(f"decide with: icae tasks teach {task.id} --accept ID,... --drop ID,...")
        return Exit.OK
    return _interactive(task, pending, records, io, io.ask)


def _interactive(
    task: Task,
    pending: list[Teaching],
    records: dict[Level, set[str]],
    io: Io,
    ask: Callable[[str], str],
) -> Exit:
    io.out("")
    for t in pending:
        io.out("\n".join(describe(t)))
        while True:
            try:
                said = ask(PROMPT).strip().lower()[:1]
            except EOFError:
                return Exit.OK
            choice = ANSWERS.get(said)
            if choice is not None:
                break
            io.out("  a, d, s or q")
        if choice is Choice.QUIT:
            return Exit.OK
        if choice is Choice.SKIP:
            continue
        if choice is Choice.ACCEPT and _orphan(t, records):
            io.err(f"  not accepted: the level {t.taught.level.value} has no record "
                   f"{t.taught.record_id}")  # fmt: skip
            continue
        status = TeachingStatus.ACCEPTED if choice is Choice.ACCEPT else TeachingStatus.DROPPED
        try:
            review(Path(task.root), {t.id: status})
        except TeachingsError as err:
            io.err(f"error: {printable(str(err))}")
            return Exit.BROKEN
        io.out(f"  {status.value}")
    return Exit.OK


def _decide(
    task: Task,
    teachings: list[Teaching],
    records: dict[Level, set[str]],
    accept: set[int],
    drop: set[int],
    io: Io,
) -> Exit:
    if both := sorted(accept & drop):
        io.err(f"error: accepted and dropped at once: {', '.join(f'#{i}' for i in both)}")
        return Exit.USAGE
    by_id = {t.id: t for t in teachings}
    orphans = [by_id[i] for i in sorted(accept) if i in by_id and _orphan(by_id[i], records)]
    if orphans:
        for t in orphans:
            io.err(f"error: #{t.id} cannot be accepted: the level {t.taught.level.value} has "
                   f"no record {t.taught.record_id} (drop it)")  # fmt: skip
        return Exit.USAGE
    decisions = {i: TeachingStatus.ACCEPTED for i in accept}
    decisions |= {i: TeachingStatus.DROPPED for i in drop}
    try:
        done = review(Path(task.root), decisions)
    except UnknownTeaching as err:
        io.err(f"error: {printable(str(err))}")
        return Exit.USAGE
    except TeachingsError as err:
        io.err(f"error: {printable(str(err))}")
        return Exit.BROKEN
    for t in done:
        io.out(f"{t.status.value} #{t.id}: {t.taught.level.value} {t.taught.record_id} ← "
               f"{printable(repr(_clip(t.taught.phrase)))}")  # fmt: skip
    return Exit.OK
