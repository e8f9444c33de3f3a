"""What an operator set in an imported task.toml that importing the task again keeps.

An import rewrites task.toml whole; these parts of it are the operator's to set or correct,
so the import reads the old file (tomllib) first and carries them over:

- `[packages]` (allow, deny, budget_mb): no import writes it; kept as it was.
- `[image] packages`, `[oracle] requires`, `[fuzz] requires` (`Listed`): lists an import may
  fill itself (CLI-Tool-Bench's, from the tool's own files). A name the operator added stays,
  one they removed is not put back; a name the import finds anew is added, one it found
  before and no longer finds goes. What an import found is recorded with it (`found`, in
  its origin record) so that the next one can tell the two apart; with no record (an import
  made before there was one) every name the file has stays.

A kept value the task format refuses is an error: the folder is left as it is, to be fixed.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from icae_tui.domain.task import FuzzSpec, ImageRecipe, PackagesSpec
from icae_tui.importers.problems import Problem, Severity, field_path
from icae_tui.importers.toml_text import TomlValue, toml_table


class Listed(StrEnum):
    """A kept list, by its `table.key` in task.toml."""

    IMAGE_PACKAGES = "image.packages"
    ORACLE_REQUIRES = "oracle.requires"
    FUZZ_REQUIRES = "fuzz.requires"

    @property
    def table(self) -> str:
        return self.value.split(".")[0]

    @property
    def key(self) -> str:
        return self.value.split(".")[1]


Found = Mapping[Listed, list[str]]  # what an import found of each list


@dataclass(frozen=True)
class Edits:
    """The old task.toml's kept parts (nothing when there was none)."""

    packages: dict[str, TomlValue] | None = None  # the [packages] table, the keys it set
    lists: dict[Listed, list[str]] = field(default_factory=dict)  # the kept lists it had

    def merged(self, what: Listed, found: list[str], before: Found | None) -> list[str]:
        """`what` as the new import writes it: the import's `found` names with the
        operator's edits to the old list kept (`before`: what the last import found)."""
        kept = self.lists.get(what)
        if kept is None:
            return list(found)
        if before is None:  # no record of what the last import found: keep every name
            return list(dict.fromkeys([*kept, *found]))
        was = before.get(what, [])
        still = [n for n in kept if n in found or n not in was]  # the operator's stay
        return still + [n for n in found if n not in kept and n not in was]

    def packages_table(self) -> str | None:
        """The `[packages]` table's text, when the old file had one."""
        return None if self.packages is None else toml_table("packages", dict(self.packages))


def _invalid(folder: Path, err: ValidationError, prefix: str) -> Problem:
    first = err.errors()[0]
    return Problem(Severity.ERROR, str(folder / "task.toml"), field_path(first["loc"], prefix),
                   f"{first['msg']}: a new import keeps this value; fix it (or remove it) "
                   "and import again; the folder is left as it is")  # fmt: skip


def read_edits(folder: Path) -> tuple[Edits, Problem | None]:
    """The kept parts of `folder`'s task.toml (none when it has none), or why they cannot
    be kept (an unreadable file, a value the task format refuses)."""
    path = folder / "task.toml"
    if path.is_symlink() or not path.is_file():
        return Edits(), None
    try:
        old: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return Edits(), Problem(Severity.ERROR, str(path), "",
                                f"not readable as TOML ({err}): an import keeps the "
                                "operator's [packages], [image] packages and requires from "
                                "it; fix it (or remove it) and import again; the folder is "
                                "left as it is")  # fmt: skip
    packages: dict[str, TomlValue] | None = None
    if "packages" in old:
        try:
            spec = PackagesSpec.model_validate(old["packages"])
        except ValidationError as err:
            return Edits(), _invalid(folder, err, "packages")
        packages = spec.model_dump(exclude_unset=True)
    lists: dict[Listed, list[str]] = {}
    for what in Listed:
        table = old.get(what.table)
        if not isinstance(table, dict) or what.key not in table:
            continue
        value = table[what.key]
        try:  # the field's own check (Debian names, requirements)
            if what is Listed.IMAGE_PACKAGES:
                ImageRecipe.model_validate({"packages": value})
            else:
                FuzzSpec.model_validate({"requires": value})
        except ValidationError as err:
            return Edits(), _invalid(folder, err, what.table)
        lists[what] = list(value)
    return Edits(packages, lists), None
