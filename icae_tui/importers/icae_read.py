"""Reading one alias of an ICAE-EVAL tree: its three levels, PRDs, cases, golden repository
and repo_alias.json entry, with every problem found named by file and field.

The rcb_tests repository (rcb_tests_repos/<key>/) can hold more than the three case folders
ICAE-EVAL reads of it: an `rcb_tests/test.sh` (a harness for the golden repository) and
whatever else it ships; every such file is kept for an export (`AliasData.test_files`). The golden
repository (realcode_repos/<key>/) is the original source ICAE-EVAL reads for its
structural scores only; it is run here through ICAE's protocol when it holds
rcb_tests/test.sh, or when the rcb_tests repository does (then that harness is laid over a
copy of it: `AliasData.overlay`).

A problem is an ERROR when the task cannot be imported as it is (a level missing, a file that
is not JSON, data the task format refuses, no hidden cases), a WARNING when it can but the
data is odd (a stored expected output that is not a string: kept as the JSON text ICAE-EVAL
compares it as; a record that serves a public case file the task lacks), a NOTE for how it
was imported. Records copied between tasks need the whole tree: icae_copies.py.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from icae_tui.domain.task import CaseFile, UserAgentData
from icae_tui.importers.icae_layout import (
    ALIAS_FILE,
    HARNESS,
    RCB,
    TESTS_ROOT,
    CaseDir,
    Difficulty,
    Layout,
    case_dir_path,
    detailed_path,
    prd_json_path,
    start_path,
)
from icae_tui.importers.json_format import JsonFormat, detect, parse
from icae_tui.importers.problems import Problem, Severity, field_path

PUBLIC_KEY = "public_test_cases"
# what of an rcb_tests/ folder is not its harness: the case folders, the captured outputs
_NOT_HARNESS = {*(d.value for d in CaseDir), "stdout"}
TC_PREFIX = "TC_"
MAX_ERRORS_PER_FILE = 5  # of one model's validation errors, the rest counted


@dataclass(frozen=True)
class SourceFile:
    path: str  # in the ICAE-EVAL layout (what an export writes)
    shown: str  # how problems name it
    raw: bytes


@dataclass
class LevelData:
    difficulty: Difficulty
    json: SourceFile
    data: dict[str, Any]  # the file's object, in its key order
    start: SourceFile | None


@dataclass
class CaseFileData:
    name: str  # e.g. feature1_x.json
    source: SourceFile | None  # None: a prd_json level's public_test_cases entry
    data: dict[str, Any]  # as imported: a non-string expected output as its JSON text
    original: Any = None  # the file's JSON as it is (when `source`)


class PublicSource(StrEnum):
    RCB = "rcb_tests"  # the authoritative rcb_tests/public_test_cases
    PRD_JSON = "prd_json"  # a level's public_test_cases


@dataclass
class AliasIndex:
    """repo_alias.json: each alias's entry and its place."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)
    format: JsonFormat | None = None
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def read(cls, layout: Layout) -> AliasIndex:
        path = layout.tree / ALIAS_FILE
        index = cls()
        if not path.is_file():
            index.problems.append(Problem(Severity.WARNING, ALIAS_FILE, "",
                                          "missing: no task's language or size is known"))  # fmt: skip
            return index
        raw = path.read_bytes()
        try:
            data = parse(raw)
        except ValueError as err:
            index.problems.append(Problem(Severity.WARNING, ALIAS_FILE, "",
                                          f"{err}: no task's language or size is known"))  # fmt: skip
            return index
        if not isinstance(data, dict):
            index.problems.append(Problem(Severity.WARNING, ALIAS_FILE, "", "not a JSON object"))
            return index
        index.format = detect(raw, data)
        for i, (alias, record) in enumerate(data.items()):
            if isinstance(record, dict):
                index.records[alias] = record
                index.order[alias] = i
        return index


