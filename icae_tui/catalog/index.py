"""The catalog's index: what listing a task needs, kept between loads so that listing hundreds
of tasks reads none of their large files.

Listing a task needs its card (title, language, counts of cases per split and pattern, record
counts, solution names) and whether it loads at all; building that means reading and
validating every case file, user-agent record and solution — seconds for a catalog of
hundreds. The index keeps, per task folder, the card and the located errors of its last full
load, under a fingerprint of every file that load read (name, size, modification time, inode
of `task.toml`, `prd/`, `user_agent/`, `cases/<split>/`, `solutions/`). A folder whose
fingerprint is unchanged is listed from the index; any change — a file edited, added or
removed — loads and validates that task again, so a malformed task is always reported when the
catalog is listed, never first at run time. The index is keyed also by the code that validates
(`SCHEMA`): a new version of the validation rules rebuilds it.

One JSON file per tasks folder in `$XDG_CACHE_HOME/icae-tui/catalogs/`, written atomically;
a missing, unreadable or foreign index is rebuilt, never an error. `ICAE_CATALOG_INDEX=0`
turns it off (every load validates everything).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icae_tui.catalog.search import Ability, PatternCount, TaskCard
from icae_tui.domain.task import Level, Split
from icae_tui.util.documents import load_json

_PACKAGE = Path(__file__).resolve().parents[1]  # icae_tui/
# The modules whose rules decide what a loaded task and its card are.
_RULES = ("catalog/loader.py", "catalog/index.py", "catalog/search.py", "domain/task.py",
          "domain/solution.py", "domain/runtimes.py")  # fmt: skip
_WATCHED = ("prd", "user_agent", "solutions")


def _schema() -> str:
    digest = hashlib.sha256()
    for name in _RULES:
        digest.update(name.encode())
        digest.update((_PACKAGE / name).read_bytes())
    return digest.hexdigest()[:16]


SCHEMA = _schema()


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("ICAE_CATALOG_INDEX", "1") != "0"


def index_path(tasks_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The index of `tasks_dir` (by its resolved path) under the user's cache folder; a
    relative or empty XDG_CACHE_HOME is ignored, as the XDG spec says."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    key = hashlib.sha256(str(tasks_dir.resolve()).encode()).hexdigest()[:20]
    return base / "icae-tui" / "catalogs" / f"{key}.json"


def _stat_rows(folder: Path, prefix: str, rows: list[str]) -> None:
    """A row per entry of `folder`: a file with its size, time and inode, a folder by name
    only (what is added inside a folder this load does not read must not count)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        rows.append(f"{prefix}/-")
        return
    for entry in entries:
        try:
            if entry.is_dir():
                rows.append(f"{prefix}/{entry.name}/")
                continue
            st = entry.stat()
        except OSError:
            rows.append(f"{prefix}/{entry.name}:?")
            continue
        rows.append(f"{prefix}/{entry.name}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")


def fingerprint(root: Path) -> str:
    """A digest of the name, size, modification time and inode of every file a full load of
    the task reads; any edit, addition or removal changes it."""
    rows: list[str] = []
    _stat_rows(root, ".", rows)  # task.toml and which parts exist
    for part in _WATCHED:
        _stat_rows(root / part, part, rows)
    for split in Split:
        _stat_rows(root / "cases" / split.value, f"cases/{split.value}", rows)
    rows.sort()
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogateescape")).hexdigest()[:32]


class PrdFiles(Mapping[Level, str]):
    """A listed task's PRDs, read from its folder when first shown (the index keeps their
    word counts, not their text)."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self.read: dict[Level, str] = {}

    def __getitem__(self, level: Level) -> str:
        if level not in self.read:
            path = self.root / "prd" / f"{level.value}.md"
            try:
                self.read[level] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                return f"(cannot read {path}: {err})"
        return self.read[level]

    def __iter__(self) -> Iterator[Level]:
        return iter(Level)

    def __len__(self) -> int:
        return len(Level)


def card_json(card: TaskCard) -> dict[str, Any]:
    return {
        "id": card.id,
        "title": card.title,
        "language": card.language,
        "summary": card.summary,
        "interface": card.interface,
        "origin": card.origin,
        "source": card.source,
        "capabilities": card.capabilities,
        "abilities": [a.value for a in card.abilities],
        "solutions": list(card.solutions),
        "budgets": {level.value: n for level, n in card.budgets.items()},
        "prd_words": {level.value: n for level, n in card.prd_word_counts.items()},
        "by_split": {split.value: n for split, n in card.by_split.items()},
        "by_pattern": [[p.pattern, p.public, p.hidden, p.enhanced] for p in card.by_pattern],
        "runtime": card.runtime,
    }


def card_from_json(data: dict[str, Any], root: str) -> TaskCard:
    return TaskCard(
        id=data["id"],
        title=data["title"],
        language=data["language"],
        summary=data["summary"],
        interface=data["interface"],
        origin=data["origin"],
        source=data["source"],
        capabilities=data["capabilities"],
        abilities=tuple(Ability(a) for a in data["abilities"]),
        root=root,
        solutions=tuple(data["solutions"]),
        prd=PrdFiles(root),
        prd_word_counts={Level(k): v for k, v in data["prd_words"].items()},
        budgets={Level(k): v for k, v in data["budgets"].items()},
        by_split={Split(k): v for k, v in data["by_split"].items()},
        by_pattern=tuple(PatternCount(*row) for row in data["by_pattern"]),
        runtime=data["runtime"],
    )


@dataclass
class Entry:
    """One task folder as its last full load found it: its card when it loaded, and the
    located errors (path relative to the tasks folder, message) it reported."""

    fingerprint: str
    card: dict[str, Any] | None
    errors: list[tuple[str, str]]


class Index:
    """The entries of one tasks folder, read once and written back when any changed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, Entry] = {}
        self.changed = False
        if path is not None:
            self.entries = _read(path)

    def hit(self, name: str, print_: str) -> Entry | None:
        entry = self.entries.get(name)
        return entry if entry is not None and entry.fingerprint == print_ else None

    def put(self, name: str, entry: Entry) -> None:
        self.entries[name] = entry
        self.changed = True

    def keep_only(self, names: set[str]) -> None:
        for gone in set(self.entries) - names:
            del self.entries[gone]
            self.changed = True

    def save(self) -> None:
        """Atomically, and only when something changed; a cache that cannot be written is
        no error (the next load validates again)."""
        if self.path is None or not self.changed:
            return
        data = {
            "schema": SCHEMA,
            "tasks": {
                name: {"fingerprint": e.fingerprint, "card": e.card, "errors": e.errors}
                for name, e in self.entries.items()
            },
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".index-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, ensure_ascii=False, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            return
        self.changed = False


def _read(path: Path) -> dict[str, Entry]:
    try:
        data = load_json(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            return {}
        return {
            name: Entry(e["fingerprint"], e["card"], [(p, m) for p, m in e["errors"]])
            for name, e in data["tasks"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # missing, torn or foreign: rebuilt
