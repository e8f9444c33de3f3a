#!/usr/bin/env python3
"""tidy: a small, deterministic file organiser (golden implementation).

    tidy sort <dir> --by ext|date-prefix [--dry-run]
    tidy dedupe <dir> [--dry-run]
    tidy rename <dir> --lower|--snake [--dry-run]
    tidy stats <dir>
    tidy clean <dir> [--dry-run]

Python 3.11, standard library only. Every traversal is sorted by relative path (code-point
order); entries whose name starts with "." and symbolic links are ignored; every performed
action is appended to <dir>/.tidy.log. See prd/ground.md for the full contract.
"""

from __future__ import annotations

import datetime
import os
import re
import sys

USAGE = "usage: tidy <sort|dedupe|rename|stats|clean> <dir> [options]"
NOT_FOUND = "error: directory not found"
JOURNAL = ".tidy.log"
COMMANDS = ("sort", "dedupe", "rename", "stats", "clean")
DATE_PREFIX = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})")
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
NON_ALNUM = re.compile(r"[^a-z0-9]+")


class UsageError(Exception):
    pass


# --- helpers ---------------------------------------------------------------------------------


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def split_ext(name: str) -> tuple[str, str]:
    """(stem, ".ext"); no extension when there is no dot, or the last dot is first or last."""
    dot = name.rfind(".")
    if dot <= 0 or dot == len(name) - 1:
        return name, ""
    return name[:dot], name[dot:]


def ext_folder(name: str) -> str:
    ext = split_ext(name)[1]
    return ext[1:].lower() if ext else "no_ext"


def with_suffix(name: str, n: int) -> str:
    stem, ext = split_ext(name)
    return f"{stem}-{n}{ext}"


def hidden(name: str) -> bool:
    return name.startswith(".")


def listdir(path: str) -> list[str]:
    return sorted(os.listdir(path))


def is_file(path: str) -> bool:
    return os.path.isfile(path) and not os.path.islink(path)


def is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def walk(root: str) -> tuple[list[str], list[str]]:
    """Non-hidden regular files and folders below root (relative paths), sorted by path."""
    files: list[str] = []
    dirs: list[str] = []

    def visit(rel: str) -> None:
        for name in listdir(os.path.join(root, rel) if rel else root):
            if hidden(name):
                continue
            child = f"{rel}/{name}" if rel else name
            full = os.path.join(root, child)
            if is_dir(full):
                dirs.append(child)
                visit(child)
            elif is_file(full):
                files.append(child)

    visit("")
    return sorted(files), sorted(dirs)


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def out(line: str) -> None:
    sys.stdout.write(line + "\n")


class Journal:
    """Collects action lines; appended to <dir>/.tidy.log once the run is over."""

    def __init__(self, root: str, dry_run: bool) -> None:
        self.root = root
        self.dry_run = dry_run
        self.lines: list[str] = []

    def action(self, done: str, planned: str) -> None:
        if self.dry_run:
            out("would " + planned)
        else:
            out(done)
            self.lines.append(done)

    def summary(self, done: str, planned: str) -> None:
        out("would " + planned if self.dry_run else done)

    def flush(self) -> None:
        if self.lines and not self.dry_run:
            with open(os.path.join(self.root, JOURNAL), "a", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in self.lines))


# --- commands --------------------------------------------------------------------------------


def date_folder(name: str) -> str:
    m = DATE_PREFIX.match(name)
    if m:
        year, month, day = (int(g) for g in m.groups())
        try:
            datetime.date(year, month, day)
        except ValueError:
            return "undated"
        return f"{m.group(1)}/{m.group(2)}"
    return "undated"


def cmd_sort(root: str, by: str, journal: Journal) -> None:
    taken: set[str] = set()  # destinations claimed during this run (for dry runs)
    gone: set[str] = set()  # top-level names moved away during this run
    folders: set[str] = set()
    moved = 0
    for name in listdir(root):
        if hidden(name) or not is_file(os.path.join(root, name)):
            continue
        folder = ext_folder(name) if by == "ext" else date_folder(name)
        # every component of the folder path must be (or become) a folder
        parts = folder.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(
            os.path.lexists(os.path.join(root, p)) and not is_dir(os.path.join(root, p))
            for p in prefixes
            if p not in gone
        ):
            out(f"skipped {name} ({folder} is not a folder)")
            continue
        target = name
        n = 0
        while True:
            dest = f"{folder}/{target}"
            if dest not in taken and not os.path.lexists(os.path.join(root, dest)):
                break
            n += 1
            target = with_suffix(name, n)
        taken.add(dest)
        gone.add(name)
        folders.add(folder)
        if not journal.dry_run:
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            os.rename(os.path.join(root, name), os.path.join(root, dest))
        journal.action(f"moved {name} -> {dest}", f"move {name} -> {dest}")
        moved += 1
    tail = f"{plural(moved, 'file')} into {plural(len(folders), 'folder')}"
    journal.summary(f"sorted {tail}", f"sort {tail}")


def cmd_dedupe(root: str, journal: Journal) -> None:
    files, _ = walk(root)
    groups: dict[bytes, list[str]] = {}
    for rel in files:
        data = read(os.path.join(root, rel))
        if data:
            groups.setdefault(data, []).append(rel)
    removals: list[tuple[str, str, int]] = []
    for data, paths in groups.items():
        if len(paths) < 2:
            continue
        keep = min(paths, key=lambda p: (p.count("/"), p))
        removals.extend((p, keep, len(data)) for p in paths if p != keep)
    removals.sort()
    freed = 0
    for rel, keep, size in removals:
        if not journal.dry_run:
            os.remove(os.path.join(root, rel))
        journal.action(
            f"removed {rel} (duplicate of {keep})", f"remove {rel} (duplicate of {keep})"
        )
        freed += size
    tail = f"{plural(len(removals), 'duplicate')} ({plural(freed, 'byte')})"
    journal.summary(f"removed {tail}", f"remove {tail}")