@dataclass
class AliasData:
    alias: str
    folder: str  # its repositories' folder under rcb_tests_repos/, realcode_repos/ (its key)
    record: dict[str, Any] | None
    levels: dict[Difficulty, LevelData] = field(default_factory=dict)
    detailed: SourceFile | None = None
    case_dirs: dict[CaseDir, list[CaseFileData]] = field(default_factory=dict)
    public: list[CaseFileData] = field(default_factory=list)
    public_from: PublicSource | None = None
    golden: Path | None = None  # the golden repository (runnable or not)
    golden_runs: bool = False  # it holds rcb_tests/test.sh, or the overlay gives it one
    # its files by their path in it (no .git), and its links that stay inside it (→ target)
    golden_files: dict[str, Path] = field(default_factory=dict)
    golden_links: dict[str, str] = field(default_factory=dict)
    tests_repo: Path | None = None  # rcb_tests_repos/<key>/, when the tree has it
    # its files but the case files imported, by their path in it (kept for an export)
    test_files: dict[str, Path] = field(default_factory=dict)
    # rcb_tests/<path> of the rcb_tests repository's harness laid over the golden repository
    overlay: list[str] = field(default_factory=list)
    # no hidden cases but public ones: imported with those alone (a score over them is no
    # full one: icae_task marks the task); `no_hidden` is the missing folder's problem
    public_only: bool = False
    no_hidden: Problem | None = None
    problems: list[Problem] = field(default_factory=list)

    def add(self, severity: Severity, file: str, field_name: str, message: str) -> None:
        self.problems.append(Problem(severity, file, field_name, message))


def _source(layout: Layout, path: Path, icae_path: str) -> SourceFile:
    return SourceFile(icae_path, layout.shown(path), path.read_bytes())


