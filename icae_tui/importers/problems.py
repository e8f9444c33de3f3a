"""What an import found wrong or noteworthy in a source tree, each with its file and field."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"  # the task is not imported (an earlier import of it is left as it was)
    WARNING = "warning"  # imported, the data is odd: the message says how it is taken
    NOTE = "note"  # how the task was imported (e.g. what its cases are judged against)


@dataclass(frozen=True)
class Problem:
    severity: Severity
    file: str  # relative to the source tree (absolute when outside it)
    field: str  # a path into the file's JSON (`cases[2].expected_output`), "" for the file
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: field '{self.field}'" if self.field else self.file
        return f"{self.severity.value}: {where}: {self.message}"


def field_path(loc: tuple[int | str, ...], prefix: str = "") -> str:
    """A pydantic error's location as a JSON path: `oracle_data.hidden_constraints[3].x`."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def errors_in(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity is Severity.ERROR]
