"""What displays say of a case's metrics, from the specs they are given (CasesPlanned, Score):
never from the scorers registered in this process, so a stored run reads as it ran.

The ladder's metrics have their own reading (wording.ladder_segments: rungs reached or not);
every other scorer's metric reads the same way everywhere: a PASS one ✔ / ✘, a SCORE or
DETAIL one as its figure, a metric the case lacks as "—".
"""

from __future__ import annotations

from collections.abc import Sequence

from icae_tui.domain.results import CaseResult, LadderMetric, MetricKind, MetricSpec
from icae_tui.util.safe_text import printable

Seg = tuple[str, str]  # (text, style hint), as in wording

LADDER_NAMES = frozenset(m.value for m in LadderMetric)  # the ladder metrics' names
MISSING = "—"
LABEL_LIMIT = 40  # characters of a label shown


def label(spec: MetricSpec) -> str:
    return printable(spec.label or spec.name, limit=LABEL_LIMIT)


def extra_specs(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    """The metrics of scorers other than the ladder, in order."""
    return [m for m in specs if m.name not in LADDER_NAMES]


def case_extras(r: CaseResult, specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    """The non-ladder metrics to show for a case: the specs', then any the case has that the
    specs do not name (read as figures, by name)."""
    known = extra_specs(specs)
    named = {m.name for m in known}
    unknown = [
        MetricSpec(name=name, label=name, kind=MetricKind.SCORE)
        for name in r.metrics
        if name not in named and name not in LADDER_NAMES
    ]
    return known + unknown


def value_seg(spec: MetricSpec, value: float | None, *, done: bool = True) -> Seg:
    """One metric's value for a case: "" while the case runs, "—" if it lacks it."""
    if value is None:
        return (MISSING, "muted") if done else ("", "")
    if spec.kind is MetricKind.PASS:
        return ("✔", "good") if value >= 1.0 else ("✘", "error")
    return (f"{value:.2f}", "")


def value_width(spec: MetricSpec) -> int:
    """The widest value a metric's cell shows ("✔", "0.93", "—")."""
    return 1 if spec.kind is MetricKind.PASS else len("0.00")


def extras_segments(r: CaseResult, specs: Sequence[MetricSpec]) -> list[Seg]:
    """`SHOUT ✔  tone 0.75`: the case's other metrics, after the ladder's rungs."""
    segs: list[Seg] = []
    for spec in case_extras(r, specs):
        segs += [("  " if segs else "", ""), (f"{label(spec)} ", "muted")]
        segs.append(value_seg(spec, r.metrics.get(spec.name)))
    return [seg for seg in segs if seg[0]]
