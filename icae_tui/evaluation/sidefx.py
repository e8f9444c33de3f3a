"""Effective file-system side effects of one case, over the whole container.

Two sources, one result:
- fast path: the container's writable layer before and after the case (`HostView.layer`);
  a copy-up that left content and mode as they were in the image is no change;
- fallback (remote engine): the engine's `/changes` list, then a manifest of just those
  paths computed inside the container.
Engine noise and the task's ignore globs are filtered; paths inside the work directory are
reported relative to it, the rest absolute.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable

from icae_tui.domain.results import FileChange
from icae_tui.sandbox.hostview import ENGINE_NOISE, Entry, HostView, _entry

DEFAULT_IGNORE = ("*/__pycache__", "*/__pycache__/*", "*.pyc")


def _lower_entry(view: HostView, path: str) -> Entry | None:
    rel = path.lstrip("/")
    for lower in view.lowers:
        full = lower / rel
        try:
            st = os.lstat(full)
        except OSError:
            continue
        return _entry(str(full), st, hash_files=True)
    return None


def layer_diff(
    view: HostView, before: dict[str, Entry], after: dict[str, Entry]
) -> dict[str, tuple[str, Entry]]:
    """path → (added|modified|deleted, entry after) for every effective change."""
    out: dict[str, tuple[str, Entry]] = {}
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None:  # was in the layer (a fixture, an earlier write), now gone
            assert old is not None
            if old[0] != "deleted":
                out[path] = ("deleted", old)
            continue
        if new[0] == "deleted":
            if old is not None or view.in_lower(path):
                out[path] = ("deleted", new)
            continue
        base = old if old is not None and old[0] != "deleted" else None
        if base is None and old is None:
            base = _lower_entry(view, path)
        if base is None:
            out[path] = ("added", new)
        elif new[0] == "dir" and base[0] == "dir":
            if new[1] != base[1]:
                out[path] = ("modified", new)
        elif new != base:
            out[path] = ("modified", new)
    return out


def _ignored(path: str, ignore: Iterable[str]) -> bool:
    return path in ENGINE_NOISE or any(fnmatch.fnmatchcase(path, g) for g in ignore)


def _display_path(path: str, workdir: str) -> str:
    prefix = workdir.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def to_file_changes(
    diff: dict[str, tuple[str, Entry]], *, workdir: str, ignore: Iterable[str] = ()
) -> list[FileChange]:
    globs = (*DEFAULT_IGNORE, *ignore)
    changes = []
    for path, (kind, (etype, _mode, size, digest, target)) in sorted(diff.items()):
        if _ignored(path, globs) or path == workdir.rstrip("/"):
            continue
        deleted = kind == "deleted"
        changes.append(
            FileChange(
                path=_display_path(path, workdir),
                change=kind,  # type: ignore[arg-type]
                type=etype if etype in ("file", "dir", "link") else "other",  # type: ignore[arg-type]
                sha256="" if deleted or etype == "dir" else digest,
                size=0 if deleted else size,
                target="" if deleted else target,
            )
        )
    return changes
