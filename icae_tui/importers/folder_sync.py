"""A task folder written so that writing it again with the same files changes nothing.

The import owns some of a task folder (`MANAGED`: task.toml, the PRDs, the user-agent data,
the cases, the oracle and what it kept of the source); a file there that the import does not
give again is removed. The rest (solutions/, recordings/, tools/) is the user's and is left
alone. A file is rewritten only when its bytes (or, for a copied file, its mode) differ. No
link in the managed part is followed: a write or a removal never leaves the task folder. A
`Link` is written as a symbolic link (its target as given: the caller keeps it inside).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
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
class Link:
    """A symbolic link to write, e.g. a golden repository's workspace member."""

    target: str


Content = bytes | Path | Link


@dataclass(frozen=True)
class Synced:
    change: Change
    written: int
    removed: int


def _same(path: Path, content: Content) -> bool:
    if isinstance(content, Link):
        return path.is_symlink() and os.readlink(path) == content.target
    if not path.is_file() or path.is_symlink():
        return False
    if isinstance(content, Path):
        ours, theirs = path.stat(), content.stat()
        if ours.st_size != theirs.st_size or stat.S_IMODE(ours.st_mode) != stat.S_IMODE(
            theirs.st_mode
        ):
            return False
        content = content.read_bytes()
    return path.read_bytes() == content


def _real_folders(folder: Path, path: Path) -> None:
    """The folders from `folder` down to `path`'s, none of them a link (a link there would
    have the write land outside the task folder): a link is removed, the folder made."""
    current = folder
    for part in path.relative_to(folder).parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
        current.mkdir(exist_ok=True)


def _write(folder: Path, path: Path, content: Content) -> None:
    _real_folders(folder, path)
    if path.is_symlink() or path.is_dir():
        path.unlink() if path.is_symlink() else shutil.rmtree(path)
    elif path.exists():
        path.unlink()  # a file a link replaces
    if isinstance(content, Link):
        path.symlink_to(content.target)
    elif isinstance(content, Path):
        shutil.copyfile(content, path)
        shutil.copymode(content, path)
    else:
        path.write_bytes(content)


def sync_folder(folder: Path, files: Mapping[str, Content]) -> Synced:
    """Make the managed part of `folder` hold exactly `files` (relative path → bytes, the
    file to copy, or a link)."""
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    written = removed = 0
    for name in (*MANAGED_FILES, *MANAGED_FOLDERS):
        if (folder / name).is_symlink():  # never followed: the walk below would leave the folder
            (folder / name).unlink()
    for rel, content in files.items():
        path = folder / rel
        if not _same(path, content):
            _write(folder, path, content)
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
