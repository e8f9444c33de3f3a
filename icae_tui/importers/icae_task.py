"""One ICAE-EVAL alias as a task folder's files (tasks/README.md), with what the import keeps
of its source (icae_origin.py).

- `prd/L1.md L2.md L3.md`: the levels' start.md (normal, medium, easy), then the protocol
  the delivery is run by (icae_contract.CONTRACT); `prd/ground.md`: detailed_prds' GroundPRD,
  or, where the tree has none, the easy PRD with the easy level's task records stated.
- `user_agent/<level>.json`: the level's prd_json object but its public_test_cases (ground:
  the easy level's).
- `cases/public`: rcb_tests/public_test_cases (else a level's public_test_cases);
  `cases/hidden`: test_cases; `cases/enhanced`: enhanced_test_cases.
- `oracle/`: the golden repository, when the tree has one; the task's [oracle] runs it when
  it holds rcb_tests/test.sh, or the rcb_tests repository does (its harness is laid over
  the golden repository's files). Then its cases are differential against it, else judged
  against their stored expected outputs as ICAE-EVAL scores them. Its links that stay inside
  it are kept as links (a workspace member may be one), its `.git` left out
  (icae_read.walk_repo).
- A tree with public cases but no hidden or enhanced ones: the public cases alone, the task
  marked public-only (title, summary, task.toml comment and [origin] public_only).
- `origin/tests/`: the rcb_tests repository's files but its case files (its test.sh, …),
  as they are, for an export.
- `task.toml`: language and size from repo_alias.json, the default Debian base with the
  language's runtime recipe (domain/runtimes.py; ICAE-EVAL's Docker Hub images,
  icae_layout.LANGUAGE_IMAGES, cannot be pulled here) or the base asked for, the protocol's
  tool `icae-case` on both sides, ICAE's query budget. A language no registry here provides
  (dart, kotlin, c#) imports with a warning naming what to supply; `icae tasks check` fails
  it until a base that has it is named.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from icae_tui.domain.runtimes import DEBIAN_BASE, runtime_problem, runtime_refusal
from icae_tui.domain.task import (
    HiddenConstraint,
    Level,
    OriginSource,
    Reference,
    TaskSpec,
)
from icae_tui.importers import icae_contract as contract
from icae_tui.importers.folder_sync import Link
from icae_tui.importers.icae_export import JsonOut, digest, identical, source_objects
from icae_tui.importers.icae_layout import (
    ALIAS_FILE,
    PRD_HEADER,
    QUERY_BUDGET,
    CaseDir,
    Difficulty,
    case_stem,
    golden_path,
    task_id,
    tests_path,
)
from icae_tui.importers.icae_origin import (
    ORIGIN_FILE,
    TESTS_COPY,
    VERBATIM,
    CaseDirOrigin,
    CaseFileOrigin,
    GroundSource,
    IcaeOrigin,
    LevelOrigin,
)
from icae_tui.importers.icae_read import PUBLIC_KEY, AliasData, AliasIndex, CaseFileData
from icae_tui.importers.json_format import ICAE, OURS, JsonFormat, detect, dump
from icae_tui.importers.operator_edits import Edits, Listed
from icae_tui.importers.problems import Problem, Severity
from icae_tui.importers.toml_text import TomlValue, toml_table

SUMMARY_CHARS = 140
PUBLIC_ONLY_MARK = "(public cases only)"
PUBLIC_ONLY = "public_only"  # [origin]'s mark of a task without hidden cases


_SENTENCE = re.compile(r"(?<=[.!?])\s")


@dataclass
class BuiltTask:
    task_id: str
    reference: Reference
    files: dict[str, bytes]  # the text files, by path in the task folder
    # the files copied as they are (mode too), by path in the task folder: oracle/<path>,
    # origin/tests/<path> → the source file, or the golden repository's link kept as one
    golden: dict[str, Path | Link] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def _summary(prd: str) -> str:
    text = " ".join(prd.removeprefix(PRD_HEADER.strip()).split())
    first = _SENTENCE.split(text, 1)[0] if text else ""
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1] + "…"


def _size(record: dict[str, Any] | None, key: str) -> int | None:
    value = record.get(key) if record else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _image(language: str, base: str | None) -> str:
    """The base asked for, else the Debian base: the language's runtime recipe stands in for
    ICAE-EVAL's image (Docker Hub cannot be reached)."""
    return base or DEBIAN_BASE


