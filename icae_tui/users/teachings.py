"""The operator's teachings of the simulated user: `user_agent/teachings.jsonl` of a task.

When the simulated user fell back and a human answered, the operator may attach the
question as a new trigger phrase of the record the answer came from. Such a teaching is
stored here *pending*; `icae tasks teach TASK` accepts or drops it; only an accepted one is
used by the matcher (`users/teaching.py`), from the next run on.

The file is an append-only log, one JSON object a line, never rewritten:

    {"kind": "taught", "id": 1, "level": "L1", "record_id": "C001", "phrase": "...",
     "who": "alice", "when": "2026-12-04T14:00:00+00:00", "run_id": "...",
     "question_id": 3, "answer": "the operator's answer, for the review"}
    {"kind": "reviewed", "id": 1, "status": "accepted", "who": "bob", "when": "..."}

A teaching's status is its last review (none: pending). Appending only — each line one
write, flushed and synced, under an exclusive lock — means a console that quits, or two
consoles at once, lose nothing, and the file is its own audit trail. A line that is not
one of these raises `TeachingsError` naming the file and the line.
"""

from __future__ import annotations

import fcntl
import getpass
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from icae_tui.domain.task import Level
from icae_tui.errors import ConfigError
from icae_tui.util.documents import TooDeep, load_json

TEACHINGS_FILE = "teachings.jsonl"  # in the task's user_agent/ folder
MAX_PHRASE_CHARS = 500
KIND_WANTED = 'field \'kind\': "taught" or "reviewed"'


class TeachingStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    DROPPED = "dropped"


