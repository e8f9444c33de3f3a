"""Imported tasks back to ICAE-EVAL's layout, byte for byte (`icae tasks export icae-eval`).

`source_files` gives one task's files of the tree from the task's own files and what its
import kept (icae_origin.py): the same function checks each import (a source file it does
not give back exactly is kept verbatim), so exporting what was imported writes the tree's
bytes again. The golden repository is `oracle/` copied back (but the rcb_tests harness laid
over it), the rcb_tests repository's other files `origin/tests/`; repo_alias.json holds the
exported tasks' entries in their order.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icae_tui.importers.icae_contract import without_contract
from icae_tui.importers.icae_layout import ALIAS_FILE, case_stem
from icae_tui.importers.icae_origin import (
    ORIGIN_FILE,
    TESTS_COPY,
    VERBATIM,
    GroundSource,
    IcaeOrigin,
)
from icae_tui.importers.icae_read import PUBLIC_KEY
from icae_tui.importers.json_format import ICAE, JsonFormat, dump

TEXT_FOLDERS = ("prd", "user_agent", "cases", "origin")  # what source_files reads of a task


def _load(files: Mapping[str, bytes], path: str) -> Any:
    raw = files.get(path)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


@dataclass(frozen=True)
class JsonOut:
    """A JSON file an export writes: its data, in the format the tree had."""

    data: Any
    format: JsonFormat

    def bytes(self) -> bytes:
        return dump(self.data, self.format)


def source_objects(files: Mapping[str, bytes], origin: IcaeOrigin) -> dict[str, JsonOut | bytes]:
    """One task's ICAE-EVAL files (but its golden repository and repo_alias.json), by their
    path in the layout, from the task's files (by their path in the task folder): a JSON
    file as its data and format, any other as its bytes."""
    out: dict[str, JsonOut | bytes] = {}
    for lo in origin.levels:
        level = lo.difficulty.level.value
        data = _load(files, f"user_agent/{level}.json")
        if isinstance(data, dict):
            items = list(data.items())
            if lo.public_at is not None:
                public = {}
                for name in lo.public_names:
                    case = _load(files, f"cases/public/{case_stem(name)}.json")
                    if case is not None:
                        public[name] = case
                items.insert(min(lo.public_at, len(items)), (PUBLIC_KEY, public))
            out[lo.json_file] = JsonOut(dict(items), lo.json_format)
        prd = files.get(f"prd/{level}.md")
        if lo.start_file is not None and prd is not None:
            out[lo.start_file] = without_contract(prd)
    ground = files.get("prd/ground.md")
    if origin.ground is GroundSource.DETAILED and origin.ground_file and ground is not None:
        out[origin.ground_file] = without_contract(ground)
    for case_dir in origin.case_dirs:
        split = case_dir.dir.task_split.value
        for f in case_dir.files:
            case = _load(files, f"cases/{split}/{case_stem(f.name)}.json")
            if case is not None:
                out[f"{case_dir.folder}/{f.name}"] = JsonOut(case, f.format)
    for path in origin.verbatim:
        kept = files.get(VERBATIM + path)
        given = origin.verbatim_given.get(path)
        if kept is not None and (given is None or path not in out or given == digest(out[path])):
            out[path] = kept
    return out


def digest(out: JsonOut | bytes) -> str:
    """The sha256 of what an export writes for a file."""
    return hashlib.sha256(out.bytes() if isinstance(out, JsonOut) else out).hexdigest()


def source_files(files: Mapping[str, bytes], origin: IcaeOrigin) -> dict[str, bytes]:
    """`source_objects` as the bytes an export writes."""
    return {
        path: out.bytes() if isinstance(out, JsonOut) else out
        for path, out in source_objects(files, origin).items()
    }


def identical(a: Any, b: Any) -> bool:
    """Two JSON values `json.dumps` writes alike with any one format: equal, of the same
    types (1 is not 1.0, nor True), their objects' keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def task_files(root: Path) -> dict[str, bytes]:
    """The text files of a task folder that `source_files` reads."""
    out: dict[str, bytes] = {}
    for folder in TEXT_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not path.is_symlink() and not rel.startswith(TESTS_COPY):
                out[rel] = path.read_bytes()
    return out


