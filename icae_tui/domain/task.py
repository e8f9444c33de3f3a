"""Task format v1: pure pydantic models, no I/O (the catalog reads files).

A task folder holds `task.toml` (TaskSpec), `prd/<level>.md`, `user_agent/<level>.json`
(UserAgentData, ICAE's `oracle_data` shape), `cases/{public,hidden,enhanced}/*.json`
(CaseFile, ICAE's shape plus optional CLI-Tool-Bench fields), `oracle/` and `solutions/`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)


class Level(StrEnum):
    L1 = "L1"
    L2 = "L2"
    L3 = "L3"
    GROUND = "ground"


class Split(StrEnum):
    PUBLIC = "public"
    HIDDEN = "hidden"
    ENHANCED = "enhanced"


# Every text of a task is bounded, ample for real tasks: the title goes into the catalog's
# cache and every run's first event (with the PRD: icae_tui/store/bounds.py counts that frame), and
# `icae tasks` prints it. The files' own sizes are bounded where the catalog reads them.
NAME_CHARS = 200  # a title, a language, a name, a path
TEXT_CHARS = 4_000  # a summary, a note
LINE_CHARS = 20_000  # a shell line (an importer's install lines are as long)
RECORD_CHARS = 64 * 1024  # a user-agent record's text
PRD_CHARS = 1024 * 1024  # a PRD (prd/<level>.md, or a record's fuzzy_prd)
MAX_ITEMS = 1_000  # a list's entries
Name = Annotated[str, StringConstraints(max_length=NAME_CHARS)]
Text = Annotated[str, StringConstraints(max_length=TEXT_CHARS)]
Line = Annotated[str, StringConstraints(max_length=LINE_CHARS)]
Record = Annotated[str, StringConstraints(max_length=RECORD_CHARS)]
Prd = Annotated[str, StringConstraints(max_length=PRD_CHARS)]


class Strict(BaseModel):
    """Unknown keys are errors: a typo in a task file must not pass silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- task.toml -------------------------------------------------------------------------


class ImageRecipe(Strict):
    base: Name = "icae-base:bookworm"
    setup: list[Line] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="run as root while building"
    )
    # The language runtime (domain/runtimes.py): on the Debian base the task's `language`
    # picks its recipe unless `runtime` names one ("none": no runtime layer).
    runtime: str | None = Field(default=None, pattern=r"^[A-Za-z0-9+#._-]{1,32}$")
    packages: list[str] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="more Debian packages for the runtime layer (installed at image build)",
    )

    @field_validator("packages")
    @classmethod
    def _debian_names(cls, packages: list[str]) -> list[str]:
        for name in packages:
            if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]{1,62}", name):
                raise ValueError(f"not a Debian package name: {name!r}")
        return packages


class Interface(Strict):
    """How cases reach the program under test.

    `dispatcher`: a case's `input` is one JSON object written to the tool's stdin.
    `command`: a case's `command` is a shell line that calls `tool` with arguments.
    Either way `tool` is a command on PATH in the evaluation containers.
    """

    kind: Literal["dispatcher", "command"]
    tool: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")


# A registry package pinned to one version: `pip:NAME==V` or `npm:NAME@V` (npm scopes too).
PINNED_PACKAGE = (
    r"^(pip:[A-Za-z0-9][A-Za-z0-9._-]{0,99}==[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}"
    r"|npm:(@[a-z0-9][a-z0-9._-]{0,99}/)?[a-z0-9][a-z0-9._-]{0,99}@[0-9][0-9A-Za-z.+-]{0,63})$"
)


class Ecosystem(StrEnum):
    """A package registry's ecosystem, as the package gateway (packages/) serves it."""

    PYPI = "pypi"
    NPM = "npm"


# A declared dependency: `pip:NAME` with an optional PEP 440 specifier (`pip:PyYAML>=6`,
# `pip:click==8.1.7`, extras allowed) or `npm:NAME` with an optional range (`npm:minimist@^1.2`,
# scopes too). Installed at image build, when the build container reaches the registry.
REQUIREMENT = (
    r"^(pip:[A-Za-z0-9][A-Za-z0-9._-]{0,99}(\[[A-Za-z0-9._,-]{1,100}\])?"
    r"([<>=!~]=?[A-Za-z0-9.*+!_-]{1,64}(,[<>=!~]=?[A-Za-z0-9.*+!_-]{1,64}){0,4})?"
    r"|npm:(@[a-z0-9][a-z0-9._-]{0,99}/)?[a-z0-9][a-z0-9._-]{0,99}(@[0-9A-Za-z.^~<>=*|+ -]{1,64})?)$"
)


