"""Results of the differential evaluation: per side, per case, and the aggregate score."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from icae_tui.domain.task import Split


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    SIDE_EFFECTS = "side_effects"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    DISK_LIMIT = "disk_limit"  # its box's writable layer filled (icae_tui/sandbox/disk.py)
    BUILD_ERROR = "build_error"
    ORACLE_ERROR = "oracle_error"
    ORACLE_NONDETERMINISTIC = "oracle_nondeterministic"

    @property
    def counted(self) -> bool:
        """The oracle's own failures are reported apart, never held against the agent."""
        return self not in (Verdict.ORACLE_ERROR, Verdict.ORACLE_NONDETERMINISTIC)


class FileChange(BaseModel):
    """One path that a case changed, relative to the case's work directory."""

    model_config = ConfigDict(frozen=True)

    path: str
    change: Literal["added", "modified", "deleted"]
    type: Literal["file", "dir", "link", "other"] = "file"
    sha256: str = ""
    size: int = 0
    target: str = ""


class SideRun(BaseModel):
    """What one side (oracle or delivery) did for one case."""

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_sha256: str = ""
    stderr_sha256: str = ""
    stdout_tail: str = ""  # the last bytes, when the stream was longer than what is kept
    stderr_tail: str = ""
    timed_out: bool = False
    oom_killed: bool = False
    pids_capped: bool = False  # a fork failed at the pids limit
    overflowed: bool = False
    duration_s: float = 0.0
    left_running: int = 0  # processes still running after the command ended (then killed)
    box_died: bool = False  # every process of its box ended during the case (`kill -9 -1`)
    disk_full: bool = False  # its box's writable layer filled (icae_tui/sandbox/disk.py)
    changes: list[FileChange] = Field(default_factory=list)  # at most sidefx.CHANGES_CAP kept
    changes_total: int = 0  # every effective change found, kept or not
    changes_sha256: str = ""  # sidefx.changes_digest of all of them: compared past the cap
    state: Literal["fresh", "reused", "fallback"] = "fresh"

    @model_validator(mode="after")
    def _count_kept(self) -> SideRun:
        # Results recorded before the cap (or built by hand) kept every change.
        self.changes_total = max(self.changes_total, len(self.changes))
        return self


class CaseResult(BaseModel):
    case_id: str
    split: Split
    pattern: str
    command: str
    verdict: Verdict
    reason: str
    exec_ok: bool = False
    sp: bool = False
    em: bool = False
    fm: bool = False
    fm_score: float = 0.0
    passed: bool = False
    oracle: SideRun | None = None
    delivery: SideRun | None = None


SCORED_SPLITS = ("hidden", "enhanced")  # what overall, macro and the rates are over (ICAE)


class SplitScore(BaseModel):
    total: int = 0
    passed: int = 0
    macro: float = 0.0  # mean over command patterns of the per-pattern pass rate

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


class Score(BaseModel):
    """Overall = passed / total over hidden + enhanced (ICAE); public reported apart."""

    build_ok: bool = True
    done: int = 0
    planned: int = 0
    overall: float = 0.0
    macro: float = 0.0
    by_split: dict[str, SplitScore] = Field(default_factory=dict)
    exec_rate: float = 0.0
    sp_rate: float = 0.0
    em_rate: float = 0.0
    fm_rate: float = 0.0
    public_minus_hidden: float | None = None

    @property
    def scored(self) -> int:
        """The counted hidden and enhanced cases done: what overall, macro and the rates are
        over."""
        return sum(self.by_split[s].total for s in SCORED_SPLITS if s in self.by_split)

    @property
    def measured(self) -> bool:
        """Whether overall, macro and the rates are figures. Until a hidden or enhanced case
        has counted they hold 0.0 by default: unknown, not zero. A failed build is a measured
        zero; a score without splits (built by hand) is taken as given."""
        return not self.by_split or not self.build_ok or self.scored > 0
