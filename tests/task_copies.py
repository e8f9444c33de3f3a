"""Copies of the fixture task `mini` that a test changes (a solution added, a line of its
task.toml replaced, a case file added), loaded the way a run loads them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.task import Task
from tests.conftest import FIXTURE_TASKS


def copy_mini(tmp_path: Path) -> Path:
    """A copy of the fixture task `mini` at tmp_path/tasks/mini: its folder."""
    folder = tmp_path / "tasks" / "mini"
    shutil.copytree(FIXTURE_TASKS / "mini", folder)
    return folder


def good_step(folder: Path, kind: str = "write") -> dict[str, Any]:
    """The good solution's first step of `kind`: by default its write of mini.py."""
    good = yaml.safe_load((folder / "solutions" / "good.yaml").read_text())
    return next(step for step in good["steps"] if kind in step)


def add_solution(folder: Path, name: str, steps: list[Any], **fields: Any) -> None:
    """solutions/NAME.yaml: these steps, and fields such as `pace_s`."""
    solution = {**fields, "steps": steps}
    (folder / "solutions" / f"{name}.yaml").write_text(yaml.safe_dump(solution))


def edit_toml(folder: Path, old: str, new: str) -> None:
    """Replace `old` (which must be there) by `new` in the task's task.toml."""
    toml = folder / "task.toml"
    text = toml.read_text()
    assert old in text, f"{old!r} not in {toml}"
    toml.write_text(text.replace(old, new))


def load_mini(folder: Path) -> Task:
    """The copy as the catalog loads it."""
    return load_catalog(folder.parent).tasks["mini"]
