"""The task browser's filter line: each size, language, origin and ability with how many tasks
it would show (the counts follow the search and the other filters), the chosen one
highlighted. Origin and ability are drawn only when the catalog's tasks differ in them."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from icae_tui.catalog.search import Ability, Found, Size
from icae_tui.ui.text import safe

CHOSEN = "bold reverse"
NBSP = "\u00a0"  # a value and its count wrap as one


def choice(text: Text, label: str, count: int, chosen: bool, first: bool = False) -> None:
    if not first:
        text.append("·", style="dim")
    style = CHOSEN if chosen else ("" if count else "dim")
    text.append_text(safe(f"{NBSP}{label}{NBSP}{count}{NBSP}", style))
    text.append(" ")


def filters_text(
    found: Found,
    language: str | None,
    size: Size | None,
    origin: str | None = None,
    ability: Ability | None = None,
    *,
    origins_shown: bool = False,
    abilities_shown: bool = False,
) -> Text:
    """`size  all 9 · small 3 · medium 6 · large 0   language  all 9 · go 5 · python 4`, then
    `origin  all 9 · bundled 3 · ICAE-EVAL 6` and `can do  all 9 · …` when shown."""
    text = Text()
    text.append("size ", style="dim")
    choice(text, "all", sum(n for _, n in found.sizes), size is None, first=True)
    for value, count in found.sizes:
        choice(text, value.value, count, value is size)
    segment(text, "language", found.languages, language, sum(n for _, n in found.languages))
    if origins_shown:
        segment(text, "origin", found.origins, origin, sum(n for _, n in found.origins))
    if abilities_shown:
        shown = [(a.value, n) for a, n in found.abilities]
        chosen = ability.value if ability is not None else None
        segment(text, "can do", shown, chosen, found.ability_all)
    text.rstrip()
    return text


def segment(
    text: Text, label: str, counts: Sequence[tuple[str, int]], chosen: str | None, total: int
) -> None:
    """`  label  all N · value n · …`"""
    text.append(f"  {label} ", style="dim")
    choice(text, "all", total, chosen is None, first=True)
    for value, count in counts:
        choice(text, value, count, value == chosen)