def _requirements(values: list[str]) -> list[str]:
    for value in values:
        if not re.fullmatch(REQUIREMENT, value):
            raise ValueError(
                f"not a requirement: {value!r} (write pip:NAME[SPEC] or npm:NAME[@RANGE])"
            )
    return values


class OracleSpec(Strict):
    install: list[Line] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="run after oracle/ is copied"
    )
    entry: Line = Field(description="shell command that starts the golden tool")
    path: Name = "/opt/oracle"
    package: str | None = Field(
        default=None, pattern=PINNED_PACKAGE,
        description="a pinned registry package installed at image build (the only step that "
        "reaches a registry), before the install lines",
    )  # fmt: skip
    requires: list[str] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="the oracle's declared dependencies (pip:/npm: requirements), installed "
        "when its image is built, before `package` and the install lines",
    )
    locked: list[str] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="every package `package` installed when it was imported, pinned "
        "(pip:NAME==V / npm:NAME@V): pip installs exactly these (no resolving), an npm build "
        "that resolves otherwise fails",
    )

    @field_validator("requires")
    @classmethod
    def _requires(cls, values: list[str]) -> list[str]:
        return _requirements(values)

    @field_validator("locked")
    @classmethod
    def _locked(cls, values: list[str]) -> list[str]:
        for value in values:
            if not re.match(PINNED_PACKAGE, value):
                raise ValueError(f"{value!r} is not a pinned pip:NAME==V or npm:NAME@V")
        return values

    @model_validator(mode="after")
    def _locked_with_its_package(self) -> OracleSpec:
        if self.locked and self.package is None:
            raise ValueError("`locked` pins what `package` installed: there is no package")
        kind = (self.package or ":").split(":", 1)[0]
        if any(not v.startswith(f"{kind}:") for v in self.locked):
            raise ValueError(f"`locked` holds packages of another registry than {kind}")
        return self


class FuzzSpec(Strict):
    """`[fuzz]`: what an imported tool's own case generator needs in its box."""

    requires: list[str] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="the fuzzer's third-party modules (pip:/npm: requirements), installed "
        "into the image its box is made from",
    )

    @field_validator("requires")
    @classmethod
    def _requires(cls, values: list[str]) -> list[str]:
        return _requirements(values)


# A name in `[packages] allow/deny`: `pypi:NAME`, `npm:NAME` or a bare NAME (either
# ecosystem); shell-style globs (`@types/*`, `types-*`) are allowed.
PACKAGE_PATTERN = r"^((pypi|npm):)?[A-Za-z0-9@*?_.\[\]/-]{1,214}$"


