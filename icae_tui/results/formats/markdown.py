"""The report as Markdown, for a newcomer: the headline score first, then what it is made
of. Every figure names what it is over; everything the agent or its delivery wrote is
escaped (reports/text.py) and bounded."""

from __future__ import annotations

from typing import Any

from icae_tui.results.formats.registry import ReportFormat, register_format
from icae_tui.results.formats.summary import (
    SCORED,
    SCORED_LABEL,
    SPLITS,
    Summary,
    count,
    fraction,
    percent,
    points,
    summarise,
)
from icae_tui.results.formats.text import md, md_code

FAILURES_SHOWN = 200  # failing cases listed; the rest counted


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _headline(s: Summary) -> list[str]:
    hidden, public = s.tiers["hidden"], s.tiers["public"]
    return [
        "## Headline",
        "",
        _row("figure", "value", "over"),
        _row("---", "---:", "---"),
        _row("**Overall** (ICAE-Bench)", f"**{percent(s.overall.rate)}**",
             f"{fraction(s.overall)} counted {SCORED_LABEL} cases passed"),
        _row("**Macro** (CLI-Tool-Bench)", f"**{percent(s.macro)}**",
             f"mean of the pass rates of {sum(1 for p in s.patterns if p.scored.total)} "
             f"command patterns, each over its {SCORED_LABEL} cases"),
        _row("Public", percent(public.rate),
             f"{fraction(public)} public cases passed (the ones the agent could see; not in "
             "overall)"),
        _row("Public − hidden gap", points(s.gap),
             f"public pass rate minus hidden (held-out) pass rate ({fraction(public)} vs "
             f"{fraction(hidden)})"),
    ]  # fmt: skip


def _what(s: Summary) -> list[str]:
    lines = [
        f"# Run report: {md(s.task)} by {md(s.agent)}",
        "",
        f"- **Task** {md_code(s.task)}, level {md(s.level)}"
        + (f" on {md(s.runtime)}" if s.runtime else "")
        + f"; **agent** {md_code(s.agent)}; questions answered by the {md(s.responder)} "
        "responder",
        f"- **Run** {md_code(s.run_id)}: {md(s.status)}"
        + (f" — {md(s.error)}" if s.error else "")
        + (f", {s.duration_s:.1f} s" if s.duration_s is not None else ""),
        f"- **Judged against** the {md(s.reference or 'oracle')}: {s.done} of {s.planned} "
        "planned cases judged",
    ]
    if s.not_counted:
        lines.append(
            f"- {s.not_counted} cases failed on the oracle's side (its own error): reported "
            "below, counted in no figure"
        )
    return lines


def _build(s: Summary) -> list[str]:
    if s.build_ok is None:
        state = "not reached (the run ended before the build gate)"
    elif s.build_ok:
        state = "**passed**"
    else:
        state = "**failed** — every case is a build error and every figure is 0"
    lines = ["## Build gate", "", f"- Result: {state}"]
    if s.build_reason:
        said = s.build_exit is None or "exit" in s.build_reason  # the reason may name it
        exit_code = "" if said else f" (exit code {s.build_exit})"
        lines.append(f"- Reason: {md(s.build_reason)}{exit_code}")
    if s.submission:
        lines.append(f"- The agent's final message: “{md(s.submission, 600)}”")
    return lines


def _tiers(s: Summary) -> list[str]:
    lines = [
        "## Per tier",
        "",
        "Each tier's pass rate over its own counted cases.",
        "",
        _row("tier", "passed / cases", "pass rate", "in overall"),
        _row("---", "---:", "---:", "---"),
    ]
    for split in SPLITS:
        t = s.tiers[str(split)]
        scored = "yes" if str(split) in SCORED else "no (reported apart)"
        lines.append(_row(str(split), fraction(t), percent(t.rate), scored))
    return lines


def _patterns(s: Summary) -> list[str]:
    lines = [
        "## Per command pattern",
        "",
        f"Passed / cases per tier; the last column is the pattern's pass rate over its "
        f"{SCORED_LABEL} cases, the figures macro averages.",
        "",
        _row("pattern", *(str(sp) for sp in SPLITS), f"pass rate ({SCORED_LABEL})"),
        _row("---", *("---:" for _ in SPLITS), "---:"),
    ]
    for p in s.patterns:
        cells = [fraction(p.by_split[str(sp)]) if str(sp) in p.by_split else "—" for sp in SPLITS]
        lines.append(_row(md_code(p.pattern), *cells, percent(p.scored.rate)))
    if not s.patterns:
        lines.append(_row("(no case judged)", *("—" for _ in SPLITS), "—"))
    return lines


