"""Find, load and validate tasks. One bad task never hides the rest.

Listing is from cards (icae_tui/catalog/index.py keeps them between loads, so a catalog of
hundreds lists without reading its large files); a task's cases, records and solutions are
loaded when the task is first used (`Catalog.tasks[id]`)."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

import yaml
from pydantic import BaseModel, ValidationError

from icae_tui.catalog import index as catalog_index
from icae_tui.catalog.search import TaskCard
from icae_tui.domain.runtimes import runtime_problem
from icae_tui.domain.solution import Solution
from icae_tui.domain.task import (
    PRD_CHARS,
    CaseFile,
    CaseRef,
    Level,
    Split,
    Task,
    TaskSpec,
    UserAgentData,
)
from icae_tui.errors import ConfigError
from icae_tui.util.documents import TooDeep, load_json, load_toml

M = TypeVar("M", bound=BaseModel)
D = TypeVar("D")
# libyaml's parser when PyYAML has it: the same documents, some twenty times faster (a catalog
# of hundreds of tasks parses a few solutions each)
YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TaskError(ConfigError):
    """A task file is malformed. The message names the file and the field."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class TaskLoader(Mapping[str, Task]):
    """A listed catalog's tasks by id, each loaded in full (its cases, records and solutions
    read and validated) when first asked for, then kept. A task whose files were changed into
    a malformed one since the listing raises its TaskError on `[id]`; `get` returns None
    and keeps the error in `failed`, for a display to say why."""

    def __init__(self, roots: Mapping[str, Path], loaded: Mapping[str, Task]) -> None:
        self.roots = dict(roots)
        self.loaded = dict(loaded)
        self.failed: dict[str, TaskError] = {}

    def __getitem__(self, task_id: str) -> Task:
        if (task := self.loaded.get(task_id)) is None:
            root = self.roots[task_id]
            try:
                task = self.loaded[task_id] = load_task(root)
            except TaskError as err:
                self.failed[task_id] = err
                raise
            except Exception as err:  # as the listing words it
                self.failed[task_id] = TaskError(root, f"cannot load: {type(err).__name__}: {err}")
                raise self.failed[task_id] from None
        return task

    @overload
    def get(self, task_id: str, /) -> Task | None: ...

    @overload
    def get(self, task_id: str, /, default: Task | D) -> Task | D: ...

    def get(self, task_id: str, /, default: object = None) -> object:
        try:
            return self[task_id]
        except (KeyError, TaskError):
            return default

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.roots

    def __iter__(self) -> Iterator[str]:
        return iter(self.roots)

    def __len__(self) -> int:
        return len(self.roots)


@dataclass
class Catalog:
    """The tasks (loaded on first use when listed by `load_catalog`), each one's card (what
    listing and the task browser show), and the located errors of the tasks that do not load."""

    tasks: Mapping[str, Task] = field(default_factory=dict)
    errors: list[TaskError] = field(default_factory=list)
    cards: dict[str, TaskCard] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.tasks, TaskLoader):  # built from loaded tasks: cards from them
            for task_id, task in self.tasks.items():
                self.cards.setdefault(task_id, TaskCard.of(task))


def roots_of(tasks: Mapping[str, Task]) -> dict[str, Path]:
    """Each task's folder, without loading a listed catalog's tasks."""
    if isinstance(tasks, TaskLoader):
        return dict(tasks.roots)
    return {task_id: Path(task.root) for task_id, task in tasks.items()}


def load_failure(tasks: Mapping[str, Task], task_id: str) -> str:
    """Why `tasks.get(task_id)` gave nothing: its load error, or that there is no such task."""
    if isinstance(tasks, TaskLoader) and (err := tasks.failed.get(task_id)) is not None:
        return str(err)
    return f"no task {task_id!r}"


