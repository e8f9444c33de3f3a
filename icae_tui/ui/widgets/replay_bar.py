"""The replay bar: where a paced replay is (playing, paused or at its end), at which speed,
its time against the run's, and a timeline of the run to jump along with the mouse.

    ▶ playing  1×  00:12 / 00:22  ━━━━━━━━━━━━━━━━━━━━╸──────────────  95/190 events

It reads everything from the `PacedReplay` (icae_tui/display/replay.py) each time it is
drawn; the replay screen calls `refresh()` when the replay moves. A click on the timeline
posts `ReplayBar.Seek` with the fraction of the run's time clicked.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from icae_tui.display.replay import PacedReplay
from icae_tui.display.wording import clock

MIN_TRACK = 8  # the timeline keeps at least this many cells
FILLED, HEAD, EMPTY = "━", "╸", "─"


def speed_label(speed: float) -> str:
    """1×, 0.5×, 16×; "at once" when nothing is waited for."""
    return "at once" if speed <= 0 else f"{speed:g}×"


def state_label(replay: PacedReplay) -> tuple[str, str]:
    """What the replay is doing, and its style."""
    if replay.finished:
        return "■ at the end", "bold"
    if replay.paused:
        return "‖ paused", "bold yellow"
    return "▶ playing", "bold green"


class ReplayBar(Widget):
    DEFAULT_CSS = """
    ReplayBar {
        height: 1;
        background: $panel;
    }
    """

    class Seek(Message):
        """The timeline was clicked: move to `fraction` (0 … 1) of the run's time."""

        def __init__(self, bar: ReplayBar, fraction: float) -> None:
            super().__init__()
            self.bar = bar
            self.fraction = fraction

        @property
        def control(self) -> ReplayBar:
            return self.bar

    def __init__(
        self,
        replay: PacedReplay,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.replay = replay
        self.track = (0, 0)  # where the timeline was drawn: first cell, width

    @property
    def fraction(self) -> float:
        """How far into the run's time the replay is (0 … 1)."""
        r = self.replay
        if not r.events:
            return 0.0
        if r.duration_s <= 0:
            return 1.0 if r.finished else 0.0
        return min(1.0, r.elapsed_s / r.duration_s)

    def describe(self) -> str:
        """The bar's words without the timeline (for tests and the status of a narrow bar)."""
        r = self.replay
        state, _ = state_label(r)
        return (
            f"{state} {speed_label(r.speed)} {clock(r.elapsed_s)} / {clock(r.duration_s)} "
            f"{r.position}/{len(r.events)} events"
        )

    def render(self) -> Text:
        r = self.replay
        state, style = state_label(r)
        left = Text(" ")
        left.append(state, style=style)
        left.append("  ")
        left.append(speed_label(r.speed), style="bold cyan")
        left.append(f"  {clock(r.elapsed_s)} / {clock(r.duration_s)}  ", style="")
        right = Text(f"  {r.position}/{len(r.events)} events ", style="dim")
        width = self.size.width
        room = width - cell_len(left.plain) - cell_len(right.plain)
        if room < MIN_TRACK:  # narrow: the events count goes first, then the times
            right = Text(f"  {r.position}/{len(r.events)} ", style="dim")
            room = width - cell_len(left.plain) - cell_len(right.plain)
        track = max(MIN_TRACK, room)
        self.track = (cell_len(left.plain), track)
        filled = round(self.fraction * track)
        line = left
        if filled:
            line.append(FILLED * (filled - 1) + (FILLED if filled == track else HEAD), "cyan")
        line.append(EMPTY * (track - filled), style="dim")
        line.append_text(right)
        line.truncate(max(width, 0))
        return line

    def on_click(self, event: events.Click) -> None:
        start, width = self.track
        if width and start <= event.x < start + width:
            event.stop()
            self.post_message(self.Seek(self, (event.x - start + 0.5) / width))