def _verdicts(s: Summary) -> list[str]:
    total = sum(n for _, n in s.verdicts)
    lines = [
        "## Verdicts",
        "",
        f"Every judged case's verdict, all tiers ({total} cases).",
        "",
        _row("verdict", "cases", "share"),
        _row("---", "---:", "---:"),
    ]
    for verdict, n in s.verdicts:
        lines.append(_row(md(verdict), str(n), percent(n / total if total else None)))
    return lines


def _rates(s: Summary) -> list[str]:
    if not s.rates:
        return []
    lines = [
        "## Metrics",
        "",
        f"The run's scored metrics, each over the counted {SCORED_LABEL} cases.",
        "",
        _row("metric", "rate", "what it checks"),
        _row("---", "---:", "---"),
    ]
    lines += [_row(md(label), percent(value), md(desc)) for label, desc, value in s.rates]
    return lines


def _turns(s: Summary) -> list[str]:
    answered = sum(1 for t in s.turns if t.answer is not None)
    lines = [
        "## Clarification turns",
        "",
        f"{count(len(s.turns), 'question')} asked, {answered} answered"
        + (f"; {s.refused} more refused past the budget (not stored)" if s.refused else "")
        + ".",
        "",
    ]
    if not s.turns:
        return lines[:-1]
    lines += [
        _row("#", "asked at", "question", "answered by", "answer", "from records"),
        _row("---:", "---:", "---", "---", "---", "---"),
    ]
    for t in s.turns:
        at = "—" if t.asked_s is None else f"{t.asked_s:.1f} s"
        who = md(t.responder) if t.answer is not None else "(no answer)"
        if t.over_budget:
            who += " (over budget)"
        records = ", ".join(md(r) for r in t.records) or ("fallback" if t.fallback else "—")
        lines.append(_row(str(t.id), at, md(t.question), who, md(t.answer or ""), records))
    return lines


def _failures(s: Summary) -> list[str]:
    counted = [f for f in s.failures if f.counted]
    lines = [
        "## Failing cases",
        "",
        f"{len(counted)} of {s.done} judged cases failed (all tiers)"
        + (":" if counted else "."),
    ]
    if counted:
        lines += [
            "",
            _row("case", "tier", "pattern", "verdict", "reason"),
            _row("---", "---", "---", "---", "---"),
        ]
        for f in counted[:FAILURES_SHOWN]:
            lines.append(
                _row(md_code(f.case_id), md(f.split), md_code(f.pattern), md(f.verdict),
                     md(f.reason))
            )  # fmt: skip
        if len(counted) > FAILURES_SHOWN:
            lines += ["", f"… and {len(counted) - FAILURES_SHOWN} more (the JSON report has all)."]
    oracle = [f for f in s.failures if not f.counted]
    if oracle:
        lines += ["", "The oracle's own failures (not held against the agent):", ""]
        lines += [f"- {md_code(f.case_id)}: {md(f.verdict)} — {md(f.reason)}" for f in oracle]
    return lines


def _claims_and_review(s: Summary) -> list[str]:
    lines: list[str] = []
    if s.review and s.review.get("combined") is not None:
        w = s.review.get("weights") or {}
        lines += ["## Combined score", "",
                  f"**{percent(s.review['combined'])}** = {w.get('execution', 0):g} × execution "
                  f"{percent(s.review.get('execution'))} + {w.get('review', 0):g} × review "
                  f"{percent(s.review.get('review'))} (the review: the mean of "
                  f"{', '.join(md(k) for k in s.review.get('components') or {}) or 'none'})"]  # fmt: skip
    if s.sm_measured is not None:
        lines += (["", ""] if lines else []) + [
            f"SM (a model judge) measured {s.sm_measured} of {s.overall.total} counted "
            f"{SCORED_LABEL} cases; the others are not measured."]  # fmt: skip
    if s.claims_found:
        n = len(s.claims_contradicted)
        lines += (["", ""] if lines else []) + [
            "## Completion claims", "",
            f"{s.claims_found} claim(s) in the agent's final message; "
            f"**{n} contradicted by the results**" + (":" if n else "."),
        ]  # fmt: skip
        lines += [f"- \"{md(words)}\" — {md(detail)}" for words, detail in s.claims_contradicted]
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    s = summarise(report)
    sections = [_what(s), _headline(s), _claims_and_review(s), _build(s), _tiers(s),
                _patterns(s), _verdicts(s), _rates(s), _turns(s), _failures(s)]  # fmt: skip
    return "\n\n".join("\n".join(sec) for sec in sections if sec) + "\n"


register_format(
    ReportFormat(
        "md",
        "for people: the headline score, tiers, patterns, failing cases",
        render_markdown,
        names=("md", "markdown"),
        suffixes=("markdown",),
        order=20,
    )
)
