"""Results of the differential evaluation: per side, per case, and the aggregate score.

A case's metrics are named (`CaseResult.metrics`) and declared by the scorers that give them
(`MetricSpec`, evaluation/scorers.py): displays and reports iterate the specs, so a new
scorer's metric shows wherever the ladder's do. The ladder's own (LADDER_METRICS) are
declared here, beside the fields they replaced, because results stored before carry them as
fields: the before-validators move those into `metrics` / `rates`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from icae_tui.domain.diagnostics import ReviewScore
from icae_tui.domain.task import Split


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    SIDE_EFFECTS = "side_effects"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    DISK_LIMIT = "disk_limit"  # its box's writable layer filled (icae_tui/sandbox/docker/disk.py)
    BUILD_ERROR = "build_error"
    ORACLE_ERROR = "oracle_error"
    ORACLE_NONDETERMINISTIC = "oracle_nondeterministic"

    @property
    def counted(self) -> bool:
        """The oracle's own failures are reported apart, never held against the agent."""
        return self not in (Verdict.ORACLE_ERROR, Verdict.ORACLE_NONDETERMINISTIC)


ChangeKind = Literal["added", "modified", "deleted"]
EntryType = Literal["file", "dir", "link", "other"]
# The box a side ran in: new, serving again after a reset, or one seen without a host view
BoxState = Literal["fresh", "reused", "fallback"]


class FileChange(BaseModel):
    """One path that a case changed, relative to the case's work directory."""

    model_config = ConfigDict(frozen=True)

    path: str
    change: ChangeKind
    type: EntryType = "file"
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
    disk_full: bool = False  # its box's writable layer filled (icae_tui/sandbox/docker/disk.py)
    changes: list[FileChange] = Field(default_factory=list)  # at most sidefx.CHANGES_CAP kept
    changes_total: int = 0  # every effective change found, kept or not
    changes_sha256: str = ""  # sidefx.changes_digest of all of them: compared past the cap
    state: BoxState = "fresh"
    # the judged output as the task's [sanitizer] masked it (display-capped); None: not masked
    sanitized: str | None = None
    prep_failed: str = ""  # the case's prep line failed on this side: its exit and last line

    @model_validator(mode="after")
    def _count_kept(self) -> SideRun:
        # Results recorded before the cap (or built by hand) kept every change.
        self.changes_total = max(self.changes_total, len(self.changes))
        return self


class MetricKind(StrEnum):
    """What a per-case metric holds, and what a delivery's score makes of it."""

    PASS = "pass"  # 1.0 (the case passes it) or 0.0; the score shows the rate of passes
    SCORE = "score"  # a figure in [0, 1]; the score shows the mean
    DETAIL = "detail"  # a figure in [0, 1] shown with its case only, never aggregated

    @property
    def aggregated(self) -> bool:
        return self is not MetricKind.DETAIL


class MetricSpec(BaseModel):
    """One metric a scorer gives: its key in `CaseResult.metrics` / `Score.rates` (`name`),
    how displays head it (`label`, short) and what it means."""

    model_config = ConfigDict(frozen=True)

    name: str
    label: str
    description: str = ""
    kind: MetricKind = MetricKind.PASS


class LadderMetric(StrEnum):
    """The metrics the verdict ladder gives (evaluation/verdict.py)."""

    EXEC = "exec"
    SP = "sp"
    EM = "em"
    FM = "fm"
    FM_SCORE = "fm_score"


LADDER_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(name=LadderMetric.EXEC, label="exec",
               description="the delivery's exit code equals the oracle's"),
    MetricSpec(name=LadderMetric.SP, label="SP",
               description="exec, and the same effective side effects"),
    MetricSpec(name=LadderMetric.EM, label="EM",
               description="SP, and stdout equal (byte for byte or whitespace-normalised)"),
    MetricSpec(name=LadderMetric.FM, label="FM",
               description="SP, and stdout similarity at least the task's fm_threshold"),
    MetricSpec(name=LadderMetric.FM_SCORE, label="FM score", kind=MetricKind.DETAIL,
               description="normalised Levenshtein similarity of stdout to the oracle's"),
)  # fmt: skip