class PackagesSpec(Strict):
    """`[packages]`: what the run's package gateway may serve the agent (packages/).

    An empty `allow` allows every name not denied; `deny` wins over `allow`. Names compare
    as their registry does (PyPI: case-, `-`/`_`/`.`-insensitive). Kept across re-import."""

    allow: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    deny: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    budget_mb: int = Field(
        default=1024, ge=0, le=64 * 1024, description="MiB of artifacts one run may download"
    )

    @field_validator("allow", "deny")
    @classmethod
    def _patterns(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(PACKAGE_PATTERN, name):
                raise ValueError(f"not a package name or pattern: {name!r}")
        return names


class DeliverySpec(Strict):
    workspace: Name = "/workspace"
    entry: Line = Field(description="shell command that starts the delivered tool")
    build: Line = Field(description="build gate: must exit 0 in a fresh delivery container")
    disk_mb: int = Field(default=1024, ge=16, le=1024 * 1024,
                         description="the agent's box: MiB its writable layer may take")  # fmt: skip


class Reference(StrEnum):
    """What a case's run is judged against."""

    ORACLE = "oracle"  # differential: the live oracle runs the same case (the default)
    # the stored expected_output, as ICAE-EVAL scores it (evaluation/expected.py): no oracle
    # runs; the delivery's stdout, read as ICAE reads an output file, must equal the stored
    # text (nothing else is compared)
    EXPECTED = "expected"


class StderrPolicy(StrEnum):
    """How a case's stderr is judged (`[cases] stderr`)."""

    COMPARE = "compare"  # a rung of its own, after stdout (the default)
    IGNORE = "ignore"  # not judged: the exit code, stdout and side effects are
    # stdout and stderr judged as one stream, stdout's text then stderr's, as CLI-Tool-Bench
    # judges its merged output (a box keeps them apart, so not their interleaving)
    MERGE = "merge"


class OriginSource(StrEnum):
    ICAE_EVAL = "icae-eval"  # imported by `icae tasks import icae-eval` (importers/)
    CLI_TOOL_BENCH = "cli-tool-bench"  # `icae tasks import cli-tool-bench`


class Origin(Strict):
    """Where an imported task came from (absent for a task written here)."""

    source: OriginSource
    alias: Name = Field(description="the task's name there, e.g. realcode@050")
    size_loc: int | None = Field(default=None, ge=0, description="the original's lines of code")
    size_files: int | None = Field(default=None, ge=0, description="the original's code files")
    seed: int | None = Field(default=None, description="the seed its cases were generated with")
    oracle_source: Text | None = Field(
        default=None, description="where the oracle came from: a pinned package or a checkout"
    )
    public_only: bool = Field(
        default=False, description="imported without hidden cases: judged on its public ones"
    )


class CaseDefaults(Strict):
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    workdir: Name = "/data"
    fm_threshold: float = Field(default=0.8, ge=0, le=1)
    oracle_runs: int = Field(default=1, ge=1, le=3, description="2: flag nondeterministic cases")
    disk_mb: int = Field(default=1024, ge=16, le=1024 * 1024,
                         description="each case's box (and the build gate's): MiB it may write")  # fmt: skip
    ignore: list[Name] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="side-effect paths (globs) to ignore",
    )
    reference: Reference = Field(
        default=Reference.ORACLE, description="what cases are judged against"
    )
    compare_roots: list[Name] | None = Field(
        default=None,
        max_length=MAX_ITEMS,
        description="absolute folders whose side effects are compared (on both sides); "
        "unset: the whole box",
    )
    stderr: StderrPolicy = Field(
        default=StderrPolicy.COMPARE, description="how stderr is judged (StderrPolicy)"
    )
    oracle_at_delivery_path: bool = Field(
        default=False,
        description="the oracle's image runs its entry from the delivery's entry path (a "
        "link; both entries one absolute path), so what a tool says of its own path "
        "(a traceback's `File \"…\"`) is the same on both sides",
    )

    @field_validator("compare_roots")
    @classmethod
    def _roots(cls, roots: list[str] | None) -> list[str] | None:
        if roots is None:
            return None
        for root in roots:
            # plain names only: the roots become match patterns (evaluation/scope.py)
            parts = root.split("/")[1:]
            if not re.fullmatch(r"(/[A-Za-z0-9._+-]+)+", root) or {".", ".."} & set(parts):
                raise ValueError(f"a compared root is an absolute folder: {root!r}")
        return roots


_MODULE = r"^[A-Za-z_@][A-Za-z0-9_.@/-]{0,127}$"  # a module / package name (npm scopes too)


class RulesSpec(Strict):
    """`[rules]`: checked on the delivery's sources (evaluation/task_rules.py), statically."""

    forbidden_imports: list[str] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="modules the delivery's sources must not import",
    )
    forbidden_libraries: list[str] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="third-party packages it must not import or declare (requirements, package.json)",
    )
    required_files: list[Name] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="paths, relative to the workspace, that must exist",
    )

    @field_validator("forbidden_imports", "forbidden_libraries")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(_MODULE, name):
                raise ValueError(f"not a module or package name: {name!r}")
        return names

    @field_validator("required_files")
    @classmethod
    def _inside(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path or path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"a required file is relative and stays inside: {path!r}")
        return paths

    @property
    def count(self) -> int:
        return len(self.forbidden_imports) + len(self.forbidden_libraries) + len(
            self.required_files
        )


class ReviewWeights(Strict):
    execution: float = Field(default=0.8, ge=0, le=1)
    review: float = Field(default=0.2, ge=0, le=1)

    @model_validator(mode="after")
    def _some_weight(self) -> ReviewWeights:
        if self.execution + self.review <= 0:
            raise ValueError("review weights: execution + review must be more than 0")
        return self


class ReviewSpec(Strict):
    """`[review] weights = { execution = 0.8, review = 0.2 }` (ProjDevBench's, the default)."""

    weights: ReviewWeights | None = None


class SanitizerSpec(Strict):
    """`[sanitizer]`: a program of the task's own that masks what varies from run to run
    (timestamps, ordering) in both sides' output before they are compared, as a benchmark's
    own sanitizer does (CLI-Tool-Bench's `sanitize_stdout`). It is task code, so it runs in a
    box of its own (no network, bounded), never on the host: its stdin is a JSON list of
    texts, its stdout the list of the same length, each text masked."""

    program: str = Field(
        pattern=r"^sanitizer/[A-Za-z0-9_./-]+\.py$",
        description="a Python file under the task's sanitizer/ folder (hidden from agents); "
        "the whole folder is copied into its box",
    )
    requires: list[str] = Field(
        default_factory=list,
        description="its third-party modules (pip:/npm: requirements), installed into the "
        "image its box is made from",
    )
    timeout_s: float = Field(default=30.0, gt=0, le=600, description="per case, every side")

    @field_validator("requires")
    @classmethod
    def _requires(cls, values: list[str]) -> list[str]:
        return _requirements(values)

    @field_validator("program")
    @classmethod
    def _inside(cls, value: str) -> str:
        if ".." in value.split("/"):
            raise ValueError(f"{value!r} leaves the sanitizer/ folder")
        return value