def default_tasks_dir() -> Path:
    """`./tasks` if present, else the tasks folder beside the package (a source checkout)."""
    here = Path.cwd() / "tasks"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "tasks"


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        parts.append(f"field '{loc}': {e['msg']}")
    more = len(err.errors()) - 5
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _validate(model: type[M], data: Any, path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise TaskError(path, _describe(err)) from None


def _read_json(path: Path) -> Any:
    try:
        return load_json(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise TaskError(
            path, f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from None
    except TooDeep as err:
        raise TaskError(path, f"invalid JSON: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TaskError(path, f"cannot read: {err}") from None


def _read_validated(model: type[M], path: Path) -> M:
    """A JSON file as `model`: pydantic's own JSON parser first (about twice as fast as
    `json.loads` and then validating); on any error the file is read again the slow way, so
    the error is located and worded as `_read_json` and `_validate` word it."""
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError:
        return _validate(model, _read_json(path), path)
    except OSError as err:
        raise TaskError(path, f"cannot read: {err}") from None


TASK_TOML_BYTES = 4 * 1024 * 1024  # its fields' bounds (domain/task.py) with room for comments


def load_spec(root: Path) -> TaskSpec:
    path = root / "task.toml"
    if not path.is_file():
        raise TaskError(path, "missing task.toml")
    if (size := path.stat().st_size) > TASK_TOML_BYTES:  # refused unread
        raise TaskError(path, f"{size} bytes: a task.toml has at most {TASK_TOML_BYTES}")
    try:
        data = load_toml(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        raise TaskError(path, f"invalid TOML: {err}") from None
    spec = _validate(TaskSpec, data, path)
    if (problem := runtime_problem(spec)) is not None:  # reported now, not as a failed run
        raise TaskError(path, f"field '{problem[0]}': {problem[1]}")
    return spec


def load_solution(path: Path) -> Solution:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except yaml.YAMLError as err:
        raise TaskError(path, f"invalid YAML: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TaskError(path, f"cannot read: {err}") from None
    return _validate(Solution, data, path)


def _default_pattern(stem: str, case_input: Any) -> str:
    op = case_input.get("op") if isinstance(case_input, dict) else None
    return op if isinstance(op, str) else stem


def load_cases(root: Path) -> list[CaseRef]:
    refs: list[CaseRef] = []
    for split in Split:
        folder = root / "cases" / split.value
        for path in sorted(folder.glob("*.json")):
            case_file, stem = _read_validated(CaseFile, path), path.stem
            for index, case in enumerate(case_file.cases):
                pattern = case.pattern or _default_pattern(stem, case.input)
                refs.append(
                    CaseRef(split=split, stem=stem, index=index, case=case, pattern=pattern)
                )
    return refs


def load_task(root: Path) -> Task:
    return _load_task(root)[0]


def _load_task(root: Path) -> tuple[Task, list[TaskError]]:
    """The task, and an error for each of its solutions that does not load (parsed once)."""
    spec = load_spec(root)
    if spec.id != root.name:
        raise TaskError(
            root / "task.toml", f"field 'id': {spec.id!r} differs from folder name {root.name!r}"
        )
    prd: dict[Level, str] = {}
    agents: dict[Level, UserAgentData] = {}
    for level in Level:
        prd_path = root / "prd" / f"{level.value}.md"
        if not prd_path.is_file():
            raise TaskError(prd_path, "missing PRD for level " + level.value)
        prd[level] = _read_prd(prd_path)
        ua_path = root / "user_agent" / f"{level.value}.json"
        if not ua_path.is_file():
            raise TaskError(ua_path, "missing user-agent data for level " + level.value)
        agents[level] = _read_validated(UserAgentData, ua_path)
    cases = load_cases(root)
    public_only = spec.origin is not None and spec.origin.public_only
    if not any(c.split is Split.HIDDEN for c in cases) and not public_only:
        raise TaskError(root / "cases" / "hidden", "no hidden cases")
    if public_only and not cases:
        raise TaskError(root / "cases" / "public", "no cases ([origin] public_only)")
    solutions, broken = load_solutions(root)
    task = Task(
        spec=spec, root=str(root), prd=prd, user_agent=agents, cases=cases, solutions=solutions
    )
    return task, broken


def _read_prd(path: Path) -> str:
    """A level's PRD, at most PRD_CHARS characters (a larger file is refused unread)."""
    too_long = TaskError(path, f"a PRD has at most {PRD_CHARS} characters")
    if path.stat().st_size > 4 * PRD_CHARS:  # 4: UTF-8's most bytes per character
        raise too_long
    text = path.read_text(encoding="utf-8")
    if len(text) > PRD_CHARS:
        raise too_long
    return text


SOLUTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def solution_path(root: Path, name: str) -> Path | None:
    """The file of solution `name` inside the task's `solutions/`, or None: a name is a
    plain file stem, never a path, so nothing outside that folder can be loaded."""
    if not SOLUTION_NAME.fullmatch(name):
        return None
    folder = (root / "solutions").resolve()
    path = (folder / f"{name}.yaml").resolve()
    return path if path.parent == folder and path.is_file() else None


def load_solutions(root: Path) -> tuple[list[str], list[TaskError]]:
    """Names of the solutions that load, and a located error for each one that does not."""
    names, errors = [], []
    for path in sorted((root / "solutions").glob("*.yaml")):
        if solution_path(root, path.stem) is None:
            errors.append(TaskError(path, "solution names are letters, digits, '_', '-', '.'"))
            continue
        try:
            load_solution(path)
        except TaskError as err:
            errors.append(err)
            continue
        except OSError as err:
            errors.append(TaskError(path, f"cannot read: {err}"))
            continue
        names.append(path.stem)
    return names, errors


def load_catalog(tasks_dir: Path | None = None, *, index: bool | None = None) -> Catalog:
    """Every task folder of `tasks_dir`, listed: a folder unchanged since its last full load
    is listed from the index (`index`: None follows ICAE_CATALOG_INDEX), any other is loaded
    and validated in full now, so a malformed task is reported here."""
    tasks_dir = tasks_dir or default_tasks_dir()
    if not tasks_dir.is_dir():
        return Catalog(errors=[TaskError(tasks_dir, "tasks folder not found")])
    use_index = catalog_index.enabled() if index is None else index
    kept = catalog_index.Index(catalog_index.index_path(tasks_dir) if use_index else None)
    roots: dict[str, Path] = {}
    loaded: dict[str, Task] = {}
    cards: dict[str, TaskCard] = {}
    errors: list[TaskError] = []
    folders = sorted(
        p for p in tasks_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    )
    for root in folders:
        print_ = catalog_index.fingerprint(root)
        entry = kept.hit(root.name, print_)
        task = card = None
        if entry is None:
            task, card, entry = _full_entry(root, print_, tasks_dir)
            kept.put(root.name, entry)
        errors += [TaskError(tasks_dir / path, message) for path, message in entry.errors]
        if entry.card is None:
            continue
        roots[root.name] = root
        if task is not None:
            loaded[root.name] = task
        cards[root.name] = card or catalog_index.card_from_json(entry.card, str(root))
    kept.keep_only({root.name for root in folders})
    kept.save()
    return Catalog(tasks=TaskLoader(roots, loaded), errors=errors, cards=cards)


def _full_entry(
    root: Path, print_: str, tasks_dir: Path
) -> tuple[Task | None, TaskCard | None, catalog_index.Entry]:
    """Load the task in full: the task and its card (None when it does not load), and its
    index entry."""
    task: Task | None = None
    broken: list[TaskError] = []
    try:
        task, broken = _load_task(root)
    except TaskError as err:
        broken = [err]
    except Exception as err:  # a task must never take the catalog down
        broken = [TaskError(root, f"cannot load: {type(err).__name__}: {err}")]
    card = TaskCard.of(task) if task is not None else None
    located = [(_relative(err.path, tasks_dir), err.message) for err in broken]
    kept = catalog_index.card_json(card) if card is not None else None
    return task, card, catalog_index.Entry(print_, kept, located)


def _relative(path: Path, tasks_dir: Path) -> str:
    try:
        return str(path.relative_to(tasks_dir))
    except ValueError:
        return str(path)
