"""The task browser's filter line: each language and size with how many tasks it would show
(the counts follow the search and the other filter), the chosen one highlighted."""

from __future__ import annotations

from rich.text import Text

from icae_tui.catalog_search import Found, Size
from icae_tui.ui.text import safe

CHOSEN = "bold reverse"
NBSP = "\u00a0"  # a value and its count wrap as one


def choice(text: Text, label: str, count: int, chosen: bool, first: bool = False) -> None:
    if not first:
        text.append("·", style="dim")
    style = CHOSEN if chosen else ("" if count else "dim")
    text.append_text(safe(f"{NBSP}{label}{NBSP}{count}{NBSP}", style))
    text.append(" ")


def filters_text(found: Found, language: str | None, size: Size | None) -> Text:
    """`size  all 9 · small 3 · medium 6 · large 0   language  all 9 · go 5 · python 4`"""
    text = Text()
    text.append("size ", style="dim")
    choice(text, "all", sum(n for _, n in found.sizes), size is None, first=True)
    for value, count in found.sizes:
        choice(text, value.value, count, value is size)
    text.append("  language ", style="dim")
    choice(text, "all", sum(n for _, n in found.languages), language is None, first=True)
    for lang, count in found.languages:
        choice(text, lang, count, lang == language)
    text.rstrip()
    return text
