"""Aggregate case results into a Score.

Overall = passed / total over hidden + enhanced (ICAE); public cases are reported apart.
Macro = mean over command patterns of each pattern's pass rate (CLI-Tool-Bench).
Cases where the oracle itself failed or disagreed with itself are left out of every rate and reported apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from icae_tui.domain.results import SCORED_SPLITS, CaseResult, Score, SplitScore

__all__ = ["SCORED_SPLITS", "score"]


def _macro(results: list[CaseResult]) -> float:
    by_pattern: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by_pattern[r.pattern].append(r.passed)
    if not by_pattern:
        return 0.0
    return sum(sum(v) / len(v) for v in by_pattern.values()) / len(by_pattern)


def _rate(results: list[CaseResult], attr: str) -> float:
    return sum(bool(getattr(r, attr)) for r in results) / len(results) if results else 0.0


def score(results: Iterable[CaseResult], *, planned: int, build_ok: bool = True) -> Score:
    results = list(results)
    counted = [r for r in results if r.verdict.counted]
    by_split: dict[str, SplitScore] = {}
    for split in ("public", *SCORED_SPLITS):
        rs = [r for r in counted if r.split == split]
        by_split[split] = SplitScore(
            total=len(rs), passed=sum(r.passed for r in rs), macro=round(_macro(rs), 4)
        )
    scored = [r for r in counted if r.split in SCORED_SPLITS]
    public, hidden = by_split["public"], by_split["hidden"]
    gap = None
    if public.total and hidden.total:
        gap = round(public.rate - hidden.rate, 4)
    return Score(
        build_ok=build_ok,
        done=len(results),
        planned=planned,
        overall=round(_rate(scored, "passed"), 4),
        macro=round(_macro(scored), 4),
        by_split=by_split,
        exec_rate=round(_rate(scored, "exec_ok"), 4),
        sp_rate=round(_rate(scored, "sp"), 4),
        em_rate=round(_rate(scored, "em"), 4),
        fm_rate=round(_rate(scored, "fm"), 4),
        public_minus_hidden=gap,
    )
