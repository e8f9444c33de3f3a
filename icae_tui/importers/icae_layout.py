"""Where things are in an ICAE-EVAL tree, and what its names mean here.

```
PATH/
  user_agent/prd_json/<alias>.json          normal  → L1   {fuzzy_prd, oracle_data,
  user_agent/prd_json_medium/<alias>.json   medium  → L2    public_test_cases: {"<stem>.json":
  user_agent/prd_json_easy/<alias>.json     easy    → L3    {description, cases}}}
  fuzzy_prds{,_medium,_easy}/<alias>/start.md   the PRD the agent is given, per level
  detailed_prds/<alias>/start.md            GroundPRD, where present (gated by ICAE-EVAL)
  repo_alias.json                           {alias: {url, …, language, key, username,
                                             repo_name, alias}}; key = username__repo_name
  rcb_tests_repos/<key>/rcb_tests/          the authoritative cases (rcb_tests_repos.tar.gz):
      {public_test_cases,test_cases,enhanced_test_cases}/<stem>.json
      test.sh, …                            what else it holds: kept for an export
  realcode_repos/<key>/                     the golden repository (realcode_repos.tar.lz4):
                                            the original source (with its RCB dispatcher),
                                            which ICAE-EVAL only reads for structural scores
```

ICAE-EVAL runs the protocol on the agent's delivery only: `bash rcb_tests/test.sh
--cases-dir <sub>` (default test_cases) in a copy of it, the cases of rcb_tests/<sub>/*.json
given without their expected_output; each case's raw stdout is read back from
rcb_tests/stdout/<sub>/<stem>@<index>.txt (any zero-padding, numbered from 0 or 1) and
compared, as text, with the expected_output (a non-string as its json.dumps). Here a golden
repository is run through the same protocol when it holds rcb_tests/test.sh or its rcb_tests
repository does (icae_read.py).

The two data roots can be elsewhere, as ICAE-EVAL's ICAE_RCB_TESTS_DIR and
ICAE_GOLDEN_REPOS_DIR allow (`Layout.tests`, `Layout.golden`); an alias without a key in
repo_alias.json is looked up under its own name there. Paths inside the tree are named
relative to it (`Layout.shown`); the ICAE layout paths an export writes are always the
default ones (`*_path` functions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from icae_tui.domain.task import Level, Split

ALIAS_FILE = "repo_alias.json"
TESTS_ROOT = "rcb_tests_repos"
GOLDEN_ROOT = "realcode_repos"
DETAILED_ROOT = "detailed_prds"
START = "start.md"
RCB = "rcb_tests"
HARNESS = "rcb_tests/test.sh"  # ICAE's protocol: every case runs through it
# tools/write_fuzzy_prds.py: start.md = PRD_HEADER + fuzzy_prd
PRD_HEADER = "## Product Requirement Document\n\n"
QUERY_BUDGET = 16  # ICAE-EVAL's default --query-count


class Difficulty(StrEnum):
    """ICAE-EVAL's `--difficulty`: how much of the requirement its PRD states."""

    NORMAL = "normal"
    MEDIUM = "medium"
    EASY = "easy"

    @property
    def level(self) -> Level:
        return _LEVELS[self]

    @property
    def prd_json(self) -> str:
        return "user_agent/prd_json" + ("" if self is Difficulty.NORMAL else f"_{self.value}")

    @property
    def fuzzy_prds(self) -> str:
        return "fuzzy_prds" + ("" if self is Difficulty.NORMAL else f"_{self.value}")


_LEVELS = {Difficulty.NORMAL: Level.L1, Difficulty.MEDIUM: Level.L2, Difficulty.EASY: Level.L3}


class CaseDir(StrEnum):
    """The three case folders of `rcb_tests/`, ICAE-EVAL's splits."""

    PUBLIC = "public_test_cases"
    NATIVE = "test_cases"  # hidden: from the original repository's tests
    ENHANCED = "enhanced_test_cases"

    @property
    def task_split(self) -> Split:
        return _SPLITS[self]


_SPLITS = {CaseDir.PUBLIC: Split.PUBLIC, CaseDir.NATIVE: Split.HIDDEN, CaseDir.ENHANCED: Split.ENHANCED}

