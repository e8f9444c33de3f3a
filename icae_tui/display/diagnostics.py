"""Diagnostics beyond tests in words: the lines the headless printer (and any display) shows
for a `DiagnosticsMade` event. Names from the delivery are made printable."""

from __future__ import annotations

from icae_tui.domain.diagnostics import CriticScore, Diagnostics
from icae_tui.util.safe_text import printable

PREFIX = "diagnostics: "


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:g}%"


def _rate(value: float | None) -> str:
    return "not measured" if value is None else f"{100 * value:.0f}%"


def diagnostics_lines(d: Diagnostics) -> list[str]:
    if d.error:
        return [PREFIX + printable(d.error, limit=300)]
    lines: list[str] = []
    if (s := d.structure) is not None:
        me = s.delivery
        head = (f"structure: {me.files} source file(s), {me.loc} LOC, {me.folders} folder(s)"
                f"{'' if s.complete else ' (at least: listing cut)'}")  # fmt: skip
        if s.reference is not None:
            ref = s.reference
            head += (f"; {s.reference_from} {ref.files} file(s), {ref.loc} LOC;"
                     f" File% {_pct(s.file_pct)}, LOC% {_pct(s.loc_pct)}")  # fmt: skip
        if s.monolith:
            head += f"; one-file monolith ({printable(me.largest_file, limit=80)})"
        lines.append(head)
        lines += [f"  note: {printable(n, limit=200)}" for n in s.notes]
    if (g := d.signature) is not None:
        if g.items:
            missing = [f"{i.kind} {printable(i.name, limit=60)}" for i in g.items if not i.found]
            tail = f"; missing: {', '.join(missing[:6])}" if missing else ""
            lines.append(
                f"API signature (static): {g.honoured}/{g.checked} named items found{tail}"
            )
        else:
            lines.append("API signature: nothing to check (the signature names no item)")
    if (r := d.rules) is not None and r.checked:
        head = f"task rules: {r.checked - r.broken_rules}/{r.checked} kept"
        lines.append(head)
        for bad in r.violations[:10]:
            at = f"{printable(bad.file, limit=120)}" + (f":{bad.line}" if bad.line else "")
            lines.append(f"  {bad.rule.replace('_', ' ')} {printable(bad.name, limit=60)}: {at}")
        if len(r.violations) > 10:
            lines.append(f"  … and {len(r.violations) - 10} more")
    if (c := d.critic) is not None:
        if c.error:
            lines.append(f"critic ({printable(c.model, limit=60)}): not measured — "
                         f"{printable(c.error, limit=200)}")  # fmt: skip
        else:
            lines.append(f"critic ({printable(c.model, limit=60)}):")
            for name, axis in (("semantic similarity", c.semantic_similarity),
                               ("API similarity", c.api_similarity),
                               ("design quality", c.design_quality)):  # fmt: skip
                lines.append(_axis(name, axis))
    if (v := d.review) is not None:
        w = v.weights
        lines.append(
            f"review score: {_rate(v.combined)} = {w['execution']:g} × execution "
            f"{_rate(v.execution)} + {w['review']:g} × review {_rate(v.review)} "
            f"({v.weights_from} weights)"
        )
        if v.components:
            parts = ", ".join(f"{k} {_rate(x)}" for k, x in v.components.items())
            lines.append(f"  review components: {parts}")
    return [PREFIX + line if not line.startswith("  ") else line for line in lines]


def _axis(name: str, axis: CriticScore | None) -> str:
    if axis is None:
        return f"  {name}: —"
    return f"  {name}: {axis.score:.2f} — {printable(axis.rationale, limit=200)}"
