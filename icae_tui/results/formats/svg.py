"""Charts as inline SVG, drawn here in Python (no script, no external asset): horizontal
bars of rates or counts, and the clarification timeline. Labels come escaped from the
caller's data through reports/text.py; every number is formatted here."""

from __future__ import annotations

from dataclasses import dataclass

from icae_tui.results.formats.summary import Turn
from icae_tui.results.formats.text import h

WIDTH = 720
ROW = 26  # px per bar
LABEL_MAX_W = 330  # px at most for the labels left of the bars (longer ones are cut, with …)
CHAR_W = 6.6  # px per character of the 12 px font, about
NOTE_W = 120  # px for the figures right of the bars
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
PASS, FAIL, TRACK, INK, GRID = "#2e7d32", "#c62828", "#e8eaed", "#202124", "#bdc1c6"
VERDICT_COLOURS = {
    "accepted": PASS, "wrong_answer": FAIL, "side_effects": "#ef6c00",
    "runtime_error": "#6a1b9a", "time_limit": "#1565c0", "memory_limit": "#00838f",
    "output_limit": "#4e342e", "disk_limit": "#5d4037", "build_error": "#424242",
    "oracle_error": "#9e9e9e", "oracle_nondeterministic": "#bdbdbd",
}  # fmt: skip
RESPONDER_COLOURS = {"simulated": "#1a73e8", "model": "#8e24aa", "human": "#e37400",
                     "assisted": "#188038"}  # fmt: skip


@dataclass(frozen=True)
class Bar:
    label: str  # untrusted: escaped when drawn
    value: float | None  # a fraction of the scale; None: nothing to draw (unknown)
    note: str  # the figure shown right of the bar, e.g. "3 / 4 · 75.0 %"
    colour: str = PASS


def _frame(height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">'
        f"<title>{h(title)}</title>" + "".join(body) + "</svg>"
    )


def bars(title: str, rows: list[Bar]) -> str:
    """One horizontal bar per row over a 0–100 % scale, with grid lines at quarters; the
    labels' column is as wide as the longest needs, up to LABEL_MAX_W."""
    longest = max((len(row.label) for row in rows), default=8)
    label_w = int(min(LABEL_MAX_W, max(90, CHAR_W * longest + 16)))
    fits = int((label_w - 16) / CHAR_W)
    span = WIDTH - label_w - NOTE_W
    top, height = 18, 18 + ROW * max(len(rows), 1) + 8
    body = []
    for q in range(5):
        x = label_w + span * q / 4
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 8}" '
                    f'stroke="{GRID}" stroke-width="1"/>')  # fmt: skip
        body.append(f'<text x="{x:.1f}" y="{top - 6}" text-anchor="middle" {FONT} '
                    f'fill="{INK}">{25 * q}%</text>')  # fmt: skip
    for i, row in enumerate(rows):
        y = top + ROW * i
        shown = row.label if len(row.label) <= fits else row.label[: fits - 1] + "…"
        body.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" {FONT} '
                    f'fill="{INK}">{h(shown)}<title>{h(row.label)}</title></text>')
        body.append(f'<rect class="track" x="{label_w}" y="{y + 3}" width="{span}" '
                    f'height="{ROW - 8}" fill="{TRACK}"/>')  # fmt: skip
        if row.value is not None:
            w = span * min(max(row.value, 0.0), 1.0)
            body.append(f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" '
                        f'height="{ROW - 8}" fill="{row.colour}"><title>{h(row.label)}: '
                        f"{h(row.note)}</title></rect>")  # fmt: skip
        body.append(f'<text x="{label_w + span + 8}" y="{y + 15}" {FONT} '
                    f'fill="{INK}">{h(row.note)}</text>')  # fmt: skip
    if not rows:
        body.append(f'<text x="{label_w}" y="{top + 15}" {FONT} fill="{INK}">no case</text>')
    return _frame(height, title, body)


def timeline(title: str, turns: list[Turn], duration_s: float | None) -> str:
    """Each question on its own row: a dot when it was asked, a line to a diamond when it was
    answered (coloured by who answered), over the run's time in seconds from its start."""
    timed = [t for t in turns if t.asked_s is not None]
    end = max([duration_s or 0.0, *(t.answered_s or t.asked_s or 0.0 for t in timed)])
    end = end or 1.0
    left, right, top = 60, 24, 22
    span = WIDTH - left - right
    height = top + ROW * max(len(timed), 1) + 34

    def x(seconds: float) -> float:
        return left + span * seconds / end

    body = [f'<line x1="{left}" y1="{height - 28}" x2="{WIDTH - right}" y2="{height - 28}" '
            f'stroke="{INK}" stroke-width="1"/>']  # fmt: skip
    for q in range(5):
        at = end * q / 4
        body.append(f'<line x1="{x(at):.1f}" y1="{top - 6}" x2="{x(at):.1f}" '
                    f'y2="{height - 28}" stroke="{GRID}" stroke-width="1"/>')
        body.append(f'<text x="{x(at):.1f}" y="{height - 12}" text-anchor="middle" {FONT} '
                    f'fill="{INK}">{at:.1f} s</text>')  # fmt: skip
    for i, t in enumerate(timed):
        y = top + ROW * i + ROW / 2
        asked = t.asked_s or 0.0
        colour = RESPONDER_COLOURS.get(t.responder, INK)
        tip = f"Q{t.id} asked at {asked:.2f} s: {t.question}"
        body.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end" {FONT} '
                    f'fill="{INK}">Q{t.id}</text>')  # fmt: skip
        body.append(f'<circle class="asked" cx="{x(asked):.1f}" cy="{y}" r="4" fill="{INK}">'
                    f"<title>{h(tip)}</title></circle>")  # fmt: skip
        if t.answered_s is not None:
            a = x(t.answered_s)
            tip += f" · answered at {t.answered_s:.2f} s by {t.responder}"
            body.append(f'<line class="wait" x1="{x(asked):.1f}" y1="{y}" x2="{a:.1f}" y2="{y}" '
                        f'stroke="{colour}" stroke-width="3"/>')  # fmt: skip
            # drawn over the dot: an answer given at once still shows, in its colour
            body.append(f'<path class="answered" d="M{a:.1f},{y - 7} l7,7 l-7,7 l-7,-7 z" '
                        f'fill="{colour}" fill-opacity="0.85"><title>{h(tip)}</title></path>')
    if not timed:
        body.append(f'<text x="{left}" y="{top + 15}" {FONT} fill="{INK}">no question asked</text>')
    return _frame(height, title, body)