class TaskSpec(Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    title: Name
    language: Name
    summary: Text = ""
    budget: int = Field(default=16, ge=0, le=200, description="questions per run")
    level_budgets: dict[Level, int] = Field(
        default_factory=dict, description="per-level overrides, e.g. {L1 = 20, ground = 4}"
    )
    image: ImageRecipe = Field(default_factory=ImageRecipe)
    interface: Interface
    oracle: OracleSpec | None = Field(
        default=None, description="required unless cases are judged against expected outputs"
    )
    delivery: DeliverySpec
    cases: CaseDefaults = Field(default_factory=CaseDefaults)
    origin: Origin | None = None
    rules: RulesSpec = Field(default_factory=RulesSpec)
    review: ReviewSpec = Field(default_factory=ReviewSpec)
    packages: PackagesSpec = Field(default_factory=PackagesSpec)
    fuzz: FuzzSpec | None = None
    sanitizer: SanitizerSpec | None = None

    @model_validator(mode="after")
    def _oracle_when_judged_by_it(self) -> TaskSpec:
        if self.oracle is None and self.cases.reference is Reference.ORACLE:
            raise ValueError(
                "no [oracle]: cases are judged against the oracle unless "
                '[cases] reference = "expected"'
            )
        return self


# --- user_agent/<level>.json (ICAE oracle_data) ---------------------------------------


GENERIC_PREFIXES = ("ARCH", "HARNESS", "TC_")
_NAMED_RECORD = re.compile(r"[A-Z][A-Z_]{2,}[A-Z]")  # ICAE's FULL_SCOPE, EXECUTION_CONTRACT…


def generic_record(record_id: str) -> bool:
    """A generic record, not a task constraint: ARCH…, HARNESS…, TC_…, or a named (not
    numbered) record such as ICAE's FULL_SCOPE, EXECUTION_CONTRACT and
    PUBLIC_TEST_CASES_AUTHORITY (task constraints are numbered: C001, HC_03)."""
    return record_id.startswith(GENERIC_PREFIXES) or _NAMED_RECORD.fullmatch(record_id) is not None


class HiddenConstraint(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    constraint_id: Name
    trigger_keywords: list[Name] = Field(min_length=1, max_length=MAX_ITEMS)
    oracle_response: Record

    @property
    def generic(self) -> bool:
        return generic_record(self.constraint_id)


class ContextPointer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    vague_reference: Record
    actual_meaning: Record


class OracleData(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    task_id: Name = ""
    golden_api_signature: Prd = ""
    hidden_constraints: list[HiddenConstraint] = Field(default_factory=list, max_length=MAX_ITEMS)
    context_pointers: list[ContextPointer] = Field(default_factory=list, max_length=MAX_ITEMS)
    fallback_response: Record


class UserAgentData(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    fuzzy_prd: Prd = ""
    oracle_data: OracleData


# --- cases/<split>/*.json ---------------------------------------------------------------


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input: Any = None
    expected_output: str = ""
    command: Line | None = None
    pattern: Name | None = None
    files: dict[str, str] = Field(default_factory=dict)
    prep: Line | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=600)

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            parts = path.split("/")
            if path.startswith("/") or ".." in parts or not path:
                raise ValueError(f"fixture path must be relative and stay inside: {path!r}")
        return files


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    description: str = ""
    cases: list[Case] = Field(min_length=1)


class CaseRef(Strict):
    """One case with its identity: `<split>/<stem>#<index>`."""

    split: Split
    stem: str
    index: int
    case: Case
    pattern: str

    @property
    def id(self) -> str:
        return f"{self.split.value}/{self.stem}#{self.index}"


# --- the loaded task ---------------------------------------------------------------------


class Task(Strict):
    spec: TaskSpec
    root: str
    prd: dict[Level, str]
    user_agent: dict[Level, UserAgentData]
    cases: list[CaseRef]
    solutions: list[str] = Field(default_factory=list)

    @property
    def id(self) -> str:
        return self.spec.id

    def budget_for(self, level: Level) -> int:
        return self.spec.level_budgets.get(level, self.spec.budget)

    def cases_in(self, *splits: Split) -> list[CaseRef]:
        return [c for c in self.cases if c.split in splits]
