"""Repeats: one pairing (task × agent × level × responder) run N times, and what its figures
do across the runs. Single runs of one pairing scatter widely, so `icae run --repeats N`
stores each run as a run of its own, tagged with a shared repeat group (RunStore.set_repeat),
and reports each figure's spread over them.

For each figure (overall, macro, each tier's pass rate, each metric's rate) over the n
repeats that measured it:

- mean  x̄ = Σx / n
- sample standard deviation  s = √(Σ(x − x̄)² / (n − 1))  (none when n = 1)
- min – max
- a 95 % Student t confidence interval of the mean:  x̄ ± t(0.975, n − 1) · s / √n  (none
  when n = 1), cut to [0, 1] since every figure is a rate; t's quantile is computed here
  (the regularised incomplete beta function, then bisection), so no SciPy is needed.

A repeat that failed or was cancelled, or whose score is not measured (no hidden or enhanced
case counted), gives no figures: each figure says over how many repeats it is (`n`).
Textual-free; tests/test_repeats.py pins the formulas on hand-made numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icae_tui.domain.results import Score
from icae_tui.domain.task import Split

CONFIDENCE = 0.95
INTERVAL = "95 % Student t-interval of the mean: mean ± t(0.975, n−1) · sd / √n, cut to [0, 1]"


# --- Student's t --------------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
    front = math.exp(ln + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T ≤ t) = p (0 < p < 1), by bisection on t_cdf."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), not {p}")
    if df <= 0:
        raise ValueError(f"df must be positive, not {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


# --- a figure's spread ----------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    n: int
    mean: float
    sd: float | None  # sample standard deviation; None with one value
    low: float  # min
    high: float  # max
    ci: tuple[float, float] | None  # the t-interval of the mean; None with one value

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": round(self.mean, 6),
            "sd": None if self.sd is None else round(self.sd, 6),
            "min": self.low,
            "max": self.high,
            "ci": None if self.ci is None else [round(self.ci[0], 6), round(self.ci[1], 6)],
        }


def spread(values: Sequence[float], confidence: float = CONFIDENCE) -> Spread:
    """Mean, sample standard deviation, min–max and the t-interval of `values` (at least one);
    the interval is cut to [0, 1]."""
    n = len(values)
    if n == 0:
        raise ValueError("a spread needs at least one value")
    mean = math.fsum(values) / n
    if n == 1:
        return Spread(1, mean, None, values[0], values[0], None)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - 1))
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1) * sd / math.sqrt(n)
    ci = (max(0.0, mean - half), min(1.0, mean + half))
    return Spread(n, mean, sd, min(values), max(values), ci)


# --- a run's figures ----------------------------------------------------------------------------


def figures(score: Score | None) -> dict[str, float]:
    """The figures a repeat contributes, by name: overall, macro, each tier with cases
    (`public`, `hidden`, `enhanced`: its pass rate), each aggregated metric's rate (`exec`,
    `sp`, …). None, or a score not measured: no figures."""
    if score is None or not score.measured:
        return {}
    out = {"overall": score.overall, "macro": score.macro}
    for split in (Split.PUBLIC, Split.HIDDEN, Split.ENHANCED):
        tier = score.by_split.get(split)
        if tier is not None and tier.total:
            out[split.value] = round(tier.rate, 4)
    for spec in score.metrics:
        if spec.name in score.rates:
            out[spec.name] = score.rates[spec.name]
    return out


@dataclass(frozen=True)
class Repeat:
    run_id: str
    status: str
    score: Score | None


def summary(group: str, repeats: Sequence[Repeat]) -> dict[str, Any]:
    """The repeat group's report: each figure's spread over the repeats that gave it (in the
    order figures first appear), and each repeat's own figures."""
    per_run = [(r, figures(r.score)) for r in repeats]
    names: list[str] = []
    for _, figs in per_run:
        names += [name for name in figs if name not in names]
    spreads = {}
    for name in names:
        values = [figs[name] for _, figs in per_run if name in figs]
        spreads[name] = spread(values).as_dict()
    return {
        "repeat_group": group,
        "repeats": len(repeats),
        "measured": sum(1 for _, figs in per_run if figs),
        "interval": INTERVAL,
        "figures": spreads,
        "runs": [
            {"index": i + 1, "run_id": r.run_id, "status": r.status, "figures": figs}
            for i, (r, figs) in enumerate(per_run)
        ],
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The repeat group's report as the terminal shows it: one line per figure
    (`overall   mean 46.7%  sd 11.5  min–max 40.0%–60.0%  95% CI 18.0%–75.4%  (n=3)`), then
    one per repeat."""
    lines = [
        f"━━ repeats: {report['repeats']} run(s) of one pairing, group {report['repeat_group']}"
        f" ({report['measured']} measured)"
    ]
    width = max((len(name) for name in report["figures"]), default=0)
    for name, f in report["figures"].items():
        sd = "—" if f["sd"] is None else f"{100 * f['sd']:.1f} pts"
        ci = (
            "no interval (n=1)"
            if f["ci"] is None
            else f"95% CI {_pct(f['ci'][0])}–{_pct(f['ci'][1])}"
        )
        lines.append(
            f"   {name:<{width}}  mean {_pct(f['mean'])}  sd {sd}  "
            f"min–max {_pct(f['min'])}–{_pct(f['max'])}  {ci}  (n={f['n']})"
        )
    lines.append(f"   interval: {report['interval']}")
    for run in report["runs"]:
        figs = run["figures"]
        shown = "  ".join(f"{k} {_pct(v)}" for k, v in figs.items()) or "no figures"
        lines.append(f"   #{run['index']} {run['run_id']} {run['status']}: {shown}")
    return lines


def summary_markdown(report: dict[str, Any]) -> str:
    """The repeat group's report in Markdown: the figures' table, then each repeat's."""
    out = [
        f"# Repeats of one pairing: {report['repeats']} runs",
        "",
        f"Repeat group `{report['repeat_group']}`, {report['measured']} measured. "
        f"Interval: {report['interval']}.",
        "",
        "| figure | n | mean | sd | min | max | 95 % CI |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in report["figures"].items():
        sd = "—" if f["sd"] is None else f"{100 * f['sd']:.1f} pts"
        ci = "—" if f["ci"] is None else f"{_pct(f['ci'][0])} – {_pct(f['ci'][1])}"
        out.append(
            f"| {name} | {f['n']} | {_pct(f['mean'])} | {sd} | {_pct(f['min'])} |"
            f" {_pct(f['max'])} | {ci} |"
        )
    names = list(report["figures"])
    out += ["", "| # | run | status | " + " | ".join(names) + " |",
            "| --- | --- | --- | " + " | ".join("---" for _ in names) + " |"]  # fmt: skip
    for run in report["runs"]:
        cells = [_pct(run["figures"].get(name)) for name in names]
        out.append(
            f"| {run['index']} | `{run['run_id']}` | {run['status']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out) + "\n"