def _validation(err: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    found = [(field_path(tuple(e["loc"]), prefix), e["msg"]) for e in err.errors()]
    if len(found) > MAX_ERRORS_PER_FILE:
        more = len(found) - MAX_ERRORS_PER_FILE
        found = found[:MAX_ERRORS_PER_FILE] + [(prefix, f"and {more} more errors")]
    return found


AddProblem = Callable[[Severity, str, str, str], None]


def plain_name(name: str) -> bool:
    """A case file's name that stays a file in its folder wherever it is written."""
    return bool(name) and not name.startswith(".") and not set(name) & {"/", "\\", "\0"}


def check_case_file(
    data: Any, add: AddProblem, file: str, prefix: str = ""
) -> dict[str, Any] | None:
    """The case file as imported (a non-string expected output as the JSON text ICAE-EVAL
    compares it as), or None when the task format cannot take it; `add(severity, file,
    field, message)` hears of every problem."""
    if not isinstance(data, dict):
        add(Severity.ERROR, file, prefix, "not a JSON object ({description, cases})")
        return None
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        add(Severity.ERROR, file, field_path(("cases",), prefix), "no cases (a non-empty list)")
        return None
    fixed = data
    for i, case in enumerate(cases):
        where = field_path(("cases", i, "expected_output"), prefix)
        if not isinstance(case, dict):
            continue  # the model below names it
        if "expected_output" not in case:
            add(Severity.WARNING, file, where, "missing: scored against '', as ICAE-EVAL does")
        elif isinstance(case["expected_output"], str) and "\r" in case["expected_output"]:
            add(Severity.WARNING, file, where,
                "holds a carriage return: ICAE-EVAL reads outputs with newlines translated "
                "(Path.read_text), so no output ever equals it there")  # fmt: skip
        elif not isinstance(case["expected_output"], str):
            value = case["expected_output"]
            text = json.dumps(value)
            add(Severity.WARNING, file, where,
                f"not a string ({type(value).__name__}): scored as its JSON text "
                f"{text[:40]!r}, as ICAE-EVAL scores it")  # fmt: skip
            if fixed is data:
                fixed = copy.deepcopy(data)
            fixed["cases"][i]["expected_output"] = text
        if "input" not in case:
            add(Severity.WARNING, file, field_path(("cases", i, "input"), prefix),
                "missing: the case's stdin is null")  # fmt: skip
    try:
        CaseFile.model_validate(fixed)
    except ValidationError as err:
        for where, message in _validation(err, prefix):
            add(Severity.ERROR, file, where, message)
        return None
    return fixed


def _read_level(layout: Layout, out: AliasData, difficulty: Difficulty) -> None:
    alias, level = out.alias, difficulty.level.value
    rel = prd_json_path(alias, difficulty)
    path = layout.tree / rel
    if not path.is_file():
        out.add(Severity.ERROR, rel, "",
                f"missing: the {difficulty.value} level ({level}) has no user-agent data")  # fmt: skip
        return
    source = _source(layout, path, rel)
    try:
        data = parse(source.raw)
    except ValueError as err:
        out.add(Severity.ERROR, source.shown, "", str(err))
        return
    if not isinstance(data, dict):
        out.add(Severity.ERROR, source.shown, "", "not a JSON object ({fuzzy_prd, oracle_data})")
        return
    ok = True
    if not isinstance(data.get("fuzzy_prd"), str):
        out.add(Severity.ERROR, source.shown, "fuzzy_prd", "missing or not a string")
        ok = False
    try:
        UserAgentData.model_validate(data)
    except ValidationError as err:
        for where, message in _validation(err):
            out.add(Severity.ERROR, source.shown, where, message)
        ok = False
    public = data.get(PUBLIC_KEY)
    if public is not None and not isinstance(public, dict):
        out.add(Severity.ERROR, source.shown, PUBLIC_KEY, "not an object of case files")
        ok = False
    elif isinstance(public, dict):
        for name, content in public.items():
            prefix = f"{PUBLIC_KEY}[{json.dumps(name, ensure_ascii=False)}]"
            if not plain_name(name):
                out.add(Severity.ERROR, source.shown, prefix,
                        "not a plain file name (no folder, no leading dot)")  # fmt: skip
                ok = False
            elif check_case_file(content, out.add, source.shown, prefix) is None:
                ok = False
    start_rel = start_path(alias, difficulty)
    start = layout.tree / start_rel
    start_file = _source(layout, start, start_rel) if start.is_file() else None
    if start_file is None:
        out.add(Severity.WARNING, start_rel, "",
                f"missing: the {level} PRD is the level's fuzzy_prd under ICAE's header, as "
                "tools/write_fuzzy_prds.py writes start.md")  # fmt: skip
    if ok:
        out.levels[difficulty] = LevelData(difficulty, source, data, start_file)


def _read_case_dirs(layout: Layout, out: AliasData) -> None:
    root = layout.case_root(out.folder)
    shown = layout.shown(root)
    if root.parent.is_dir():
        out.tests_repo = root.parent
    if not root.is_dir():
        out.no_hidden = Problem(Severity.ERROR, shown, "",
                                "missing: no hidden cases (ICAE-EVAL's authoritative rcb_tests)")  # fmt: skip
        return
    for case_dir in CaseDir:
        folder = root / case_dir.value
        if not folder.is_dir():
            if case_dir is CaseDir.NATIVE:
                out.no_hidden = Problem(Severity.ERROR, layout.shown(folder), "",
                                        "missing: no hidden cases")  # fmt: skip
            elif case_dir is CaseDir.ENHANCED:
                out.add(Severity.NOTE, layout.shown(folder), "", "missing: no enhanced cases")
            continue
        files: list[CaseFileData] = []
        found = sorted(p for p in folder.glob("*.json") if p.is_file())
        empty = 0
        for path in found:
            source = _source(layout, path, f"{case_dir_path(out.folder, case_dir)}/{path.name}")
            try:
                data = parse(source.raw)
            except ValueError as err:
                out.add(Severity.ERROR, source.shown, "", str(err))
                continue
            if isinstance(data, dict) and data.get("cases") == []:
                empty += 1
                out.add(Severity.WARNING, source.shown, "cases",
                        "empty: ICAE-EVAL counts no case of it; left out of the task's cases "
                        "(kept as it is for an export)")  # fmt: skip
                continue
            fixed = check_case_file(data, out.add, source.shown)
            if fixed is not None:
                files.append(CaseFileData(path.name, source, fixed, data))
        if case_dir is CaseDir.NATIVE and not files and empty == len(found):
            why = "its case files have none" if found else "no *.json"
            out.no_hidden = Problem(Severity.ERROR, layout.shown(folder), "",
                                    f"no hidden cases ({why})")  # fmt: skip
        out.case_dirs[case_dir] = files


GIT = ".git"  # a clone's history: no part of the code, never copied


def _link_outside(repo: Path, rel: str, path: Path) -> str | None:
    """Why the link `rel` of `repo` leaves it (None: it stays inside, as a copy of the
    repository keeps it working)."""
    target = os.readlink(path)
    if os.path.isabs(target):
        return f"an absolute target ({target})"
    lexical = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    real = os.path.realpath(path)
    root = os.path.realpath(repo)
    if lexical == ".." or lexical.startswith("../") or (
        real != root and not real.startswith(root + os.sep)
    ):
        return f"a target outside the repository ({target})"
    return None


def walk_repo(
    layout: Layout, repo: Path, add: AddProblem
) -> tuple[dict[str, Path], dict[str, str]]:
    """A repository's files and the links that stay inside it (kept as links: a workspace
    member may be one), by their path in it; its top `.git` is left out (NOTE), a link that
    leaves it is refused by name (ERROR: a copy of the repository would lack what it names)."""
    files: dict[str, Path] = {}
    links: dict[str, str] = {}
    for top, dirs, names in os.walk(repo):
        here = Path(top)
        if here == repo and GIT in dirs + names:
            add(Severity.NOTE, layout.shown(repo / GIT), "",
                "a git clone's history: left out of the task (not the repository's code)")  # fmt: skip
        dirs[:] = sorted(d for d in dirs if not (here == repo and d == GIT))
        for name in sorted([*names, *(d for d in dirs if (here / d).is_symlink())]):
            if here == repo and name == GIT:
                continue
            path = here / name
            rel = path.relative_to(repo).as_posix()
            if path.is_symlink():
                why = _link_outside(repo, rel, path)
                if why is not None:
                    add(Severity.ERROR, layout.shown(path), "",
                        f"a symbolic link with {why}: a copy of the repository cannot keep "
                        "it (make it a file or a link inside the repository)")  # fmt: skip
                else:
                    links[rel] = os.readlink(path)
            elif path.is_file():
                files[rel] = path
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]  # a link is kept, not walked
    return files, links