def origin_of(root: Path) -> IcaeOrigin | None:
    path = root / ORIGIN_FILE
    if not path.is_file():
        return None
    return IcaeOrigin.model_validate_json(path.read_bytes())


def alias_file(origins: Iterable[IcaeOrigin]) -> bytes | None:
    """repo_alias.json of these tasks: their entries, in the order the tree had them."""
    known = [o for o in origins if o.alias_record is not None]
    if not known:
        return None
    known.sort(key=lambda o: (o.alias_index is None, o.alias_index or 0, o.alias))
    records = {o.alias: o.alias_record for o in known}
    return dump(records, known[0].alias_format or ICAE)


@dataclass
class ExportReport:
    out: Path
    exported: list[str] = field(default_factory=list)  # aliases
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (task folder, why)
    files: int = 0


def _inside(out: Path, rel: str) -> Path | None:
    """`out / rel`, when it stays inside `out` (an origin record names only layout paths)."""
    path = out / rel
    if rel.startswith("/") or ".." in Path(rel).parts:
        return None
    return path


def _link(path: Path, target: str) -> bool:
    if path.is_symlink() and os.readlink(path) == target:
        return False
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return True


def _copy_tree(src: Path, dst: Path, skip: Collection[str] = ()) -> int:
    """Copy the files of `src` (but those whose path in it `skip` names) under `dst`, with
    their mode, and its links as links (the import kept only those staying inside it); the
    number of files and links."""
    count = 0
    for path in sorted(src.rglob("*")):  # a linked folder is not walked: its link is copied
        rel = path.relative_to(src).as_posix()
        if path.is_symlink() and rel not in skip:
            count += 1
            _link(dst / rel, os.readlink(path))
        elif path.is_file() and rel not in skip:
            count += 1
            target = dst / rel
            if _write(target, path.read_bytes()):
                shutil.copymode(path, target)
    return count


def _write(path: Path, data: bytes) -> bool:
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def export_tasks(roots: Iterable[Path], out: Path) -> ExportReport:
    """Write the ICAE-EVAL tree of the imported tasks among `roots` under `out`."""
    report = ExportReport(out)
    origins: list[IcaeOrigin] = []
    for root in roots:
        if not root.is_dir():
            report.skipped.append((str(root), "no such task folder"))
            continue
        try:
            origin = origin_of(root)
        except ValueError as err:
            report.skipped.append((str(root), f"{ORIGIN_FILE}: {err}"))
            continue
        if origin is None:
            report.skipped.append((str(root), "not imported from ICAE-EVAL"))
            continue
        written = source_files(task_files(root), origin)
        golden = _inside(out, origin.golden_folder) if origin.golden_folder else None
        tests = _inside(out, origin.tests_folder) if origin.tests_folder else None
        outside = [p for p in written if _inside(out, p) is None]
        if origin.golden_folder and golden is None:
            outside.append(origin.golden_folder)
        if origin.tests_folder and tests is None:
            outside.append(origin.tests_folder)
        if outside:
            report.skipped.append((str(root), f"{ORIGIN_FILE}: a path outside the layout: "
                                   f"{outside[0]}"))  # fmt: skip
            continue
        for path, data in written.items():
            report.files += 1
            _write(out / path, data)
        oracle, kept = root / "oracle", root / TESTS_COPY
        if golden is not None and oracle.is_dir():
            report.files += _copy_tree(oracle, golden, set(origin.oracle_overlay))
        if tests is not None and kept.is_dir():
            report.files += _copy_tree(kept, tests)
        origins.append(origin)
        report.exported.append(origin.alias)
    aliases = alias_file(origins)
    if aliases is not None:
        report.files += 1
        _write(out / ALIAS_FILE, aliases)
    return report