def task_toml(
    data: AliasData, reference: Reference, base: str | None, edits: Edits | None = None
) -> str:
    """The task.toml text; `edits`: what the operator set in the task's old one (kept)."""
    edits = edits or Edits()
    record = data.record
    language = str(record.get("language") or "unknown") if record else "unknown"
    normal = data.levels[Difficulty.NORMAL].data.get("fuzzy_prd", "")
    summary = _summary(str(normal))
    title = data.alias
    if data.public_only:  # said wherever the title or summary is shown
        title, summary = f"{data.alias} {PUBLIC_ONLY_MARK}", f"{PUBLIC_ONLY_MARK} {summary}"
    top: dict[str, TomlValue | None] = {
        "id": task_id(data.alias), "title": title, "language": language,
        "summary": summary, "budget": QUERY_BUDGET,
    }  # fmt: skip
    origin: dict[str, TomlValue | None] = {
        "source": OriginSource.ICAE_EVAL.value, "alias": data.alias,
        "size_loc": _size(record, "total_lines_of_code"),
        "size_files": _size(record, "total_code_files"),
        PUBLIC_ONLY: True if data.public_only else None,
    }  # fmt: skip
    # this import fills none of the kept lists: each is the operator's as it was
    kept = {what: edits.merged(what, [], {}) or None for what in Listed}
    public_only = (
        "# PUBLIC CASES ONLY: the tree has no hidden cases; its scores are over its public\n"
        "# cases alone, never ICAE-EVAL's hidden + enhanced score.\n"
        if data.public_only else ""
    )  # fmt: skip
    parts = [
        f"# Imported from ICAE-EVAL ({data.alias}) by `icae tasks import icae-eval`: a new\n"
        "# import rewrites this folder but solutions/, recordings/ and tools/, and keeps\n"
        "# [packages], [image] packages and requires as they are.\n"
        + public_only + toml_table(None, top),
        toml_table("origin", origin),
        toml_table("image", {"base": _image(language, base), "setup": list(contract.SETUP),
                             "packages": kept[Listed.IMAGE_PACKAGES]}),  # fmt: skip
        toml_table("interface", {"kind": "dispatcher", "tool": contract.TOOL}),
    ]
    if reference is Reference.ORACLE:
        parts.append(toml_table("oracle", {"entry": contract.ORACLE_ENTRY,
                                           "requires": kept[Listed.ORACLE_REQUIRES]}))  # fmt: skip
    if kept[Listed.FUZZ_REQUIRES]:
        parts.append(toml_table("fuzz", {"requires": kept[Listed.FUZZ_REQUIRES]}))
    parts.append(toml_table("delivery", {"entry": contract.DELIVERY_ENTRY,
                                         "build": contract.BUILD}))  # fmt: skip
    parts.append(
        "# ICAE-EVAL compares stdout only: no side effect is compared\n"
        + toml_table("cases", {"timeout_s": contract.TIMEOUT_S, "reference": reference.value,
                               "ignore": ["*"]})  # fmt: skip
    )
    if (packages := edits.packages_table()) is not None:
        parts.append(packages)
    return "\n".join(parts)


def _prd(level: Any) -> str | None:
    """A level's start.md as text (its fuzzy_prd under ICAE's header when it has none)."""
    if level.start is None:
        return PRD_HEADER + str(level.data.get("fuzzy_prd", ""))
    try:
        text: str = level.start.raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text


def _derived_ground(easy_prd: str, easy: dict[str, Any]) -> str:
    records = [HiddenConstraint.model_validate(r) for r in easy["oracle_data"].get(
        "hidden_constraints", [])]  # fmt: skip
    stated = [r.oracle_response.strip() for r in records if not r.generic]
    if not stated:
        return easy_prd
    return easy_prd.rstrip("\n") + "\n\n## Clarified requirements\n\n" + "\n".join(
        f"- {text}" for text in stated
    )