# Stored before metrics were named: a CaseResult's flags and a Score's rates, as fields.
_LEGACY_CASE_FIELDS = {
    "exec_ok": LadderMetric.EXEC, "sp": LadderMetric.SP, "em": LadderMetric.EM,
    "fm": LadderMetric.FM, "fm_score": LadderMetric.FM_SCORE,
}  # fmt: skip
_LEGACY_RATES = {
    "exec_rate": LadderMetric.EXEC, "sp_rate": LadderMetric.SP, "em_rate": LadderMetric.EM,
    "fm_rate": LadderMetric.FM,
}  # fmt: skip


def _moved(data: Any, fields: dict[str, LadderMetric], into: str) -> Any:
    """`data` with the legacy `fields` moved into its dict `into`, by metric name (the
    named form wins: it is the newer)."""
    if not isinstance(data, dict) or not fields.keys() & data.keys():
        return data
    data = dict(data)
    moved = {str(name): float(data.pop(key)) for key, name in fields.items() if key in data}
    data[into] = moved | dict(data.get(into) or {})
    return data


class CaseResult(BaseModel):
    case_id: str
    split: Split
    pattern: str
    command: str
    verdict: Verdict
    reason: str
    # by metric name (MetricSpec.name), from every registered case scorer; a PASS metric is
    # 1.0 or 0.0, a metric a scorer did not give (the case never reached it) is absent
    metrics: dict[str, float] = Field(default_factory=dict)
    # a scorer's reason for its metric, by metric name (the SM judge's one line)
    notes: dict[str, str] = Field(default_factory=dict)
    passed: bool = False
    oracle: SideRun | None = None
    delivery: SideRun | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_flags(cls, data: Any) -> Any:
        return _moved(data, _LEGACY_CASE_FIELDS, "metrics")

    def holds(self, name: str) -> bool:
        """Whether the case passes the PASS metric `name` (absent: it does not)."""
        return self.metrics.get(name, 0.0) >= 1.0

    # The ladder's flags, for the ladder and its tests: displays iterate `metrics`.
    @property
    def exec_ok(self) -> bool:
        return self.holds(LadderMetric.EXEC)

    @property
    def sp(self) -> bool:
        return self.holds(LadderMetric.SP)

    @property
    def em(self) -> bool:
        return self.holds(LadderMetric.EM)

    @property
    def fm(self) -> bool:
        return self.holds(LadderMetric.FM)

    @property
    def fm_score(self) -> float:
        return self.metrics.get(LadderMetric.FM_SCORE, 0.0)


SCORED_SPLITS = (Split.HIDDEN, Split.ENHANCED)  # what overall, macro and the rates are over (ICAE)


class SplitScore(BaseModel):
    total: int = 0
    passed: int = 0
    macro: float = 0.0  # mean over command patterns of the per-pattern pass rate

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


class SemanticSummary(BaseModel):
    """What SM's rate is over (evaluation/semantic.py): the scored cases the judge measured,
    and how often its SM agreed with EM and with FM where SP held (None: no such case)."""

    measured: int = 0
    agrees_em: float | None = None
    agrees_fm: float | None = None


class Score(BaseModel):
    """Overall = passed / total over hidden + enhanced (ICAE); public reported apart."""

    build_ok: bool = True
    done: int = 0
    planned: int = 0
    overall: float = 0.0
    macro: float = 0.0
    by_split: dict[Split, SplitScore] = Field(default_factory=dict)
    # the aggregated metrics (the case scorers' PASS and SCORE ones, then the delivery
    # scorers' figures) in display order, and each one's rate or mean by name: over the
    # counted hidden and enhanced cases, a case without the metric counting as 0
    metrics: list[MetricSpec] = Field(default_factory=list)
    rates: dict[str, float] = Field(default_factory=dict)
    public_minus_hidden: float | None = None
    # each command pattern's passed / total over the counted hidden and enhanced cases (what
    # macro averages), and how many cases of every split got each verdict
    by_pattern: dict[str, SplitScore] = Field(default_factory=dict)
    verdicts: dict[Verdict, int] = Field(default_factory=dict)
    semantic: SemanticSummary | None = None  # set when a judge measured SM on some case
    # execution and review combined (evaluation/review.py); absent until the run's
    # diagnostics are made (and in runs stored before them)
    review: ReviewScore | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_rates(cls, data: Any) -> Any:
        moved = _moved(data, _LEGACY_RATES, "rates")
        if moved is not data and "metrics" not in moved:
            moved["metrics"] = [m for m in LADDER_METRICS if m.name in moved["rates"]]
        return moved

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
