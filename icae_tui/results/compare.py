"""Comparing two stored runs of one task (`icae runs compare`): which cases flipped (passed in
one, failed in the other), which ran in one only, and how every figure of the score moved —
overall, macro, each tier's rate and macro, each named rate, the public-minus-hidden gap.

Two agents are compared over tasks by pairing, for each task, each agent's latest completed
run (`pair_agents`). A figure a run did not measure (no score, a score before any scored
case) is None, and so is its delta: unknown is never taken for zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icae_tui.domain.results import Score
from icae_tui.domain.states import RunStatus
from icae_tui.domain.task import Split
from icae_tui.results.summary import RunSummary, pct, rescored_from
from icae_tui.store.database import RunRow, RunStore
from icae_tui.util.safe_text import printable


class DifferentTasks(ValueError):
    """The runs are of different tasks: their cases are not the same cases."""


@dataclass(frozen=True)
class Flip:
    case_id: str
    pattern: str
    before: str  # verdicts
    after: str


@dataclass(frozen=True)
class Delta:
    name: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else round(self.b - self.a, 4)


@dataclass(frozen=True)
class Comparison:
    a: RunSummary
    b: RunSummary
    pass_to_fail: list[Flip]
    fail_to_pass: list[Flip]
    only_a: list[str]
    only_b: list[str]
    unchanged: int  # cases in both whose passing did not change
    deltas: list[Delta]

    def delta(self, name: str) -> Delta:
        return next(d for d in self.deltas if d.name == name)


def _measured(score: Score | None) -> Score | None:
    return score if score is not None and score.measured else None


def score_deltas(a: Score | None, b: Score | None) -> list[Delta]:
    """Every figure of either score, a's then b's: overall, macro, each tier's rate and macro,
    each named rate (by its label), the gap."""
    a, b = _measured(a), _measured(b)
    out = [
        Delta("overall", a.overall if a else None, b.overall if b else None),
        Delta("macro", a.macro if a else None, b.macro if b else None),
    ]
    for split in Split:
        ta, tb = (s.by_split.get(split) if s else None for s in (a, b))
        ta, tb = (t if t is not None and t.total else None for t in (ta, tb))
        if ta is None and tb is None:
            continue
        out.append(Delta(f"{split.value} rate", ta.rate if ta else None, tb.rate if tb else None))
        out.append(
            Delta(f"{split.value} macro", ta.macro if ta else None, tb.macro if tb else None)
        )
    labels: dict[str, str] = {}
    for s in (a, b):
        for m in s.metrics if s else ():
            labels.setdefault(m.name, m.label)
        for name in s.rates if s else ():
            labels.setdefault(name, name)
    for name, label in labels.items():
        out.append(Delta(label, a.rates.get(name) if a else None, b.rates.get(name) if b else None))
    gaps = (s.public_minus_hidden if s else None for s in (a, b))
    ga, gb = gaps
    if ga is not None or gb is not None:
        out.append(Delta("public − hidden", ga, gb))
    return out


def compare_runs(a: RunSummary, b: RunSummary) -> Comparison:
    if a.task != b.task:
        raise DifferentTasks(
            f"runs of different tasks: {a.run_id} is of {printable(a.task)!r}, "
            f"{b.run_id} of {printable(b.task)!r}"
        )
    ca, cb = a.by_case, b.by_case
    pass_to_fail, fail_to_pass, unchanged = [], [], 0
    for case_id, ra in ca.items():
        rb = cb.get(case_id)
        if rb is None:
            continue
        flip = Flip(case_id, ra.pattern, str(ra.verdict), str(rb.verdict))
        if ra.passed and not rb.passed:
            pass_to_fail.append(flip)
        elif rb.passed and not ra.passed:
            fail_to_pass.append(flip)
        else:
            unchanged += 1
    return Comparison(
        a=a,
        b=b,
        pass_to_fail=pass_to_fail,
        fail_to_pass=fail_to_pass,
        only_a=[c for c in ca if c not in cb],
        only_b=[c for c in cb if c not in ca],
        unchanged=unchanged,
        deltas=score_deltas(a.score, b.score),
    )


def _points(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}"


def delta_lines(deltas: Sequence[Delta], heads: tuple[str, str] = ("A", "B")) -> list[str]:
    """The figures, each with its value in A and B and B − A in points (—: unknown)."""
    a, b = (h[:7] for h in heads)
    lines = [f"  {'figure':<22} {a:>7} {b:>7} {'change':>7}"]
    for d in deltas:
        lines.append(f"  {d.name[:22]:<22} {pct(d.a):>7} {pct(d.b):>7} {_points(d.delta):>7}")
    return lines


def compare_lines(c: Comparison, *, cases_shown: int = 50) -> list[str]:
    """What `icae runs compare` prints (within 80 columns): the runs, the flips, the cases in
    one run only, the figures' deltas (in points)."""
    lines = []
    for name, s in (("A", c.a), ("B", c.b)):
        lines.append(f"{name} {s.run_id}  {printable(s.agent)[:30]}  {s.level}  {s.status}")
        if s.note:  # a saved re-score: at what τ
            lines.append(f"  {printable(s.note)[:76]}")
    lines += [
        f"task {printable(c.a.task)}: {len(c.pass_to_fail)} pass → fail, "
        f"{len(c.fail_to_pass)} fail → pass, {c.unchanged} unchanged, "
        f"{len(c.only_a)} only in A, {len(c.only_b)} only in B",
    ]
    for title, flips in (("pass → fail", c.pass_to_fail), ("fail → pass", c.fail_to_pass)):
        if not flips:
            continue
        lines.append(f"{title}:")
        for f in flips[:cases_shown]:
            lines.append(f"  {printable(f.case_id)[:40]:<40} {f.before} → {f.after}")
        if len(flips) > cases_shown:
            lines.append(f"  … and {len(flips) - cases_shown} more")
    for title, ids in (("only in A", c.only_a), ("only in B", c.only_b)):
        if ids:
            shown = ", ".join(printable(i) for i in ids[:cases_shown])
            more = f", … and {len(ids) - cases_shown} more" if len(ids) > cases_shown else ""
            lines.append(f"{title}: {shown}{more}")
    lines.append("figures (points):")
    lines += delta_lines(c.deltas)
    return lines


