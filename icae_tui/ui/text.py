"""Turning untrusted strings into Rich `Text` — never markup — for the console.

Everything that came from a task file, an agent or a delivery goes through `safe()` before a
widget sees it: control characters become visible escapes (`printable`) and the result is a
`Text` object, so `[bold]` stays literally `[bold]`.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from icae_tui.display.wording import Seg, score_segments
from icae_tui.domain.results import Score, Verdict
from icae_tui.util.safe_text import printable

VERDICT_STYLES: dict[str, str] = {
    Verdict.ACCEPTED: "bold green",
    Verdict.WRONG_ANSWER: "bold red",
    Verdict.SIDE_EFFECTS: "bold dark_orange",
    Verdict.RUNTIME_ERROR: "bold red",
    Verdict.TIME_LIMIT: "bold magenta",
    Verdict.DISK_LIMIT: "bold magenta",
    Verdict.BUILD_ERROR: "bold red",
    Verdict.ORACLE_ERROR: "bold yellow",
}

MODE_STYLES = {"simulated": "bold", "human": "bold magenta", "assisted": "bold cyan"}

HINT_STYLES = {
    "muted": "dim",
    "strong": "bold",
    "good": "green",
    "good-strong": "bold green",
    "warn": "yellow",
    "warn-strong": "bold yellow",
    "error": "red",
    "error-strong": "bold red",
    "record": "cyan",
    "question": "bold magenta",
    "draft": "bold cyan",
    "draft-body": "italic",
    "sample": "dim italic",
}

STATUS_STYLES = {
    "completed": "bold green",
    "failed": "bold red",
    "cancelled": "bold yellow",
    "interrupted": "bold magenta",
}


def safe(text: object, style: str = "", *, limit: int | None = None, lines: bool = False) -> Text:
    """Untrusted text as a literal `Text`; `lines=True` keeps newlines."""
    return Text(printable(str(text), keep_newlines=lines, limit=limit), style=style)


def clip(text: object, width: int, style: str = "") -> Text:
    """Untrusted text cut to `width` characters with a plain "…" (for narrow cells)."""
    plain = printable(str(text))
    if len(plain) > width:
        plain = plain[: max(0, width - 1)] + "…"
    return Text(plain, style=style)


def verdict_text(verdict: str) -> Text:
    return Text(str(verdict), style=VERDICT_STYLES.get(verdict, "bold"))


def exit_text(code: int | None, timed_out: bool = False) -> Text:
    if timed_out:
        return Text("timeout", style="magenta")
    if code is None:
        return Text("—", style="dim")
    return Text(str(code), style="" if code == 0 else "yellow")


def style_of(hint: str) -> str:
    """The console's style for a display hint (icae_tui/display/wording.py)."""
    kind, _, arg = hint.partition(":")
    if kind == "mode":
        return MODE_STYLES.get(arg, "bold")
    if kind == "who":
        return MODE_STYLES.get(arg, "dim")
    if kind == "status":
        return STATUS_STYLES.get(arg, "bold")
    return HINT_STYLES.get(hint, "")


def segments(segs: Iterable[Seg], text: Text | None = None) -> Text:
    """Display segments as a `Text`, each made printable again (newlines kept)."""
    text = text if text is not None else Text()
    for part, hint in segs:
        text.append(printable(part, keep_newlines=True), style=style_of(hint))
    return text


def score_text(score: Score | None, *, partial: bool = False, claims: int = 0) -> Text:
    return segments(score_segments(score, partial=partial, claims=claims))