def _keep_test_files(layout: Layout, out: AliasData) -> None:
    """Every file of the rcb_tests repository but the case files imported from it: its
    test.sh and what else it holds, kept as they are for an export."""
    if out.tests_repo is None:
        return
    imported = {f.source.path for files in out.case_dirs.values() for f in files if f.source}
    prefix = f"{TESTS_ROOT}/{out.folder}/"
    for path in sorted(out.tests_repo.rglob("*")):
        rel = path.relative_to(out.tests_repo).as_posix()
        if rel == GIT or rel.startswith(GIT + "/"):
            continue  # a clone's history: not the repository's files
        if path.is_symlink():
            out.add(Severity.WARNING, layout.shown(path), "",
                    "a symbolic link: left out of the task (an export lacks it)")  # fmt: skip
        elif path.is_file() and prefix + rel not in imported:
            out.test_files[rel] = path


def _choose_public(out: AliasData) -> None:
    """The authoritative public cases; each level's public_test_cases are its PRD's
    examples, which should be the same files."""
    levels = [out.levels[d] for d in Difficulty if d in out.levels]
    rcb = out.case_dirs.get(CaseDir.PUBLIC)
    if rcb is not None:
        out.public, out.public_from = rcb, PublicSource.RCB
        authoritative = {f.name: f.data for f in rcb}
        for level in levels:
            given = level.data.get(PUBLIC_KEY)
            if not isinstance(given, dict):
                continue
            for name, content in given.items():
                if authoritative.get(name) != content:
                    why = "is not among" if name not in authoritative else "differs from"
                    out.add(Severity.WARNING, level.json.shown,
                            f"{PUBLIC_KEY}[{json.dumps(name, ensure_ascii=False)}]",
                            f"{why} the authoritative rcb_tests/{CaseDir.PUBLIC.value}: "
                            "the public cases scored are the authoritative ones")  # fmt: skip
        return
    used: LevelData | None = None
    for level in levels:
        given = level.data.get(PUBLIC_KEY)
        if not isinstance(given, dict) or not given:
            continue
        if used is not None:
            _differing_public(out, level, given, used)
            continue
        used = level
        fixed = [check_case_file(c, lambda *_: None, "") for c in given.values()]
        out.public = [
            CaseFileData(name, None, data)
            for name, data in zip(given, fixed, strict=True)
            if data is not None
        ]
        out.public_from = PublicSource.PRD_JSON
        out.add(Severity.NOTE, level.json.shown, PUBLIC_KEY,
                f"no rcb_tests/{CaseDir.PUBLIC.value}: the public cases are these")  # fmt: skip


def _differing_public(
    out: AliasData, level: LevelData, given: dict[str, Any], used: LevelData
) -> None:
    """Without rcb_tests public cases the task has one set, `used`'s: a level whose own
    public_test_cases differ is told so (its agent sees other examples than those scored)."""
    theirs = used.data[PUBLIC_KEY]
    name_of = f"the {used.difficulty.value} level's ({used.difficulty.level.value}, {used.json.shown})"
    for name, content in given.items():
        if theirs.get(name) != content:
            why = "is not among" if name not in theirs else "differs from"
            out.add(Severity.WARNING, level.json.shown,
                    f"{PUBLIC_KEY}[{json.dumps(name, ensure_ascii=False)}]",
                    f"{why} {name_of} {PUBLIC_KEY}: with no rcb_tests/{CaseDir.PUBLIC.value} "
                    f"the public cases used for every level are {name_of}")  # fmt: skip
    for name in theirs:
        if name not in given:
            out.add(Severity.WARNING, level.json.shown, PUBLIC_KEY,
                    f"lacks {name}, which {name_of} {PUBLIC_KEY} has: with no "
                    f"rcb_tests/{CaseDir.PUBLIC.value} the public cases used for every level "
                    f"are {name_of}")  # fmt: skip