@dataclass(frozen=True)
class AgentPairs:
    pairs: list[tuple[RunRow, RunRow]]  # per task: agent A's latest completed run, B's
    unpaired: list[tuple[str, str]]  # (task, the agent with no completed run of it)


def pair_agents(
    store: RunStore, agent_a: str, agent_b: str, tasks: Sequence[str] | None = None
) -> AgentPairs:
    """Each task's latest completed run of each agent: the given tasks, or every task either
    agent completed (in task order). A saved re-score (rescore.py) is passed over: it may be
    at another τ than the other agent's run; compare it by its id."""
    done = RunStatus.COMPLETED.value

    def latest(task: str, agent: str) -> RunRow | None:
        for row in store.runs(limit=1_000_000, task=task, agent=agent, status=done):
            if rescored_from(store.events(row.run_id, limit=3)) is None:
                return row
        return None

    if tasks is None:
        seen = {
            r.task_id
            for agent in (agent_a, agent_b)
            for r in store.runs(limit=1_000_000, agent=agent, status=done)
        }
        tasks = sorted(seen)
    pairs, unpaired = [], []
    for task in dict.fromkeys(tasks):
        ra, rb = latest(task, agent_a), latest(task, agent_b)
        if ra is not None and rb is not None:
            pairs.append((ra, rb))
        else:
            unpaired += [(task, agent) for agent, r in ((agent_a, ra), (agent_b, rb)) if r is None]
    return AgentPairs(pairs, unpaired)


def agents_total_lines(comparisons: Sequence[Comparison]) -> list[str]:
    """The totals over the tasks: flips summed, the mean of each run's overall and macro."""

    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if len(known) == len(values) and known else None

    deltas = [
        Delta(name, mean([c.delta(name).a for c in comparisons]),
              mean([c.delta(name).b for c in comparisons]))
        for name in ("overall", "macro")
    ]  # fmt: skip
    return [
        f"{len(comparisons)} task(s): "
        f"{sum(len(c.pass_to_fail) for c in comparisons)} pass → fail, "
        f"{sum(len(c.fail_to_pass) for c in comparisons)} fail → pass, "
        f"{sum(len(c.only_a) + len(c.only_b) for c in comparisons)} in one run only",
        "mean over the tasks (points):",
        *delta_lines(deltas),
    ]
