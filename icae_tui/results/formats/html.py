"""The report as one self-contained HTML page: inline CSS, charts as inline SVG drawn in
Python (reports/svg.py), no script and no external asset, so it opens anywhere, offline,
and a hostile delivery's output can run nothing in it (all of it escaped, reports/text.py).
"""

from __future__ import annotations

from typing import Any

from icae_tui.results.formats import svg
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
from icae_tui.results.formats.text import h

FAILURES_SHOWN = 500

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #202124; margin: 24px auto;
       max-width: 980px; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
.sub { color: #5f6368; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { border: 1px solid #dadce0; border-radius: 8px; padding: 10px 14px; min-width: 200px;
        flex: 1; }
.card .v { font-size: 26px; font-weight: 600; } .card .over { color: #5f6368; font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { border-bottom: 1px solid #e8eaed; padding: 4px 8px; text-align: left;
         vertical-align: top; overflow-wrap: anywhere; }
td.n, th.n { text-align: right; white-space: nowrap; }
td.s, th.s { white-space: nowrap; }
code { background: #f1f3f4; padding: 0 3px; border-radius: 3px; }
.ok { color: #2e7d32; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
figure { margin: 12px 0; } figcaption { color: #5f6368; font-size: 12px; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
"""


def _card(label: str, value: str, over: str) -> str:
    return (f'<div class="card"><div>{label}</div><div class="v">{value}</div>'
            f'<div class="over">{over}</div></div>')  # fmt: skip


def _headline(s: Summary) -> str:
    public, hidden = s.tiers["public"], s.tiers["hidden"]
    n_patterns = sum(1 for p in s.patterns if p.scored.total)
    return '<div class="cards">' + "".join([
        _card("Overall (ICAE-Bench)", percent(s.overall.rate),
              f"{fraction(s.overall)} counted {SCORED_LABEL} cases passed"),
        _card("Macro (CLI-Tool-Bench)", percent(s.macro),
              f"mean pass rate of {n_patterns} command patterns, {SCORED_LABEL} cases"),
        _card("Public", percent(public.rate),
              f"{fraction(public)} public cases passed; not in overall"),
        _card("Public − hidden gap", points(s.gap),
              f"public rate minus hidden (held-out) rate: {fraction(public)} vs "
              f"{fraction(hidden)}"),
    ]) + "</div>"  # fmt: skip


def _build(s: Summary) -> str:
    if s.build_ok is None:
        state = "not reached (the run ended before the build gate)"
    elif s.build_ok:
        state = '<span class="ok">passed</span>'
    else:
        state = '<span class="bad">failed</span> — every case is a build error, every figure 0'
    items = [f"<li>Result: {state}</li>"]
    if s.build_reason:
        said = s.build_exit is None or "exit" in s.build_reason  # the reason may name it
        code = "" if said else f" (exit code {s.build_exit})"
        items.append(f"<li>Reason: {h(s.build_reason)}{code}</li>")
    if s.submission:
        items.append(f"<li>The agent's final message: “{h(s.submission, 600)}”</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{caption}</figcaption></figure>"


def _charts(s: Summary) -> str:
    pattern_bars = [
        svg.Bar(p.pattern, p.scored.rate,
                f"{fraction(p.scored)} · {percent(p.scored.rate)}")
        for p in s.patterns
    ]  # fmt: skip
    tier_bars = [
        svg.Bar(str(sp), s.tiers[str(sp)].rate,
                f"{fraction(s.tiers[str(sp)])} · {percent(s.tiers[str(sp)].rate)}")
        for sp in SPLITS
    ]  # fmt: skip
    total = sum(n for _, n in s.verdicts)
    verdict_bars = [
        svg.Bar(v, n / total, f"{n} · {percent(n / total)}",
                svg.VERDICT_COLOURS.get(v, svg.INK))
        for v, n in s.verdicts
    ]  # fmt: skip
    legend = "".join(
        f'<span><i style="background:{c}"></i>{who}</span>'
        for who, c in svg.RESPONDER_COLOURS.items()
    )
    return "".join([
        "<h2>Pass rate per command pattern</h2>",
        _figure(svg.bars("Pass rate per command pattern", pattern_bars),
                f"Each bar: the pattern's passed / counted cases over {SCORED_LABEL}; "
                "macro is their mean."),
        "<h2>Pass rate per tier</h2>",
        _figure(svg.bars("Pass rate per tier", tier_bars),
                "Each bar: the tier's passed / counted cases. Overall is over hidden + "
                "enhanced together; public is reported apart."),
        "<h2>Verdict distribution</h2>",
        _figure(svg.bars("Verdict distribution", verdict_bars),
                f"Each bar: the share of all {total} judged cases (every tier) with that "
                "verdict."),
        "<h2>Clarification timeline</h2>",
        _figure(svg.timeline("Clarification timeline", s.turns, s.duration_s),
                "Each row a question: ● when the agent asked it, ◆ when it was answered "
                "(colour: who answered), in seconds since the run started."
                f'<div class="legend">{legend}</div>'),
    ])  # fmt: skip


def _table(head: list[tuple[str, bool | str]], rows: list[list[str]]) -> str:
    """A table; each column's flag: True right-aligns it (figures), "s" keeps it on one line
    (short labels), False lets it wrap."""

    def cls(kind: bool | str) -> str:
        return {True: " class=n", "s": " class=s"}.get(kind, "")

    th = "".join(f"<th{cls(kind)}>{label}</th>" for label, kind in head)
    body = "".join(
        "<tr>" + "".join(f"<td{cls(kind)}>{cell}</td>"
                         for (_, kind), cell in zip(head, row, strict=True)) + "</tr>"
        for row in rows
    )  # fmt: skip
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _tables(s: Summary) -> str:
    patterns = _table(
        [("pattern", False), *((str(sp), True) for sp in SPLITS),
         (f"pass rate ({SCORED_LABEL})", True)],
        [[f"<code>{h(p.pattern)}</code>",
          *(fraction(p.by_split[str(sp)]) if str(sp) in p.by_split else "—" for sp in SPLITS),
          percent(p.scored.rate)] for p in s.patterns],
    )  # fmt: skip
    tiers = _table(
        [("tier", False), ("passed / cases", True), ("pass rate", True), ("in overall", False)],
        [[str(sp), fraction(s.tiers[str(sp)]), percent(s.tiers[str(sp)].rate),
          "yes" if str(sp) in SCORED else "no (reported apart)"] for sp in SPLITS],
    )  # fmt: skip
    total = sum(n for _, n in s.verdicts)
    verdicts = _table(
        [("verdict", False), ("cases", True), ("share", True)],
        [[h(v), str(n), percent(n / total)] for v, n in s.verdicts],
    )
    parts = [
        "<h2>Per tier</h2>", tiers,
        f"<h2>Per command pattern</h2><p>Passed / cases per tier; the last column over "
        f"{SCORED_LABEL}.</p>", patterns,
        f"<h2>Verdicts</h2><p>All {total} judged cases, every tier.</p>", verdicts,
    ]  # fmt: skip
    if s.rates:
        parts += [
            f"<h2>Metrics</h2><p>Each over the counted {SCORED_LABEL} cases.</p>",
            _table([("metric", False), ("rate", True), ("what it checks", False)],
                   [[h(label), percent(v), h(d)] for label, d, v in s.rates]),
        ]  # fmt: skip
    return "".join(parts)


def _turns(s: Summary) -> str:
    answered = sum(1 for t in s.turns if t.answer is not None)
    intro = f"<p>{count(len(s.turns), 'question')} asked, {answered} answered"
    intro += f"; {s.refused} more refused past the budget" if s.refused else ""
    rows = []
    for t in s.turns:
        who = h(t.responder) if t.answer is not None else "(no answer)"
        if t.over_budget:
            who += " (over budget)"
        records = ", ".join(h(r) for r in t.records) or ("fallback" if t.fallback else "—")
        rows.append([str(t.id), "—" if t.asked_s is None else f"{t.asked_s:.1f} s",
                     h(t.question), who, h(t.answer or ""), records])  # fmt: skip
    table = _table([("#", True), ("asked at", True), ("question", False),
                    ("answered by", "s"), ("answer", False), ("from records", "s")],
                   rows) if rows else ""  # fmt: skip
    return "<h2>Clarification turns</h2>" + intro + ".</p>" + table


def _failures(s: Summary) -> str:
    counted = [f for f in s.failures if f.counted]
    out = f"<h2>Failing cases</h2><p>{len(counted)} of {s.done} judged cases failed (all tiers).</p>"
    if counted:
        out += _table(
            [("case", "s"), ("tier", "s"), ("pattern", "s"), ("verdict", "s"),
             ("reason", False)],
            [[f"<code>{h(f.case_id)}</code>", h(f.split), f"<code>{h(f.pattern)}</code>",
              h(f.verdict), h(f.reason)] for f in counted[:FAILURES_SHOWN]],
        )  # fmt: skip
        if len(counted) > FAILURES_SHOWN:
            out += f"<p>… and {len(counted) - FAILURES_SHOWN} more (the JSON report has all).</p>"
    oracle = [f for f in s.failures if not f.counted]
    if oracle:
        out += "<p>The oracle's own failures (not held against the agent):</p><ul>"
        out += "".join(f"<li><code>{h(f.case_id)}</code>: {h(f.verdict)} — {h(f.reason)}</li>"
                       for f in oracle)  # fmt: skip
        out += "</ul>"
    return out


def _claims_and_review(s: Summary) -> str:
    out = ""
    if s.review and s.review.get("combined") is not None:
        w = s.review.get("weights") or {}
        out += (f"<h2>Combined score</h2><p><b>{percent(s.review['combined'])}</b> = "
                f"{w.get('execution', 0):g} × execution {percent(s.review.get('execution'))} + "
                f"{w.get('review', 0):g} × review {percent(s.review.get('review'))}</p>")  # fmt: skip
    if s.sm_measured is not None:
        out += (f"<p>SM (a model judge) measured {s.sm_measured} of {s.overall.total} counted "
                f"{SCORED_LABEL} cases; the others are not measured.</p>")  # fmt: skip
    if s.claims_found:
        items = "".join(f"<li>“{h(words)}” — {h(detail)}</li>"
                        for words, detail in s.claims_contradicted)  # fmt: skip
        out += (f"<h2>Completion claims</h2><p>{s.claims_found} claim(s) in the agent's final "
                f"message; <b>{len(s.claims_contradicted)} contradicted by the results</b>"
                f"</p>" + (f"<ul>{items}</ul>" if items else ""))  # fmt: skip
    return out


def render_html(report: dict[str, Any]) -> str:
    s = summarise(report)
    status = h(s.status) + (f" — {h(s.error)}" if s.error else "")
    duration = f", {s.duration_s:.1f} s" if s.duration_s is not None else ""
    uncounted = (f"; {s.not_counted} cases the oracle itself failed are counted nowhere"
                 if s.not_counted else "")  # fmt: skip
    runtime = f" · on {h(s.runtime)}" if s.runtime else ""
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Run report: {h(s.task)} by {h(s.agent)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>Run report: {h(s.task)} by {h(s.agent)}</h1>",
        f'<p class="sub">Level {h(s.level)}{runtime} · questions answered by the '
        f"{h(s.responder)} "
        f"responder · run <code>{h(s.run_id)}</code>: {status}{duration} · judged against "
        f"the {h(s.reference or 'oracle')}: {s.done} of {s.planned} planned cases"
        f"{uncounted}</p>",
        "<h2>Headline</h2>", _headline(s), _claims_and_review(s),
        "<h2>Build gate</h2>", _build(s),
        _charts(s), _tables(s), _turns(s), _failures(s),
        "</body></html>\n",
    ])  # fmt: skip


register_format(
    ReportFormat(
        "html",
        "one self-contained page with inline SVG charts",
        render_html,
        suffixes=("htm",),
        order=40,
    )
)
