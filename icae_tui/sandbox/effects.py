"""Effective file-system side effects of one case, as every backend records them.

A backend finds what changed in a box (the docker backend: its writable layer seen from
the host, or the engine's `/changes` plus a manifest) as `path → (added|modified|deleted,
entry)`; this turns that into the FileChange records a case keeps. Engine noise and the
task's ignore globs are filtered; paths inside the work directory are reported relative to
it, the rest absolute.

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

from icae_tui.domain.results import ChangeKind, EntryType, FileChange

Entry = tuple[str, int, int, str, str]  # type, mode, size, sha256, link target
Change = tuple[ChangeKind, Entry]  # what happened to a path, and its entry after

DEFAULT_IGNORE = ("*/__pycache__", "*/__pycache__/*", "*.pyc")
# Changes kept per side and case. A delivery that creates files until its timeout finds
# 10⁵ of them per case; past the cap they are counted and digested, not listed. 200 entries
# are ~40 KiB of JSON with 30-character paths: enough to show what happened, small enough
# that a flood of cases cannot swell the store or the report.
CHANGES_CAP = 200
# Bytes of JSON of the kept entries: long paths (deep trees have no length limit) fill it
# before CHANGES_CAP does.
CHANGES_JSON_CAP = 64 * 1024


_ENTRY_TYPES: dict[str, EntryType] = {"file": "file", "dir": "dir", "link": "link"}


def _ignored(path: str, ignore: Iterable[str], noise: frozenset[str]) -> bool:
    """On the raw container path (see the module's note on names)."""
    return path in noise or any(fnmatch.fnmatchcase(path, g) for g in ignore)


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
    diff: dict[str, Change],
    *,
    workdir: str,
    ignore: Iterable[str] = (),
    noise: frozenset[str] = frozenset(),
) -> FileChanges:
    """The effective changes, work directory first then by path (the task's own files lead,
    and the same set always keeps the same entries); at most CHANGES_CAP entries and
    CHANGES_JSON_CAP bytes of them are kept, `total` and `sha256` cover them all. `noise`:
    paths the engine itself writes (its backend knows them)."""
    globs = (*DEFAULT_IGNORE, *ignore)
    rows: list[tuple[str, ChangeKind, EntryType, str, str, int]] = []  # the effect key, size
    for path, (kind, (etype, _mode, size, digest, target)) in diff.items():
        if _ignored(path, globs, noise) or path == workdir.rstrip("/"):
            continue
        deleted = kind == "deleted"
        rows.append((
            text_form(_display_path(path, workdir)),
            kind,
            _ENTRY_TYPES.get(etype, "other"),
            "" if deleted or etype == "dir" else digest,
            "" if deleted else text_form(target),
            0 if deleted else size,
        ))  # fmt: skip
    # work-directory paths (relative) before absolute ones, then by path
    rows.sort(key=lambda r: (r[0].startswith("/"), r[0]))
    kept: list[FileChange] = []
    room = CHANGES_JSON_CAP
    for path, kind, etype, digest, target, size in rows[:CHANGES_CAP]:
        change = FileChange(
            path=path, change=kind, type=etype, sha256=digest, size=size, target=target
        )
        room -= len(change.model_dump_json().encode())
        if room < 0:
            break
        kept.append(change)
    return FileChanges(kept, total=len(rows), sha256=_digest(r[:5] for r in rows))
