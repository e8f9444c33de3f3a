"""What an imported task keeps of its ICAE-EVAL source beyond the task format:
`origin/icae-eval.json` in the task folder, and `origin/verbatim/` for the files an export
could not write again from the task's own files.

An export (icae_export.py) writes every source file from the task's files and this record:
each level's JSON from `user_agent/<level>.json` with its public cases put back where they
were, its start.md from `prd/<level>.md`, each case file from `cases/<split>/`, the golden
repository from `oracle/`, the task's entry of repo_alias.json from `alias_record`, each in
the JSON format it had. A source file that this does not give back byte for byte (a stored
value changed on import, a level's public cases that differ from the authoritative ones,
formatting no `json.dumps` reproduces) is listed in `verbatim` and kept as it was; an
export writes it as it was until the task's files for it are edited.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from icae_tui.importers.icae_layout import CaseDir, Difficulty
from icae_tui.importers.json_format import JsonFormat

ORIGIN_FILE = "origin/icae-eval.json"
VERBATIM = "origin/verbatim/"  # + the file's path in the ICAE-EVAL layout
TESTS_COPY = "origin/tests/"  # + the file's path in its rcb_tests repository
ORIGIN_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LevelOrigin(_Model):
    difficulty: Difficulty
    json_file: str  # its ICAE layout path
    json_format: JsonFormat
    public_at: int | None = None  # where `public_test_cases` stood among the keys (None: absent)
    public_names: list[str] = Field(default_factory=list)  # its file names, in their order
    start_file: str | None = None  # its start.md, when the tree had one


class CaseFileOrigin(_Model):
    name: str
    format: JsonFormat


class CaseDirOrigin(_Model):
    dir: CaseDir
    folder: str  # its ICAE layout path
    files: list[CaseFileOrigin]


class GroundSource(StrEnum):
    DETAILED = "detailed"  # detailed_prds/<alias>/start.md
    DERIVED = "derived"  # the easy PRD with the easy level's records stated (no GroundPRD)


class IcaeOrigin(_Model):
    version: int = ORIGIN_VERSION
    alias: str
    key: str  # the folder of its repositories under rcb_tests_repos/ and realcode_repos/
    alias_record: dict[str, Any] | None = None  # its repo_alias.json entry, as it was
    alias_index: int | None = None  # its place in repo_alias.json
    alias_format: JsonFormat | None = None
    levels: list[LevelOrigin]
    ground: GroundSource
    ground_file: str | None = None
    case_dirs: list[CaseDirOrigin] = Field(default_factory=list)
    golden_folder: str | None = None  # its ICAE layout path, when the task's oracle is it
    # oracle/<path> that are the rcb_tests repository's harness, not the golden repository's
    oracle_overlay: list[str] = Field(default_factory=list)
    # the rcb_tests repository's ICAE layout path, when it holds more than the case files
    # (kept in TESTS_COPY)
    tests_folder: str | None = None
    verbatim: list[str] = Field(default_factory=list)
    # each verbatim file's sha256 of what the task's files gave for it at the import: while
    # they give the same, an export writes the file as it was; once edited, the edit
    verbatim_given: dict[str, str] = Field(default_factory=dict)
