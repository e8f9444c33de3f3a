"""The delivery's structure against the oracle's (ICAE-Bench's structural diagnostics).

Counted on both sides the same way: a **source file** is a regular file whose name ends in
one of the task's language's extensions (`SOURCE_EXTENSIONS`; an unknown language: every
known one), outside dependency and build folders (`SKIPPED_FOLDERS`); its **LOC** are its
non-blank lines; a **folder** counts when it holds a source file (the root too).

File% = 100 · delivery files / reference files and LOC% = 100 · delivery LOC / reference
LOC, where the reference is the original's recorded size for an ICAE-EVAL import
(`[origin] size_files`, `size_loc`) and the task's `oracle/` folder otherwise.

**Monolith**: every source line of the delivery in one file while the reference has more
than one source file; with no reference to compare, one source file of more than
MONOLITH_LOC lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from icae_tui.domain.diagnostics import Structure, TreeStats
from icae_tui.domain.runtimes import ALIASES
from icae_tui.domain.task import Task
from icae_tui.sandbox.tree import TreeBounds, TreeEntry, TreeRead, walk_folder

MONOLITH_LOC = 500
SOURCE_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "python": (".py",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".tsx", ".mts", ".cts", ".js", ".mjs"),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "ruby": (".rb",),
    "php": (".php",),
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h"),
    "shell": (".sh", ".bash"),
}
ALL_EXTENSIONS = tuple(sorted({e for exts in SOURCE_EXTENSIONS.values() for e in exts}))
SKIPPED_FOLDERS = frozenset({
    "node_modules", "__pycache__", ".git", ".venv", "venv", "target", "dist", "build",
    ".mypy_cache", ".pytest_cache", ".tox", "vendor",
})  # fmt: skip


def language_key(language: str) -> str:
    low = language.strip().lower()
    return ALIASES.get(low, low)


def extensions_for(language: str) -> tuple[str, ...]:
    return SOURCE_EXTENSIONS.get(language_key(language), ALL_EXTENSIONS)


def is_source(path: str, extensions: tuple[str, ...]) -> bool:
    parts = path.split("/")
    if any(p in SKIPPED_FOLDERS for p in parts[:-1]):
        return False
    return parts[-1].endswith(extensions)


def count_loc(data: bytes) -> tuple[int, int]:
    """(non-blank lines, lines) of a file's bytes."""
    lines = data.splitlines()
    return sum(1 for line in lines if line.strip()), len(lines)


def tree_stats(entries: Iterable[TreeEntry], extensions: tuple[str, ...]) -> TreeStats:
    stats = TreeStats()
    folders: set[str] = set()
    for entry in entries:
        if entry.kind != "file":
            continue
        if not is_source(entry.path, extensions):
            stats.other_files += 1
            continue
        loc, lines = count_loc(entry.head or b"")
        stats.files += 1
        stats.loc += loc
        stats.lines += lines
        folders.add(entry.path.rpartition("/")[0])
        if loc > stats.largest_loc or not stats.largest_file:
            stats.largest_file, stats.largest_loc = entry.path, loc
    stats.folders = len(folders)
    return stats


def oracle_tree(task: Task, bounds: TreeBounds) -> TreeRead | None:
    """The task's own `oracle/` folder (the task's files: trusted, but bounded all the same)."""
    folder = Path(task.root) / "oracle"
    if not folder.is_dir():
        return None
    exts = extensions_for(task.spec.language)
    return walk_folder(folder, bounds, lambda p: is_source(p, exts))


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def structure(task: Task, delivery: TreeRead, oracle: TreeRead | None) -> Structure:
    exts = extensions_for(task.spec.language)
    mine = tree_stats(delivery.entries, exts)
    out = Structure(language=task.spec.language, extensions=list(exts), delivery=mine,
                    complete=delivery.complete)  # fmt: skip
    if not delivery.complete:
        out.notes.append(
            f"the delivery's listing was cut ({delivery.why_cut}): counts are lower bounds"
        )
    if any(e.cut for e in delivery.entries if e.kind == "file" and is_source(e.path, exts)):
        out.notes.append(
            "a source file was longer than what is read of it: its lines are a lower bound"
        )
    origin = task.spec.origin
    if origin is not None and (origin.size_loc is not None or origin.size_files is not None):
        out.reference = TreeStats(files=origin.size_files or 0, loc=origin.size_loc or 0)
        out.reference_from = "origin"
    elif oracle is not None:
        out.reference = tree_stats(oracle.entries, exts)
        out.reference_from = "oracle"
    ref = out.reference
    if ref is not None:
        out.file_pct = _pct(mine.files, ref.files)
        out.loc_pct = _pct(mine.loc, ref.loc)
        out.monolith = mine.files == 1 and ref.files > 1
    else:
        out.monolith = mine.files == 1 and mine.loc > MONOLITH_LOC
    if mine.files == 0:
        out.notes.append(f"no source file ({', '.join(exts)}) in the delivery")
    return out
