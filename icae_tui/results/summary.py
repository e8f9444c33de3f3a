"""A stored run's summary from its events (`icae runs show`): who ran what, how it ended, its
score per tier and per command pattern, its verdicts, its questions and how long it took.

Figures come from what the run stored: the score its scorers gave (the run's last), and the
cases' results for what the score does not hold (the per-pattern rates over the counted
hidden and enhanced cases, which macro averages, and the verdict distribution).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from icae_tui.domain.events import (
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    Event,
    Progress,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import SCORED_SPLITS, CaseResult, Score
from icae_tui.domain.task import Split
from icae_tui.util.safe_text import printable

RESCORED_FROM = "re-scored from run "  # a saved re-score's note (rescore.py), then the id


def rescored_from(events: Sequence[Event]) -> str | None:
    """The run a saved re-score was made from (its note follows RunStarted), else None."""
    for ev in events[:3]:
        if isinstance(ev, Progress) and ev.message.startswith(RESCORED_FROM):
            return ev.message.removeprefix(RESCORED_FROM).split(":")[0]
    return None


@dataclass(frozen=True)
class PatternRate:
    pattern: str
    passed: int
    total: int

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass
class RunSummary:
    run_id: str
    task: str = ""
    agent: str = ""
    level: str = ""
    responder: str = ""
    status: str = "running"  # no RunFinished stored: still running, or cut short
    error: str = ""
    failure: str | None = None  # a failed run's FailureKind
    build_ok: bool | None = None  # None: no build checked (yet)
    build_reason: str = ""
    score: Score | None = None
    results: list[CaseResult] = field(default_factory=list)
    questions: int = 0
    answered: int = 0
    refused: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    note: str = ""  # a saved re-score's: where it came from, at what τ

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at

    @property
    def by_case(self) -> dict[str, CaseResult]:
        return {r.case_id: r for r in self.results}

    def patterns(self) -> list[PatternRate]:
        """Each command pattern's passes over its counted hidden and enhanced cases (what
        macro averages), in the order the patterns first finished."""
        passed: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for r in self.results:
            if r.verdict.counted and r.split in SCORED_SPLITS:
                total[r.pattern] += 1
                passed[r.pattern] += r.passed
        return [PatternRate(p, passed[p], n) for p, n in total.items()]

    def verdicts(self) -> list[tuple[str, int]]:
        """How many cases got each verdict, the most frequent first (every case: public and
        the oracle's own failures too)."""
        return Counter(str(r.verdict) for r in self.results).most_common()


def summarize(run_id: str, events: Sequence[Event]) -> RunSummary:
    """The run's summary; its cases in planned order (cases finish in any order)."""
    s = RunSummary(run_id=run_id)
    order: dict[str, int] = {}
    for ev in events:
        match ev:
            case RunStarted():
                s.task, s.agent, s.level = ev.task_id, ev.agent, ev.level
                s.responder, s.started_at = str(ev.responder), ev.ts
            case BuildChecked():
                s.build_ok, s.build_reason = ev.ok, ev.reason
            case CasesPlanned():
                order = {case_id: i for i, case_id in enumerate(ev.case_ids)}
            case CaseFinished():
                s.results.append(ev.result)
            case ScoreUpdated():
                s.score = ev.score
            case Progress() if ev.message.startswith(RESCORED_FROM):
                s.note = ev.message
            case QuestionAsked():
                s.questions += 1
            case QuestionAnswered():
                s.answered += 1
            case QuestionsRefused():  # cumulative: the last holds the total
                s.refused = ev.count
            case RunFinished():
                s.status, s.error, s.finished_at = str(ev.status), ev.error, ev.ts
                s.failure = str(ev.failure) if ev.failure is not None else None
                if ev.score is not None:
                    s.score = ev.score
    s.results.sort(key=lambda r: order.get(r.case_id, len(order)))  # planned, not finished
    return s


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{seconds:.1f}s"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def show_lines(s: RunSummary) -> list[str]:
    """What `icae runs show` prints, each line within 80 columns (but for an error's own
    words, wrapped at a width of its own by the terminal)."""
    lines = [
        f"run        {s.run_id}",
        f"task       {printable(s.task)}",
        f"agent      {printable(s.agent)}",
        f"level      {s.level} · responder {s.responder}",
        f"status     {s.status}" + (f": {printable(s.error, limit=500)}" if s.error else ""),
    ]
    if s.note:
        lines += textwrap.wrap(printable(s.note), width=80, initial_indent="note       ",
                               subsequent_indent=" " * 11)  # fmt: skip
    if s.build_ok is None:
        lines.append("build      not checked")
    else:
        build = "ok" if s.build_ok else "failed"
        lines.append(f"build      {build}" + (f" ({printable(s.build_reason)})" if s.build_reason
                                             and not s.build_ok else ""))  # fmt: skip
    lines.append(f"duration   {duration(s.duration_s)}")
    lines.append(
        f"questions  {s.questions} asked · {s.answered} answered · {s.refused} refused"
    )
    sc = s.score
    if sc is None:
        lines.append("score      none stored")
    else:
        measured = sc.measured
        lines.append(
            f"score      overall {pct(sc.overall if measured else None)} · macro "
            f"{pct(sc.macro if measured else None)} · {sc.done}/{sc.planned} cases done"
        )
        if measured and sc.metrics:
            rates = " · ".join(
                f"{m.label} {pct(sc.rates.get(m.name))}" for m in sc.metrics if m.name in sc.rates
            )
            lines.append(f"rates      {rates}")
        if sc.public_minus_hidden is not None:
            lines.append(f"gap        public − hidden {100 * sc.public_minus_hidden:+.1f} points")
        lines.append("tiers      tier       passed   rate    macro")
        for split in Split:
            tier = sc.by_split.get(split)
            if tier is None:
                continue
            rate = pct(tier.rate) if tier.total else "—"
            macro = pct(tier.macro) if tier.total else "—"
            lines.append(f"           {split.value:<9} {tier.passed:>3}/{tier.total:<4}"
                         f" {rate:>6}  {macro:>6}")  # fmt: skip
    patterns = s.patterns()
    if patterns:
        lines.append("patterns   (hidden + enhanced)")
        for p in patterns:
            lines.append(f"           {_clip(printable(p.pattern), 50):<50} "
                         f"{p.passed:>3}/{p.total:<4} {pct(p.rate):>6}")  # fmt: skip
    verdicts = s.verdicts()
    if verdicts:
        text = " · ".join(f"{v} {n}" for v, n in verdicts)
        for i, part in enumerate(textwrap.wrap(text, width=69)):
            lines.append(("verdicts   " if i == 0 else " " * 11) + part)
    return lines
