"""A task folder written so that writing it again with the same files changes nothing.

The import owns some of a task folder (`MANAGED`: task.toml, the PRDs, the user-agent data,
the cases, the oracle and what it kept of the source); a file there that the import does not
give again is removed. The rest (solutions/, recordings/, tools/) is the user's and is left
alone. A file is rewritten only when its bytes differ.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

MANAGED_FILES = ("task.toml",)
MANAGED_FOLDERS = ("prd", "user_agent", "cases", "oracle", "origin")


class Change(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Synced:
    change: Change
    written: int
    removed: int


def _same(path: Path, content: bytes | Path) -> bool:
    if not path.is_file() or path.is_symlink():
        return False
    if isinstance(content, Path):
        if path.stat().st_size != content.stat().st_size:
            return False
        content = content.read_bytes()
    return path.read_bytes() == content


def _write(path: Path, content: bytes | Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_dir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if isinstance(content, Path):
        shutil.copyfile(content, path)
        shutil.copymode(content, path)
    else:
        path.write_bytes(content)


def sync_folder(folder: Path, files: dict[str, bytes | Path]) -> Synced:
    """Make the managed part of `folder` hold exactly `files` (relative path → bytes, or the
    file to copy)."""
    created = not folder.exists()
    written = removed = 0
    for rel, content in files.items():
        path = folder / rel
        if not _same(path, content):
            _write(path, content)
            written += 1
    wanted = set(files)
    for name in MANAGED_FOLDERS:
        top = folder / name
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*"), reverse=True):  # deepest first
            rel = path.relative_to(folder).as_posix()
            if path.is_dir() and not path.is_symlink():
                if not any(path.iterdir()):
                    path.rmdir()
            elif rel not in wanted:
                path.unlink()
                removed += 1
        if top.is_dir() and not any(top.iterdir()):
            top.rmdir()
    if created:
        change = Change.CREATED
    else:
        change = Change.UPDATED if written or removed else Change.UNCHANGED
    return Synced(change, written, removed)
