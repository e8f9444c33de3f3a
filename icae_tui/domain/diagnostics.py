"""Diagnostics beyond tests: what a delivery looks like, not what it prints (pure, no I/O).

- `Structure`: the delivery's files, source lines and folders against the oracle's (or, for
  an ICAE-EVAL import, against the original's recorded size), a one-file-monolith flag, and
  ICAE's File% / LOC%.
- `SignatureCheck`: the golden API signature's named items looked for in the delivery's
  sources — a static check (a name is there), never whether it behaves.
- `RulesCheck`: the task's `[rules]` on the delivery, each violation with its file.
- `CriticScores`: an optional model critic's three 0–1 scores, each with its rationale.
- `ReviewScore`: execution and review combined by weights (ProjDevBench's 80 / 20 default).

Made once per run after the cases are judged (`evaluation/diagnostics.py`), stored as a
`DiagnosticsMade` event, the review score also on the run's `Score`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field


class TreeStats(BaseModel):
    """One side's tree: what counted (source files by the task's language)."""

    files: int = 0  # source files
    loc: int = 0  # their non-blank lines
    lines: int = 0  # their lines, blank ones too
    folders: int = 0  # folders holding at least one source file (the root counts)
    other_files: int = 0  # files that are not source (data, build output, …)
    largest_file: str = ""  # the source file with the most non-blank lines
    largest_loc: int = 0


class Structure(BaseModel):
    language: str
    extensions: list[str] = Field(default_factory=list)  # what counted as source
    delivery: TreeStats = Field(default_factory=TreeStats)
    # what File% / LOC% are against: the oracle folder, or the original's recorded size
    reference: TreeStats | None = None
    reference_from: Literal["oracle", "origin", "none"] = "none"
    file_pct: float | None = None  # 100 · delivery files / reference files
    loc_pct: float | None = None  # 100 · delivery LOC / reference LOC
    # every source line in one file while the reference spreads over several (or, with no
    # reference, one source file of over MONOLITH_LOC lines)
    monolith: bool = False
    complete: bool = True  # False: a bound cut the delivery's listing (counts are at least)
    notes: list[str] = Field(default_factory=list)


class SignatureItem(BaseModel):
    kind: Literal["file", "function", "class", "command", "option"]
    name: str
    found: bool
    where: str = ""  # the file it was found in


class SignatureCheck(BaseModel):
    signature: str = ""
    items: list[SignatureItem] = Field(default_factory=list)
    method: str = "static: each name the signature gives is looked for in the delivery's sources"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def checked(self) -> int:
        return len(self.items)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def honoured(self) -> int:
        return sum(i.found for i in self.items)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        return self.honoured / self.checked if self.items else None


class RuleViolation(BaseModel):
    rule: Literal["forbidden_import", "forbidden_library", "required_file"]
    name: str
    file: str  # where: the delivery's file (a missing required file: its path)
    line: int | None = None


class RulesCheck(BaseModel):
    checked: int = 0  # rules given (each name in each list)
    violations: list[RuleViolation] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def broken_rules(self) -> int:
        return len({(v.rule, v.name) for v in self.violations})

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        """Rules kept / rules given; None when the task gives none."""
        return (self.checked - self.broken_rules) / self.checked if self.checked else None


class CriticScore(BaseModel):
    score: float = Field(ge=0, le=1)
    rationale: str = ""


class CriticScores(BaseModel):
    """The critic's answer, or why there is none (`error`: reported, never a zero)."""

    model: str = ""
    semantic_similarity: CriticScore | None = None
    api_similarity: CriticScore | None = None
    design_quality: CriticScore | None = None
    error: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def measured(self) -> bool:
        return not self.error and self.design_quality is not None


class ReviewScore(BaseModel):
    """combined = w_exec · execution + w_review · review (weights normalised to sum 1).

    execution: the run's overall pass rate; review: the mean of the review components that
    were measured (`components`). No component measured (or no scored case): combined is
    None (not measured, never a silent figure). A failed build zeroes combined."""

    execution: float | None = None  # None: no scored case, Overall not measured
    review: float | None = None
    combined: float | None = None
    weights: dict[str, float] = Field(default_factory=lambda: {"execution": 0.8, "review": 0.2})
    components: dict[str, float] = Field(default_factory=dict)
    weights_from: Literal["default", "task", "run"] = "default"


class Diagnostics(BaseModel):
    structure: Structure | None = None
    signature: SignatureCheck | None = None
    rules: RulesCheck | None = None
    critic: CriticScores | None = None
    review: ReviewScore | None = None
    error: str = ""  # why the delivery could not be read (then structure etc. are absent)
