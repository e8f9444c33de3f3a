"""Recorded runs shipped with tasks (`tasks/<id>/recordings/<name>.jsonl`: one stored event
a line), so a new user can watch a replay within seconds of installing, with no Docker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icae_tui.domain.events import Event, parse_event
from icae_tui.errors import ConfigError
from icae_tui.util.safe_text import lines as text_lines

FOLDER = "recordings"


class RecordingError(ConfigError, ValueError):
    pass


@dataclass(frozen=True)
class Recording:
    task_id: str
    name: str
    path: Path

    @property
    def label(self) -> str:
        return f"{self.task_id} · {self.name} (recorded)"


def bundled(task_roots: dict[str, Path]) -> list[Recording]:
    """Every recording of the given tasks (task id → task folder), by task then name."""
    out = []
    for task_id, root in sorted(task_roots.items()):
        for path in sorted((root / FOLDER).glob("*.jsonl")):
            out.append(Recording(task_id, path.stem, path))
    return out


def load(path: Path) -> list[Event]:
    """The recording's events; a broken line is an error naming the file and line."""
    events = []
    try:
        lines = text_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise RecordingError(f"{path}: cannot read: {err}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(parse_event(line))
        except ValueError as err:
            first = str(err).splitlines()[0]
            raise RecordingError(f"{path}:{number}: not a run event ({first})") from None
    return events


def dump(events: list[Event]) -> str:
    return "".join(ev.model_dump_json() + "\n" for ev in events)
