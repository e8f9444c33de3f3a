"""Find, load and validate tasks. One bad task never hides the rest."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from icae_tui.domain.runtimes import runtime_problem
from icae_tui.domain.solution import Solution
from icae_tui.domain.task import (
    CaseFile,
    CaseRef,
    Level,
    Split,
    Task,
    TaskSpec,
    UserAgentData,
)
from icae_tui.errors import ConfigError

M = TypeVar("M", bound=BaseModel)
# libyaml's parser when PyYAML has it: the same documents, some twenty times faster (a catalog
# of hundreds of tasks parses a few solutions each)
YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TaskError(ConfigError):
    """A task file is malformed. The message names the file and the field."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass
class Catalog:
    tasks: dict[str, Task] = field(default_factory=dict)
    errors: list[TaskError] = field(default_factory=list)


def default_tasks_dir() -> Path:
    """`./tasks` if present, else the tasks folder beside the package (a source checkout)."""
    here = Path.cwd() / "tasks"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parent.parent / "tasks"


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
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise TaskError(
            path, f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from None
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


def load_spec(root: Path) -> TaskSpec:
    path = root / "task.toml"
    if not path.is_file():
        raise TaskError(path, "missing task.toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
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
        prd[level] = prd_path.read_text(encoding="utf-8")
        ua_path = root / "user_agent" / f"{level.value}.json"
        if not ua_path.is_file():
            raise TaskError(ua_path, "missing user-agent data for level " + level.value)
        agents[level] = _read_validated(UserAgentData, ua_path)
    cases = load_cases(root)
    if not any(c.split is Split.HIDDEN for c in cases):
        raise TaskError(root / "cases" / "hidden", "no hidden cases")
    solutions, broken = load_solutions(root)
    task = Task(
        spec=spec, root=str(root), prd=prd, user_agent=agents, cases=cases, solutions=solutions
    )
    return task, broken


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


def load_catalog(tasks_dir: Path | None = None) -> Catalog:
    tasks_dir = tasks_dir or default_tasks_dir()
    catalog = Catalog()
    if not tasks_dir.is_dir():
        catalog.errors.append(TaskError(tasks_dir, "tasks folder not found"))
        return catalog
    for root in sorted(
        p for p in tasks_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    ):
        try:
            task, broken = _load_task(root)
        except TaskError as err:
            catalog.errors.append(err)
            continue
        except Exception as err:  # a task must never take the catalog down
            catalog.errors.append(TaskError(root, f"cannot load: {type(err).__name__}: {err}"))
            continue
        catalog.tasks[task.id] = task
        catalog.errors += broken  # the task stays; its broken solutions go
    return catalog