Formats = dict[str, JsonFormat | None]  # each source JSON file's (None: none writes it)


def _cases(
    files: dict[str, bytes], split: str, cases: list[CaseFileData], formats: Formats
) -> list[CaseFileOrigin]:
    out = []
    for f in cases:
        files[f"cases/{split}/{case_stem(f.name)}.json"] = dump(f.data, OURS)
        fmt = None
        if f.source is not None:
            fmt = formats[f.source.path] = detect(f.source.raw, f.original)
        out.append(CaseFileOrigin(name=f.name, format=fmt or ICAE))
    return out


def _golden(data: AliasData, built: BuiltTask) -> None:
    """oracle/: the golden repository's files and its links (icae_read.walk_repo: those
    leaving it were refused), then the harness laid over it."""
    for rel, path in data.golden_files.items():
        built.golden[f"oracle/{rel}"] = path
    for rel, target in data.golden_links.items():
        built.golden[f"oracle/{rel}"] = Link(target)
    for rel in data.overlay:
        built.golden[f"oracle/{rel}"] = data.test_files[rel]


def build_task(
    data: AliasData, index: AliasIndex, *, base: str | None, edits: Edits | None = None,
) -> BuiltTask:  # fmt: skip
    """The task's files (`edits`: what the operator set in its old task.toml, kept). `data`
    has no ERROR (the caller checked)."""
    reference = Reference.ORACLE if data.golden_runs else Reference.EXPECTED
    built = BuiltTask(task_id(data.alias), reference, {})
    files = built.files
    levels: list[LevelOrigin] = []
    prds: dict[Difficulty, str] = {}
    formats: Formats = {}
    for difficulty in Difficulty:
        level = data.levels[difficulty]
        name = difficulty.level.value
        prd = _prd(level)
        if prd is None:
            assert level.start is not None
            built.problems.append(Problem(Severity.ERROR, level.start.shown, "", "not UTF-8"))
            return built
        prds[difficulty] = prd
        files[f"prd/{name}.md"] = contract.with_contract(prd).encode()
        keys = list(level.data)
        files[f"user_agent/{name}.json"] = dump(
            {k: v for k, v in level.data.items() if k != PUBLIC_KEY}, OURS
        )
        public = level.data.get(PUBLIC_KEY)
        fmt = formats[level.json.path] = detect(level.json.raw, level.data)
        levels.append(LevelOrigin(
            difficulty=difficulty, json_file=level.json.path, json_format=fmt or ICAE,
            public_at=keys.index(PUBLIC_KEY) if PUBLIC_KEY in keys else None,
            public_names=list(public) if isinstance(public, dict) else [],
            start_file=level.start.path if level.start is not None else None,
        ))  # fmt: skip
    easy = data.levels[Difficulty.EASY]
    files[f"user_agent/{Level.GROUND.value}.json"] = files[f"user_agent/{Level.L3.value}.json"]
    ground, ground_file = GroundSource.DERIVED, None
    if data.detailed is not None:
        try:
            files["prd/ground.md"] = contract.with_contract(data.detailed.raw.decode()).encode()
            ground, ground_file = GroundSource.DETAILED, data.detailed.path
        except UnicodeDecodeError:
            built.problems.append(Problem(Severity.WARNING, data.detailed.shown, "",
                                          "not UTF-8: the ground level is derived instead"))  # fmt: skip
    if ground is GroundSource.DERIVED:
        derived = _derived_ground(prds[Difficulty.EASY], easy.data)
        files["prd/ground.md"] = contract.with_contract(derived).encode()
        built.problems.append(Problem(Severity.NOTE, easy.json.shown, "",
                                      "no detailed_prds GroundPRD: the ground level is the easy "
                                      "PRD with this level's task records stated"))  # fmt: skip
    case_dirs = []
    public_origin = _cases(files, "public", data.public, formats)
    for case_dir, cases in data.case_dirs.items():
        kept = public_origin if case_dir is CaseDir.PUBLIC else _cases(
            files, case_dir.task_split.value, cases, formats)  # fmt: skip
        folder = cases[0].source.path.rsplit("/", 1)[0] if cases and cases[0].source else None
        if folder is not None:
            case_dirs.append(CaseDirOrigin(dir=case_dir, folder=folder, files=kept))
    if data.golden is not None:
        _golden(data, built)
    for rel, path in data.test_files.items():
        built.golden[TESTS_COPY + rel] = path
    files["task.toml"] = task_toml(data, reference, base, edits).encode()
    origin = IcaeOrigin(
        alias=data.alias, key=data.folder, alias_record=data.record,
        alias_index=index.order.get(data.alias), alias_format=index.format,
        levels=levels, ground=ground, ground_file=ground_file, case_dirs=case_dirs,
        golden_folder=golden_path(data.folder) if data.golden is not None else None,
        oracle_overlay=list(data.overlay),
        tests_folder=tests_path(data.folder) if data.test_files else None,
    )  # fmt: skip
    origin = _keep_verbatim(data, origin, built, formats)
    files[ORIGIN_FILE] = dump(origin.model_dump(mode="json"), OURS)
    _check_spec(data, built)
    return built


