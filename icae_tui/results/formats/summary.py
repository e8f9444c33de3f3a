"""The figures every human-facing format shows, counted from a report's case results (never
from its stored score alone, so each figure says exactly what it is over).

What is counted follows the ladder (icae_tui/evaluation/ladder.py): a case whose verdict is
the oracle's own failure (`Verdict.counted` false) is reported apart and counts nowhere;
*overall* is passed / total over the counted hidden + enhanced cases (ICAE-Bench's Overall);
*macro* is the mean over command patterns of each pattern's pass rate over those same cases
(CLI-Tool-Bench); public cases are scored apart; the gap is the public pass rate minus the
hidden (held-out) one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from icae_tui.domain.results import SCORED_SPLITS, Verdict
from icae_tui.domain.task import Split

SPLITS = (Split.PUBLIC, Split.HIDDEN, Split.ENHANCED)
SCORED = tuple(str(s) for s in SCORED_SPLITS)
SCORED_LABEL = " + ".join(SCORED)  # "hidden + enhanced"
UNCOUNTED = {str(v) for v in Verdict if not v.counted}


@dataclass(frozen=True)
class Tally:
    """`passed` of `total` counted cases; `rate` is None when there are none (unknown, not 0)."""

    passed: int = 0
    total: int = 0

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def add(self, passed: bool) -> Tally:
        return Tally(self.passed + int(passed), self.total + 1)


@dataclass(frozen=True)
class PatternRow:
    pattern: str
    by_split: dict[str, Tally]
    scored: Tally  # over hidden + enhanced: what macro averages


@dataclass(frozen=True)
class Turn:
    id: int
    question: str
    answer: str | None  # None: never answered
    responder: str
    records: list[str]
    fallback: bool
    over_budget: bool
    asked_s: float | None  # seconds since the run started
    answered_s: float | None


@dataclass(frozen=True)
class Failure:
    case_id: str
    split: str
    pattern: str
    verdict: str
    reason: str
    counted: bool


@dataclass(frozen=True)
class Summary:
    task: str
    agent: str
    level: str
    responder: str
    run_id: str
    status: str
    error: str
    reference: str
    build_ok: bool | None  # None: the run never reached the build gate
    build_reason: str
    build_exit: int | None
    submission: str
    started_at: float | None
    duration_s: float | None
    planned: int
    done: int
    overall: Tally
    macro: float | None
    tiers: dict[str, Tally]
    gap: float | None  # public rate minus hidden rate; None unless both have cases
    patterns: list[PatternRow]
    verdicts: list[tuple[str, int]]  # every case's verdict, counted or not, most first
    not_counted: int  # cases with the oracle's own failure as verdict
    rates: list[tuple[str, str, float]]  # (label, description, value) of the stored score
    turns: list[Turn]
    refused: int
    failures: list[Failure] = field(default_factory=list)
    # the agent's completion claims the results contradict: (its words, the figure, detail)
    claims_found: int = 0
    claims_contradicted: list[tuple[str, str]] = field(default_factory=list)
    # the combined score (evaluation/review.py) and what SM's rate is over
    review: dict[str, Any] | None = None
    sm_measured: int | None = None
    runtime: str = ""  # "ruby 3.3.8": the task's language version, where the run said it


def _macro(rows: list[PatternRow]) -> float | None:
    rates = [r.scored.rate for r in rows if r.scored.rate is not None]
    return sum(rates) / len(rates) if rates else None


def _since(start: float | None, at: Any) -> float | None:
    if start is None or not isinstance(at, int | float):
        return None
    return max(0.0, float(at) - start)


def summarise(report: dict[str, Any]) -> Summary:
    run = report.get("run", {})
    cases = report.get("cases", [])
    tiers = {str(s): Tally() for s in SPLITS}
    overall = Tally()
    by_pattern: dict[str, dict[str, Tally]] = {}
    for c in cases:
        if c["verdict"] in UNCOUNTED:
            continue
        split, passed = str(c["split"]), bool(c["passed"])
        tiers[split] = tiers.get(split, Tally()).add(passed)
        row = by_pattern.setdefault(c["pattern"], {})
        row[split] = row.get(split, Tally()).add(passed)
        if split in SCORED:
            overall = overall.add(passed)
    patterns = []
    for name, row in by_pattern.items():
        scored = Tally(
            sum(row[s].passed for s in SCORED if s in row),
            sum(row[s].total for s in SCORED if s in row),
        )
        patterns.append(PatternRow(name, row, scored))
    public, hidden = tiers[Split.PUBLIC].rate, tiers[Split.HIDDEN].rate
    gap = public - hidden if public is not None and hidden is not None else None
    verdicts = Counter(c["verdict"] for c in cases)
    start = run.get("started_at")
    finished = run.get("finished_at")
    score = report.get("score") or {}
    labels = {m["name"]: m for m in score.get("metrics", [])}
    rates = [
        (labels.get(name, {}).get("label", name), labels.get(name, {}).get("description", ""),
         float(value))
        for name, value in (score.get("rates") or {}).items()
    ]  # fmt: skip
    build = report.get("build")
    turns = [
        Turn(
            id=int(t.get("id", 0)),
            question=str(t.get("question", "")),
            answer=t.get("answer"),
            responder=str(t.get("responder") or t.get("mode") or ""),
            records=list(t.get("records") or []),
            fallback=bool(t.get("fallback")),
            over_budget=bool(t.get("over_budget")),
            asked_s=_since(start, t.get("asked_at")),
            answered_s=_since(start, t.get("answered_at")),
        )
        for t in report.get("turns", [])
    ]
    failures = [
        Failure(c["case_id"], str(c["split"]), c["pattern"], c["verdict"], c["reason"],
                c["verdict"] not in UNCOUNTED)
        for c in cases
        if not c["passed"]
    ]  # fmt: skip
    return Summary(
        task=str(run.get("task", "")),
        agent=str(run.get("agent", "")),
        level=str(run.get("level", "")),
        responder=str(run.get("responder", "")),
        run_id=str(run.get("run_id", "")),
        status=str(report.get("status", "unfinished")),
        error=str(report.get("error") or ""),
        reference=str((report.get("reference") or {}).get("against", "")),
        build_ok=None if build is None else bool(build["ok"]),
        build_reason="" if build is None else str(build.get("reason", "")),
        build_exit=None if build is None else build.get("exit_code"),
        submission=str(report.get("submission") or ""),
        started_at=start,
        duration_s=_since(start, finished),
        planned=int(score.get("planned", len(cases))),
        done=len(cases),
        overall=overall,
        macro=_macro(patterns),
        tiers=tiers,
        gap=gap,
        patterns=patterns,
        verdicts=sorted(verdicts.items(), key=lambda kv: (-kv[1], kv[0])),
        not_counted=sum(n for v, n in verdicts.items() if v in UNCOUNTED),
        rates=rates,
        turns=turns,
        refused=int((report.get("refused_questions") or {}).get("count", 0)),
        failures=failures,
        claims_found=len((report.get("claims") or {}).get("claims") or []),
        claims_contradicted=[
            (str(f.get("words", "")), str(f.get("detail") or f.get("figure") or ""))
            for f in (report.get("claims") or {}).get("flags") or []
        ],
        review=score.get("review") or None,
        sm_measured=(score.get("semantic") or {}).get("measured"),
        runtime=_runtime(run.get("runtime")),
    )


def _runtime(said: Any) -> str:
    if not isinstance(said, dict) or not said.get("name"):
        return ""
    return f"{said['name']} {said.get('version') or 'unknown'}"


def percent(rate: float | None) -> str:
    """A rate as a percentage with one decimal; `—` when unknown (no case to be over)."""
    return "—" if rate is None else f"{100 * rate:.1f} %"


def points(gap: float | None) -> str:
    """A difference of two rates in percentage points, signed."""
    return "—" if gap is None else f"{100 * gap:+.1f} pp"


def count(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1 ("1 question", "8 questions")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fraction(t: Tally) -> str:
    return f"{t.passed} / {t.total}"
