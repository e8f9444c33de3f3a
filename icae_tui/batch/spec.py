"""A batch's spec: which tasks × agents × levels × responders, how many repeats, and how much
runs at once. Written as TOML (`icae batch SPEC`) or given as flags for the common case:

    name = "smoke"                       # a label (optional)
    tasks = ["semver", "tidy", "word*"]  # task ids or globs over the catalog ("*": all)
    agents = ["scripted:good", "scripted:partial"]
    levels = ["L1"]                      # default L1
    responders = ["simulated"]           # default simulated
    repeats = 2                          # default 1
    tasks_dir = "../imported"            # optional; relative to the spec file
    engine = "docker"                    # optional; a backend or an engines-file entry

    [[engines]]                          # or a pool of engines, each with its runs at once
    name = "docker"                      # (a lost engine's runs are retried on the others)
    runs = 2

    ray = "10.0.0.5:6379"                # or a Ray cluster: its nodes that declare an engine
                                         # (resource icae_engine) are the pool (cluster/)

    [limits]
    runs_at_once = 2                     # default: half the machine's cores, at least 1
    cases_at_once = 2                    # per run; default: cores shared between the runs
    max_attempts = 3                     # a run failed for infrastructure is retried
    budget = 8                           # questions per run; default: the task's

Errors name the file, the line and the field (`batch.toml:4: levels.0: …`).
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from icae_tui.agents.config import key_lines, locate
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level
from icae_tui.errors import ConfigError
from icae_tui.util.documents import TooDeep, load_toml

Count = Annotated[int, Field(strict=True, ge=1)]
NonEmpty = Annotated[str, Field(strict=True, min_length=1)]


class BatchSpecError(ConfigError):
    """A spec that cannot be run: where and what."""


class BatchLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    runs_at_once: Count | None = None
    cases_at_once: Count | None = None
    max_attempts: Annotated[int, Field(strict=True, ge=1, le=10)] = 3
    budget: Annotated[int, Field(strict=True, ge=0)] | None = None

    def runs(self, cores: int) -> int:
        return self.runs_at_once or max(1, cores // 2)

    def cases(self, cores: int) -> int:
        """Cases at once per run: the cores shared between the runs (never oversubscribed
        beyond one case per core and run), at least 1."""
        return self.cases_at_once or max(1, cores // self.runs(cores))


class EngineSlot(BaseModel):
    """One engine of a batch's pool (`[[engines]]`): a backend or an engines-file entry, and
    how many of the batch's runs it takes at once."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: NonEmpty
    runs: Count = 1


class BatchSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    tasks: Annotated[list[NonEmpty], Field(min_length=1)]
    agents: Annotated[list[NonEmpty], Field(min_length=1)]
    levels: Annotated[list[Level], Field(min_length=1)] = [Level.L1]
    responders: Annotated[list[ResponderMode], Field(min_length=1)] = [ResponderMode.SIMULATED]
    repeats: Annotated[int, Field(strict=True, ge=1, le=1000)] = 1
    tasks_dir: str | None = None
    engine: str | None = None
    # a pool of engines instead of one: each takes its `runs` at once, a lost one's runs go
    # to the others (runner.py); none: `engine` with the limits' runs_at_once
    engines: list[EngineSlot] = []
    # a Ray cluster's address instead (`icae batch --ray`): each run on a node that declares
    # an engine (icae_tui/cluster); its nodes are the pool
    ray: NonEmpty | None = None
    limits: BatchLimits = BatchLimits()

    @field_validator("engines")
    @classmethod
    def _engines_once(cls, slots: list[EngineSlot]) -> list[EngineSlot]:
        names = [s.name for s in slots]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"engines named twice: {', '.join(twice)}")
        return slots

    @field_validator("tasks", "agents")
    @classmethod
    def _no_repeats(cls, values: list[str]) -> list[str]:
        seen = [v for i, v in enumerate(values) if v in values[:i]]
        if seen:
            raise ValueError(f"named twice: {', '.join(seen)}")
        return values

    @model_validator(mode="after")
    def _one_pool(self) -> BatchSpec:
        if self.ray and self.engines:
            raise ValueError("ray: a Ray cluster's nodes are the pool; drop [[engines]]")
        return self


def _message(err: dict[str, Any]) -> str:
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def parse_spec(text: str, path: Path) -> BatchSpec:
    """The spec in `text` (read from `path`); BatchSpecError naming file, line and field."""
    try:
        data = load_toml(text)
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        raise BatchSpecError(f"{path}: invalid TOML: {err}") from None
    try:
        spec = BatchSpec.model_validate(data)
    except ValidationError as err:
        lines = key_lines(text)
        problems = []
        for e in err.errors():
            loc = [str(p) for p in e["loc"]]
            line = locate(lines, loc)  # the field's line, or its table's
            where = f"{path}:{line}" if line is not None else str(path)
            problems.append(f"{where}: {'.'.join(loc) or 'spec'}: {_message(dict(e))}")
        raise BatchSpecError("\n".join(problems)) from None
    if spec.tasks_dir is not None and not Path(spec.tasks_dir).is_absolute():
        spec = spec.model_copy(update={"tasks_dir": str(path.parent / spec.tasks_dir)})
    return spec


def load_spec(path: Path) -> BatchSpec:
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise BatchSpecError(f"{path}: cannot read: {err}") from None
    return parse_spec(text, path)


def match_tasks(patterns: Sequence[str], known: Iterable[str]) -> list[str]:
    """The task ids `patterns` name (ids or globs), in the patterns' order, each once;
    BatchSpecError naming any pattern that matches nothing."""
    ids = sorted(known)
    out: list[str] = []
    unmatched = []
    for pattern in patterns:
        hits = (
            [t for t in ids if fnmatch.fnmatchcase(t, pattern)]
            if _is_glob(pattern)
            else ([pattern] if pattern in ids else [])
        )
        if not hits:
            unmatched.append(pattern)
        out += [t for t in hits if t not in out]
    if unmatched:
        shown = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
        raise BatchSpecError(
            f"no task matches {', '.join(repr(p) for p in unmatched)} (known: {shown or 'none'})"
        )
    return out


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def machine_cores() -> int:
    """The cores this process may use (its affinity, not the whole machine's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
