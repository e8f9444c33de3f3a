"""`icae tasks import icae-eval PATH`: a whole ICAE-EVAL tree into task folders, in one go.

Every alias of the tree (a level's prd_json or PRD) becomes `<tasks>/<id>` (`realcode@050` →
`realcode-050`), or is reported: each problem with its file and field, and one alias's
problems never stop another's import. A task with an ERROR is not imported (an earlier
import of it stays as it was). Importing the same tree again changes no file
(folder_sync.py) and keeps what the operator set in task.toml (operator_edits.py); a folder
that holds something else than this alias's import is never written. Records copied between
aliases are found over the whole tree, whatever `only` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from icae_tui.catalog.loader import TaskError, load_task
from icae_tui.domain.task import Reference
from icae_tui.errors import ConfigError
from icae_tui.importers.folder_sync import Change, sync_folder
from icae_tui.importers.icae_copies import LevelText, copied_records
from icae_tui.importers.icae_export import origin_of
from icae_tui.importers.icae_layout import Difficulty, Layout, prd_json_path, task_id
from icae_tui.importers.icae_read import AliasIndex, read_alias
from icae_tui.importers.icae_task import build_task
from icae_tui.importers.json_format import parse
from icae_tui.importers.operator_edits import read_edits
from icae_tui.importers.problems import Problem, Severity, errors_in


class Outcome(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    FAILED = "not imported"


_OUTCOMES = {Change.CREATED: Outcome.CREATED, Change.UPDATED: Outcome.UPDATED,
             Change.UNCHANGED: Outcome.UNCHANGED}  # fmt: skip


@dataclass
class TaskImport:
    alias: str
    task_id: str
    outcome: Outcome
    reference: Reference | None = None  # what its cases are judged against, once imported
    problems: list[Problem] = field(default_factory=list)


@dataclass
class ImportReport:
    tree: Path
    into: Path
    tasks: list[TaskImport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # the tree's own (repo_alias.json)

    def count(self, outcome: Outcome) -> int:
        return sum(t.outcome is outcome for t in self.tasks)

    @property
    def imported(self) -> list[TaskImport]:
        return [t for t in self.tasks if t.outcome is not Outcome.FAILED]

    @property
    def failed(self) -> list[TaskImport]:
        return [t for t in self.tasks if t.outcome is Outcome.FAILED]


def _level_texts(layout: Layout, aliases: list[str]) -> Iterator[LevelText]:
    for alias in aliases:
        for difficulty in Difficulty:
            rel = prd_json_path(alias, difficulty)
            path = layout.tree / rel
            try:
                data = parse(path.read_bytes())
            except (OSError, ValueError):
                continue  # read_alias reports it
            if isinstance(data, dict):
                yield LevelText(alias, difficulty, rel, data)


def _owner_problem(folder: Path, alias: str) -> Problem | None:
    """Why `folder` must not be written for `alias` (None: it is free or alias's import)."""
    if not folder.exists():
        return None
    try:
        origin = origin_of(folder)
    except ValueError as err:
        origin, why = None, f"its import record is broken ({err})"
    else:
        why = "it is not an ICAE-EVAL import" if origin is None else f"it is {origin.alias}'s"
    if origin is not None and origin.alias == alias:
        return None
    if not (folder / "task.toml").exists() and not any(folder.iterdir()):
        return None
    return Problem(Severity.ERROR, str(folder), "", f"the task folder exists and {why}: "
                   "left as it is")  # fmt: skip


def _import_one(
    layout: Layout, index: AliasIndex, alias: str, into: Path, copies: list[Problem],
    base: str | None, taken: set[str],
) -> TaskImport:  # fmt: skip
    tid = task_id(alias)
    data = read_alias(layout, alias, index)
    result = TaskImport(alias, tid, Outcome.FAILED, problems=[*data.problems, *copies])
    folder = into / tid
    if tid in taken:
        result.problems.append(Problem(Severity.ERROR, layout.shown(layout.tree), "",
                                       f"another alias is imported as {tid} too"))  # fmt: skip
    elif (owned := _owner_problem(folder, alias)) is not None:
        result.problems.append(owned)
    taken.add(tid)
    if errors_in(result.problems):
        return result
    edits, unreadable = read_edits(folder)  # what the operator set there is kept
    if unreadable is not None:
        result.problems.append(unreadable)
        return result
    built = build_task(data, index, base=base, edits=edits)
    result.problems += built.problems
    if errors_in(built.problems):
        return result
    synced = sync_folder(folder, {**built.files, **built.golden})
    try:
        load_task(folder)
    except TaskError as err:  # what the checks above missed: said, never hidden
        result.problems.append(Problem(Severity.ERROR, str(folder), "",
                                       f"imported, but the catalog refuses it: {err.message}"))  # fmt: skip
        return result
    result.outcome, result.reference = _OUTCOMES[synced.change], built.reference
    return result


def import_tree(
    tree: Path, into: Path, *, tests: Path | None = None, golden: Path | None = None,
    base: str | None = None, only: list[str] | None = None,
) -> ImportReport:  # fmt: skip
    """Import every alias of `tree` (or those `only` names, by alias or task id) into the
    tasks folder `into`. ConfigError when `tree` is no ICAE-EVAL tree."""
    layout = Layout.of(tree, tests, golden)
    if not tree.is_dir():
        raise ConfigError(f"{tree}: not a folder")
    aliases = layout.aliases()
    if not aliases:
        raise ConfigError(
            f"{tree}: no ICAE-EVAL tasks (no user_agent/prd_json*/<alias>.json, no "
            "fuzzy_prds*/<alias>/start.md)"
        )
    report = ImportReport(tree, into)
    index = AliasIndex.read(layout)
    report.problems += index.problems
    wanted = aliases
    if only:
        names = set(only)
        wanted = [a for a in aliases if a in names or task_id(a) in names]
        known = set(wanted) | {task_id(a) for a in wanted}
        for name in sorted(names - known):
            report.problems.append(Problem(Severity.ERROR, layout.shown(tree), "",
                                           f"no alias {name!r} in the tree"))  # fmt: skip
    copies = copied_records(_level_texts(layout, aliases))
    into.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    for alias in wanted:
        report.tasks.append(
            _import_one(layout, index, alias, into, copies.get(alias, []), base, taken)
        )
    return report