# ICAE-EVAL's language images (harness/config.py LANG_TAR: the images download_scaffold.sh
# pulls, and kotlin:1.9.25, which it downloads as a saved image instead), by language label
# lower-cased with LANG_CANON's aliases. Docker Hub is not reachable here: an import uses the
# Debian base with the language's runtime recipe (domain/runtimes.py: each at or above these
# versions, or a refusal naming the image to supply) unless it is given a base.
LANGUAGE_IMAGES = {
    "python": "python:3.11",
    "java": "eclipse-temurin:17",
    "go": "golang:1.22",
    "golang": "golang:1.22",
    "rust": "rust:1.81",
    "ruby": "ruby:3.2",
    "php": "php:8.2",
    "dart": "dart:3.5",
    "kotlin": "kotlin:1.9.25",
    "javascript": "node:20",
    "js": "node:20",
    "typescript": "node:20",
    "ts": "node:20",
    "c++": "gcc:12",
    "cpp": "gcc:12",
    "c#": "mcr.microsoft.com/dotnet/sdk:8.0",
    "csharp": "mcr.microsoft.com/dotnet/sdk:8.0",
    "cs": "mcr.microsoft.com/dotnet/sdk:8.0",
}

_NOT_IN_ID = re.compile(r"[^a-z0-9_-]+")


def task_id(alias: str) -> str:
    """`realcode@050` → `realcode-050` (a task id is [a-z0-9_-], at most 64)."""
    return _NOT_IN_ID.sub("-", alias.lower()).strip("-_")[:64] or "task"


def case_stem(name: str) -> str:
    """A case file's stem: `feature1_x.json` → `feature1_x`."""
    return name[: -len(".json")] if name.endswith(".json") else name


def prd_json_path(alias: str, difficulty: Difficulty) -> str:
    return f"{difficulty.prd_json}/{alias}.json"


def start_path(alias: str, difficulty: Difficulty) -> str:
    return f"{difficulty.fuzzy_prds}/{alias}/{START}"


def detailed_path(alias: str) -> str:
    return f"{DETAILED_ROOT}/{alias}/{START}"


def case_dir_path(folder: str, case_dir: CaseDir) -> str:
    """`folder` is the repository's folder name under rcb_tests_repos/ (its key)."""
    return f"{TESTS_ROOT}/{folder}/{RCB}/{case_dir.value}"


def tests_path(folder: str) -> str:
    """The rcb_tests repository of `folder` (its key)."""
    return f"{TESTS_ROOT}/{folder}"


def golden_path(folder: str) -> str:
    return f"{GOLDEN_ROOT}/{folder}"


def _alias_order(alias: str) -> tuple[str, int, str]:
    """`realcode@9` before `realcode@10`."""
    m = re.fullmatch(r"(.*?)(\d+)", alias)
    return (m.group(1), int(m.group(2)), alias) if m else (alias, -1, alias)


@dataclass(frozen=True)
class Layout:
    tree: Path
    tests: Path  # the rcb_tests repositories' root
    golden: Path  # the golden repositories' root

    @classmethod
    def of(cls, tree: Path, tests: Path | None = None, golden: Path | None = None) -> Layout:
        return cls(tree, tests or tree / TESTS_ROOT, golden or tree / GOLDEN_ROOT)

    def shown(self, path: Path) -> str:
        """How a problem names a file: relative to the tree when inside it."""
        try:
            return path.relative_to(self.tree).as_posix()
        except ValueError:
            return str(path)

    def aliases(self) -> list[str]:
        """Every alias with task data (a level's JSON or PRD), in ICAE's order."""
        found: set[str] = set()
        for difficulty in Difficulty:
            folder = self.tree / difficulty.prd_json
            if folder.is_dir():
                found |= {p.stem for p in folder.glob("*.json") if p.is_file()}
            prds = self.tree / difficulty.fuzzy_prds
            if prds.is_dir():
                found |= {p.name for p in prds.iterdir() if (p / START).is_file()}
        return sorted(found, key=_alias_order)

    def case_root(self, folder: str) -> Path:
        return self.tests / folder / RCB

    def golden_repo(self, folder: str) -> Path:
        return self.golden / folder
