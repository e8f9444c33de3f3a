"""Effective file-system side effects of one case, over the whole container.

Two sources, one result:
- fast path: the container's writable layer before and after the case (`HostView.layer`);
  a copy-up that left content and mode as they were in the image is no change;
- fallback (remote engine): the engine's `/changes` list, then a manifest of just those
  paths computed inside the container.
Engine noise and the task's ignore globs are filtered; paths inside the work directory are
reported relative to it, the rest absolute.

Names are bytes: what is stored, shown and compared is their `text_form`, which tells any
two apart (the byte 0xff is `\\xff`, the four characters `\\xff` are `\\\\xff`) and holds
no control character (a newline is `\\x0a`: a path in a one-line reason stays one line).
The ignore globs match the raw name (as `os` gives it: a byte that is not UTF-8 is one
surrogate character, which `*` and `?` match like any other), never the escaped text: a
glob's `\\` is a real backslash, and `*.log` ignores `bad\\xff.log` whatever its bytes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable

from icae_tui.domain.results import FileChange
from icae_tui.sandbox.hostview import ENGINE_NOISE, Budget, Entry, HostView

DEFAULT_IGNORE = ("*/__pycache__", "*/__pycache__/*", "*.pyc")
# Changes kept per side and case. A delivery that creates files until its timeout finds
# 10⁵ of them per case; past the cap they are counted and digested, not listed. 200 entries
# are ~40 KiB of JSON with 30-character paths: enough to show what happened, small enough
# that a flood of cases cannot swell the store or the report.
CHANGES_CAP = 200
# Bytes of JSON of the kept entries: long paths (deep trees have no length limit) fill it
# before CHANGES_CAP does.
CHANGES_JSON_CAP = 64 * 1024


def _lower_entry(view: HostView, path: str, budget: Budget) -> Entry | None:
    """What the image had at `path`: looked up in its layers as overlayfs merges them,
    never through a link the image holds (see `hostview.lower_lookup`)."""
    return view.lower_entry(path, budget)


def layer_diff(
    view: HostView, before: dict[str, Entry], after: dict[str, Entry]
) -> dict[str, tuple[str, Entry]]:
    """path → (added|modified|deleted, entry after) for every effective change."""
    out: dict[str, tuple[str, Entry]] = {}
    budget = Budget()  # one hashing budget for all the image files this diff looks at
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
            base = _lower_entry(view, path, budget)
        if base is None:
            out[path] = ("added", new)
        elif new[0] == "dir" and base[0] == "dir":
            if new[1] != base[1]:
                out[path] = ("modified", new)
        elif new != base:
            out[path] = ("modified", new)
    return out


def _ignored(path: str, ignore: Iterable[str]) -> bool:
    """On the raw container path (see the module's note on names)."""
    return path in ENGINE_NOISE or any(fnmatch.fnmatchcase(path, g) for g in ignore)


def _display_path(path: str, workdir: str) -> str:
    prefix = workdir.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


class FileChanges(list[FileChange]):
    """The changes kept for the record, with the count and the digest of all of them."""

    def __init__(self, kept: Iterable[FileChange] = (), *, total: int = 0, sha256: str = ""):
        super().__init__(kept)
        self.total = total
        self.sha256 = sha256


# What comparison looks at: path, change, type, content digest, link target (the size is
# implied by the content digest).
_EffectKey = tuple[str, str, str, str, str]


def _digest(keys: Iterable[_EffectKey]) -> str:
    h = hashlib.sha256()
    for key in sorted(keys):
        # Every field NUL-terminated (no path or target holds a NUL): unambiguous.
        h.update("".join(f + "\0" for f in key).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def changes_digest(changes: Iterable[FileChange]) -> str:
    """sha256 of every change's effect key in sorted order: two sides with the same changes,
    however many, have the same digest, whatever was kept of them."""
    return _digest((c.path, c.change, c.type, c.sha256, c.target) for c in changes)


# Characters that end or move a line on a terminal: escaped in a stored name, so a path in
# a one-line reason stays one line (a name `x\nPASS …` cannot forge a trace line).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_control(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def text_form(name: str) -> str:
    """A file name (or link target) as `os` gives it, as text that names it alone: a
    backslash becomes `\\\\`, each byte that is not UTF-8 (a surrogate escape) `\\xNN`
    (NN ≥ 80), a control character `\\xNN` (NN < 80) or `\\uNNNN` (C1, U+2028, U+2029).
    So a single backslash always starts an escape, and two different names never give the
    same text (without the first rule the name `bad\\xff` and the byte 0xff would)."""
    text = _CONTROL.sub(_escape_control, name.replace("\\", "\\\\"))
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def to_file_changes(
    diff: dict[str, tuple[str, Entry]], *, workdir: str, ignore: Iterable[str] = ()
) -> FileChanges:
    """The effective changes, work directory first then by path (the task's own files lead,
    and the same set always keeps the same entries); at most CHANGES_CAP entries and
    CHANGES_JSON_CAP bytes of them are kept, `total` and `sha256` cover them all."""
    globs = (*DEFAULT_IGNORE, *ignore)
    rows: list[tuple[str, str, str, str, str, int]] = []  # the effect key, then the size
    for path, (kind, (etype, _mode, size, digest, target)) in diff.items():
        if _ignored(path, globs) or path == workdir.rstrip("/"):
            continue
        deleted = kind == "deleted"
        rows.append((
            text_form(_display_path(path, workdir)),
            kind,
            etype if etype in ("file", "dir", "link") else "other",
            "" if deleted or etype == "dir" else digest,
            "" if deleted else text_form(target),
            0 if deleted else size,
        ))  # fmt: skip
    # work-directory paths (relative) before absolute ones, then by path
    rows.sort(key=lambda r: (r[0].startswith("/"), r[0]))
    kept: list[FileChange] = []
    room = CHANGES_JSON_CAP
    for path, kind, etype, digest, target, size in rows[:CHANGES_CAP]:
        change = FileChange(path=path, change=kind, type=etype, sha256=digest, size=size,  # type: ignore[arg-type]
                            target=target)  # fmt: skip
        room -= len(change.model_dump_json().encode())
        if room < 0:
            break
        kept.append(change)
    return FileChanges(kept, total=len(rows), sha256=_digest(r[:5] for r in rows))
