"""Turning untrusted strings into Rich `Text` — never markup — for the console.

Everything that came from a task file, an agent or a delivery goes through `safe()` before a
widget sees it: control characters become visible escapes (`printable`) and the result is a
`Text` object, so `[bold]` stays literally `[bold]`.
"""

from __future__ import annotations

from rich.text import Text

from icae_tui.domain.results import Score, Verdict
from icae_tui.safe_text import printable

VERDICT_STYLES: dict[str, str] = {
    Verdict.ACCEPTED: "bold green",
    Verdict.WRONG_ANSWER: "bold red",
    Verdict.SIDE_EFFECTS: "bold dark_orange",
    Verdict.RUNTIME_ERROR: "bold red",
    Verdict.TIME_LIMIT: "bold magenta",
    Verdict.BUILD_ERROR: "bold red",
    Verdict.ORACLE_ERROR: "bold yellow",
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


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def verdict_text(verdict: str) -> Text:
    return Text(str(verdict), style=VERDICT_STYLES.get(verdict, "bold"))


def exit_text(code: int | None, timed_out: bool = False) -> Text:
    if timed_out:
        return Text("timeout", style="magenta")
    if code is None:
        return Text("—", style="dim")
    return Text(str(code), style="" if code == 0 else "yellow")


def score_text(score: Score | None) -> Text:
    if score is None:
        return Text("score: —", style="dim")
    text = Text()
    text.append("overall ", style="dim")
    text.append(pct(score.overall), style="bold green" if score.overall >= 0.999 else "bold")
    text.append("  macro ", style="dim")
    text.append(pct(score.macro), style="bold")
    text.append("  │  ", style="dim")
    for label, value in (
        ("exec", score.exec_rate),
        ("SP", score.sp_rate),
        ("EM", score.em_rate),
        ("FM", score.fm_rate),
    ):
        text.append(f"{label} ", style="dim")
        text.append(pct(value) + "  ")
    text.append("│  ", style="dim")
    text.append(f"{score.done}/{score.planned}", style="bold")
    text.append(" cases done", style="dim")
    if score.public_minus_hidden is not None:
        text.append("  │  public−hidden ", style="dim")
        text.append(f"{100 * score.public_minus_hidden:+.1f} pts")
    if not score.build_ok:
        text.append("  │  ", style="dim")
        text.append("build failed", style="bold red")
    return text