class TeachingsError(ConfigError):
    """The teachings file is malformed (or unreadable). The message names file and line."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        where = f"{path}: line {line}" if line else str(path)
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.message = path, line, message


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(ge=1)
    who: str
    when: str


class Taught(_Line):
    kind: Literal["taught"] = "taught"
    level: Level
    record_id: str = Field(min_length=1)
    phrase: str = Field(min_length=1, max_length=MAX_PHRASE_CHARS)
    run_id: str = ""
    question_id: int | None = None
    answer: str = ""


class Reviewed(_Line):
    kind: Literal["reviewed"] = "reviewed"
    status: TeachingStatus

    @field_validator("status")
    @classmethod
    def _decided(cls, status: TeachingStatus) -> TeachingStatus:
        if status is TeachingStatus.PENDING:
            raise ValueError("a review accepts or drops")
        return status


_LINE: TypeAdapter[Taught | Reviewed] = TypeAdapter(
    Annotated[Taught | Reviewed, Field(discriminator="kind")]
)


@dataclass(frozen=True)
class Teaching:
    """A taught phrase with its current status and who last reviewed it, when."""

    taught: Taught
    status: TeachingStatus = TeachingStatus.PENDING
    reviewed_by: str = ""
    reviewed_at: str = ""

    @property
    def id(self) -> int:
        return self.taught.id


def teachings_path(task_root: Path) -> Path:
    return Path(task_root) / "user_agent" / TEACHINGS_FILE


def operator_name() -> str:
    """Who is at the console: the login name, else "operator" (a container may have none)."""
    try:
        return getpass.getuser() or "operator"
    except (OSError, KeyError):
        return "operator"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _where(err: ValidationError) -> str:
    first = err.errors()[0]
    # the first place of a tagged union's error is the tag ("taught"): not a field
    field = ".".join(str(p) for p in first["loc"][1:])
    return f"field {field!r}: {first['msg']}" if field else first["msg"]


def _parse(path: Path, text: str) -> list[Teaching]:
    by_id: dict[int, Teaching] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = load_json(raw)
        except TooDeep as err:
            raise TeachingsError(path, number, str(err)) from None
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise TeachingsError(path, number, "not a JSON object")
        try:
            line = _LINE.validate_python(obj)
        except ValidationError as err:
            if {e["type"] for e in err.errors()} & {"union_tag_invalid", "union_tag_not_found"}:
                raise TeachingsError(path, number, KIND_WANTED) from None
            raise TeachingsError(path, number, _where(err)) from None
        if isinstance(line, Taught):
            if line.id in by_id:
                raise TeachingsError(path, number, f"teaching #{line.id} is taught twice")
            by_id[line.id] = Teaching(line)
        else:
            known = by_id.get(line.id)
            if known is None:
                raise TeachingsError(
                    path, number, f"reviews teaching #{line.id}, not taught before"
                )
            by_id[line.id] = replace(known, status=line.status,
                                     reviewed_by=line.who, reviewed_at=line.when)  # fmt: skip
    return list(by_id.values())


def load_teachings(task_root: Path) -> list[Teaching]:
    """Every teaching of the task, in the order taught (no file: none)."""
    path = teachings_path(task_root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as err:
        raise TeachingsError(path, 0, f"cannot read: {err}") from None
    return _parse(path, text)


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    """The file open for appending, under an exclusive lock (another console waits)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as err:
        raise TeachingsError(path, 0, f"cannot write: {err.strerror or err}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _read(fd: int, path: Path) -> list[Teaching]:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    try:
        return _parse(path, b"".join(chunks).decode("utf-8"))
    except UnicodeDecodeError as err:
        raise TeachingsError(path, 0, f"not UTF-8: {err}") from None


def _append(fd: int, path: Path, lines: Iterable[BaseModel], ends_clean: bool) -> None:
    data = "".join(line.model_dump_json(exclude_defaults=False) + "\n" for line in lines)
    if not ends_clean:
        data = "\n" + data  # the last line lacks its newline: ours start a line of their own
    try:
        os.write(fd, data.encode("utf-8"))
        os.fsync(fd)  # taught is kept: a console that quits now loses nothing
    except OSError as err:
        raise TeachingsError(path, 0, f"cannot write: {err.strerror or err}") from None


def _ends_clean(fd: int) -> bool:
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return True
    return os.pread(fd, 1, size - 1) == b"\n"


def normal_phrase(phrase: str) -> str:
    """A phrase as compared for duplicates: case and spacing do not count."""
    return " ".join(phrase.split()).casefold()


def teach(
    task_root: Path,
    *,
    level: Level,
    record_id: str,
    phrase: str,
    run_id: str = "",
    question_id: int | None = None,
    answer: str = "",
    who: str | None = None,
    now: Callable[[], str] = _now,
) -> tuple[Teaching, bool]:
    """Store a pending teaching; returns it and True, or — when the same phrase is already
    taught to that record at that level and not dropped — that one and False."""
    phrase = " ".join(phrase.split())[:MAX_PHRASE_CHARS]
    if not phrase:
        raise ValueError("an empty phrase teaches nothing")
    path = teachings_path(task_root)
    with _locked(path) as fd:
        known = _read(fd, path)
        for t in known:
            same = (t.taught.level, t.taught.record_id, normal_phrase(t.taught.phrase))
            if t.status is not TeachingStatus.DROPPED and same == (
                level, record_id, normal_phrase(phrase)
            ):  # fmt: skip
                return t, False
        line = Taught(
            id=max((t.id for t in known), default=0) + 1, who=who or operator_name(), when=now(),
            level=level, record_id=record_id, phrase=phrase, run_id=run_id,
            question_id=question_id, answer=answer[:MAX_PHRASE_CHARS * 4],
        )  # fmt: skip
        _append(fd, path, [line], _ends_clean(fd))
    return Teaching(line), True


class UnknownTeaching(ConfigError):
    """A review named a teaching the file does not have."""


def review(
    task_root: Path,
    decisions: dict[int, TeachingStatus],
    *,
    who: str | None = None,
    now: Callable[[], str] = _now,
) -> list[Teaching]:
    """Accept or drop teachings by id, all or none (an unknown id changes nothing); a
    teaching already in that status is left as it is. Returns them as they now are."""
    path = teachings_path(task_root)
    if not path.is_file():
        raise UnknownTeaching(f"{path}: no teachings (none taught yet)")
    with _locked(path) as fd:
        known = {t.id: t for t in _read(fd, path)}
        if missing := sorted(set(decisions) - set(known)):
            raise UnknownTeaching(f"{path}: no teaching {', '.join(f'#{i}' for i in missing)}")
        stamp, reviewer = now(), who or operator_name()
        lines = [
            Reviewed(id=i, who=reviewer, when=stamp, status=status)
            for i, status in sorted(decisions.items())
            if status is not TeachingStatus.PENDING and known[i].status is not status
        ]
        if lines:
            _append(fd, path, lines, _ends_clean(fd))
        for line in lines:
            known[line.id] = replace(known[line.id], status=line.status,
                                     reviewed_by=line.who, reviewed_at=line.when)  # fmt: skip
    return [known[i] for i in sorted(decisions)]