def snake(name: str) -> str:
    stem, ext = split_ext(name)
    stem = CAMEL.sub("_", stem).lower()
    stem = NON_ALNUM.sub("_", stem).strip("_") or "file"
    return stem + ext.lower()


def cmd_rename(root: str, style: str, journal: Journal) -> None:
    files, _ = walk(root)
    names: dict[str, set[str]] = {}  # folder -> names present (virtually, during the run)
    renamed = 0
    for rel in files:
        folder, _, name = rel.rpartition("/")
        new = name.lower() if style == "lower" else snake(name)
        if new == name:
            continue
        if folder not in names:
            names[folder] = set(os.listdir(os.path.join(root, folder) if folder else root))
        present = names[folder]
        target = new
        n = 0
        while target in present:
            n += 1
            target = with_suffix(new, n)
        present.discard(name)
        present.add(target)
        dest = f"{folder}/{target}" if folder else target
        if not journal.dry_run:
            os.rename(os.path.join(root, rel), os.path.join(root, dest))
        journal.action(f"renamed {rel} -> {dest}", f"rename {rel} -> {dest}")
        renamed += 1
    tail = plural(renamed, "file")
    journal.summary(f"renamed {tail}", f"rename {tail}")


def cmd_stats(root: str) -> None:
    files, dirs = walk(root)
    sizes = {rel: os.path.getsize(os.path.join(root, rel)) for rel in files}
    by_ext: dict[str, list[int]] = {}
    for rel, size in sizes.items():
        entry = by_ext.setdefault(ext_folder(rel.rpartition("/")[2]), [0, 0])
        entry[0] += 1
        entry[1] += size
    out(f"files: {len(files)}")
    out(f"folders: {len(dirs)}")
    out(f"bytes: {sum(sizes.values())}")
    for ext, (count, total) in sorted(by_ext.items(), key=lambda kv: (-kv[1][0], kv[0])):
        out(f"ext {ext}: {plural(count, 'file')}, {plural(total, 'byte')}")
    if files:
        largest = min(files, key=lambda rel: (-sizes[rel], rel))
        out(f"largest: {largest} ({plural(sizes[largest], 'byte')})")


def cmd_clean(root: str, journal: Journal) -> None:
    empty_files: list[str] = []
    empty_dirs: list[str] = []

    def visit(rel: str) -> bool:
        """True when the folder `rel` is empty once its removable content is gone."""
        everything_goes = True
        for name in listdir(os.path.join(root, rel) if rel else root):
            child = f"{rel}/{name}" if rel else name
            full = os.path.join(root, child)
            if hidden(name):
                everything_goes = False
            elif is_dir(full):
                if visit(child):
                    empty_dirs.append(child)
                else:
                    everything_goes = False
            elif is_file(full) and read(full).strip() == b"":
                empty_files.append(child)
            else:
                everything_goes = False
        return everything_goes

    visit("")
    empty_files.sort()
    empty_dirs.sort(key=lambda p: (-p.count("/"), p))
    for rel in empty_files:
        if not journal.dry_run:
            os.remove(os.path.join(root, rel))
        journal.action(f"removed {rel}", f"remove {rel}")
    for rel in empty_dirs:
        if not journal.dry_run:
            os.rmdir(os.path.join(root, rel))
        journal.action(f"removed {rel}/", f"remove {rel}/")
    tail = f"{plural(len(empty_files), 'empty file')} and {plural(len(empty_dirs), 'empty folder')}"
    journal.summary(f"removed {tail}", f"remove {tail}")


# --- command line ----------------------------------------------------------------------------


def parse(argv: list[str]) -> tuple[str, str, dict[str, object]]:
    if not argv or argv[0] not in COMMANDS:
        raise UsageError
    command, rest = argv[0], argv[1:]
    opts: dict[str, object] = {"dry_run": False, "by": None, "style": None}
    positional: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--dry-run" and command != "stats":
            opts["dry_run"] = True
        elif arg == "--by" and command == "sort":
            if i + 1 >= len(rest) or rest[i + 1] not in ("ext", "date-prefix"):
                raise UsageError
            opts["by"] = rest[i + 1]
            i += 1
        elif arg in ("--lower", "--snake") and command == "rename":
            style = arg[2:]
            if opts["style"] not in (None, style):
                raise UsageError
            opts["style"] = style
        elif arg.startswith("-"):
            raise UsageError
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 1:
        raise UsageError
    if command == "sort" and opts["by"] is None:
        raise UsageError
    if command == "rename" and opts["style"] is None:
        raise UsageError
    return command, positional[0], opts


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # type: ignore[attr-defined]
    try:
        command, root, opts = parse(argv)
    except UsageError:
        sys.stderr.write(USAGE + "\n")
        return 2
    if not os.path.isdir(root):
        sys.stderr.write(NOT_FOUND + "\n")
        return 3
    journal = Journal(root, bool(opts["dry_run"]))
    try:
        if command == "sort":
            cmd_sort(root, str(opts["by"]), journal)
        elif command == "dedupe":
            cmd_dedupe(root, journal)
        elif command == "rename":
            cmd_rename(root, str(opts["style"]), journal)
        elif command == "stats":
            cmd_stats(root)
        else:
            cmd_clean(root, journal)
    except OSError:
        journal.flush()
        sys.stdout.flush()
        sys.stderr.write("error: operation failed\n")
        return 1
    journal.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