def _check_spec(data: AliasData, built: BuiltTask) -> None:
    """What the catalog checks of task.toml, before anything is written: a language this
    machine knows no runtime for on the Debian base is the alias's entry's problem; one no
    registry here provides is imported with a warning (`icae tasks check` fails it)."""
    try:
        spec = TaskSpec.model_validate(tomllib.loads(built.files["task.toml"].decode()))
    except (ValidationError, tomllib.TOMLDecodeError) as err:  # a bug of ours: said plainly
        built.problems.append(Problem(Severity.ERROR, "task.toml", "", f"not a task: {err}"))
        return
    if (problem := runtime_problem(spec)) is not None:
        where = f"{data.alias}.language" if problem[0] == "language" else problem[0]
        built.problems.append(Problem(Severity.ERROR, ALIAS_FILE, where, problem[1]))
    if (refused := runtime_refusal(spec)) is not None:
        where = f"{data.alias}.language" if refused[0] == "language" else refused[0]
        built.problems.append(Problem(Severity.WARNING, ALIAS_FILE, where, refused[1]))


def _sources(data: AliasData) -> list[tuple[str, str, bytes, Any]]:
    """(layout path, shown, bytes, parsed or None) of every source file an export writes
    from the task's files."""
    out: list[tuple[str, str, bytes, Any]] = []
    for level in data.levels.values():
        out.append((level.json.path, level.json.shown, level.json.raw, level.data))
        if level.start is not None:
            out.append((level.start.path, level.start.shown, level.start.raw, None))
    if data.detailed is not None:
        out.append((data.detailed.path, data.detailed.shown, data.detailed.raw, None))
    for cases in data.case_dirs.values():
        out += [(f.source.path, f.source.shown, f.source.raw, f.original)
                for f in cases if f.source]  # fmt: skip
    return out


def _given_back(again: JsonOut | bytes | None, raw: bytes, parsed: Any, fmt: Any) -> bool:
    """Whether an export writes `raw` again. For JSON, without writing it: the same data in
    the format that wrote `raw` (`detect` proved it: `fmt`) gives `raw`."""
    if isinstance(again, JsonOut):
        return fmt is not None and fmt == again.format and identical(again.data, parsed)
    return again == raw


def _keep_verbatim(
    data: AliasData, origin: IcaeOrigin, built: BuiltTask, formats: Formats
) -> IcaeOrigin:
    """The source files an export would not write again byte for byte are kept as they were."""
    again = source_objects(built.files, origin)
    verbatim, given = [], {}
    for path, shown, raw, parsed in _sources(data):
        if not _given_back(again.get(path), raw, parsed, formats.get(path)):
            verbatim.append(path)
            if (out := again.get(path)) is not None:
                given[path] = digest(out)
            built.files[VERBATIM + path] = raw
            built.problems.append(Problem(Severity.NOTE, shown, "",
                                          "kept as it is for an export: the task's files do not "
                                          "give it back byte for byte"))  # fmt: skip
    if not verbatim:
        return origin
    return origin.model_copy(update={"verbatim": verbatim, "verbatim_given": given})