def _public_only(out: AliasData) -> None:
    """No hidden case: with public cases (and no enhanced ones, which would be scored) the
    task is offered with those alone, said as a WARNING; else it cannot be imported."""
    missing = out.no_hidden
    if missing is None:
        return
    if out.public and not out.case_dirs.get(CaseDir.ENHANCED):
        out.public_only = True
        out.add(Severity.WARNING, missing.file, missing.field,
                f"{missing.message}: imported with its {len(out.public)} public case files "
                "alone, marked public-only (a score over them is not ICAE-EVAL's hidden + "
                "enhanced one)")  # fmt: skip
    else:
        out.problems.append(missing)


def _check_fixtures(out: AliasData) -> None:
    """A `TC_<stem>` record serves the public case file <stem>.json: the file must exist."""
    names = {f.name for f in out.public}
    for level in out.levels.values():
        records = level.data.get("oracle_data", {}).get("hidden_constraints", [])
        for i, record in enumerate(records):
            rid = record.get("constraint_id", "") if isinstance(record, dict) else ""
            if isinstance(rid, str) and rid.startswith(TC_PREFIX):
                name = rid[len(TC_PREFIX) :] + ".json"
                if name not in names:
                    out.add(Severity.WARNING, level.json.shown,
                            f"oracle_data.hidden_constraints[{i}]",
                            f"missing fixture: {rid} serves the public case file {name}, "
                            "which the task does not have")  # fmt: skip


def _find_golden(layout: Layout, out: AliasData) -> None:
    repo = layout.golden_repo(out.folder)
    shown = layout.shown(repo)
    if not repo.is_dir():
        out.add(Severity.NOTE, shown, "",
                "no golden repository: cases are judged against their stored expected "
                "outputs, as ICAE-EVAL scores them")  # fmt: skip
        return
    out.golden = repo
    out.golden_files, out.golden_links = walk_repo(layout, repo, out.add)
    if (repo / HARNESS).is_file():
        out.golden_runs = True
        out.add(Severity.NOTE, shown, "", "cases are differential against this golden repository")
        return
    if HARNESS in out.test_files:
        tests = layout.shown(out.tests_repo / RCB) if out.tests_repo else RCB
        out.overlay = [
            rel for rel in out.test_files
            if rel.startswith(f"{RCB}/") and not (repo / rel).exists()
            and rel.split("/")[1] not in _NOT_HARNESS
        ]  # fmt: skip
        out.golden_runs = True
        out.add(Severity.NOTE, shown, "",
                "cases are differential against this golden repository, run through "
                f"the rcb_tests repository's harness ({tests}/test.sh) laid over it")  # fmt: skip
        return
    out.add(Severity.NOTE, shown, "",
            f"neither the golden repository nor its rcb_tests repository holds {HARNESS} "
            "(ICAE's protocol) to run cases through: they are judged against their stored "
            "expected outputs (its files are kept in oracle/ for an export)")  # fmt: skip


def read_alias(layout: Layout, alias: str, index: AliasIndex) -> AliasData:
    record = index.records.get(alias)
    key = record.get("key") if record else None
    folder = key if isinstance(key, str) and key and "/" not in key and key != ".." else alias
    out = AliasData(alias=alias, folder=folder, record=record)
    if record is None:
        out.add(Severity.WARNING, ALIAS_FILE, "",
                f"no entry for {alias}: its language and size are unknown, its repositories "
                f"are looked up as {alias}")  # fmt: skip
    for difficulty in Difficulty:
        _read_level(layout, out, difficulty)
    detailed = layout.tree / detailed_path(alias)
    if detailed.is_file():
        out.detailed = _source(layout, detailed, detailed_path(alias))
    _read_case_dirs(layout, out)
    _keep_test_files(layout, out)
    _choose_public(out)
    _public_only(out)
    _check_fixtures(out)
    _find_golden(layout, out)
    return out
