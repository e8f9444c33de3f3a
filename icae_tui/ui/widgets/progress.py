"""The run screen's progress line: the phase, a bar and its figures (display/progress.py):
the agent's time against its limit while it builds, the cases done with an estimate of the
time left while they are judged, the outcome once the run is over."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from icae_tui.display.progress import BAR_MIN, RunProgress, bar, head_segments, tail_segments
from icae_tui.ui.text import segments

GAP = 2  # cells between the bar and the text on either side


class ProgressLine(Static):
    DEFAULT_CSS = """
    ProgressLine {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    """

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.progress: RunProgress | None = None

    def show_progress(self, progress: RunProgress | None) -> None:
        if progress == self.progress:
            return
        self.progress = progress
        self.display = progress is not None
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    @property
    def plain(self) -> str:
        """What the line says (for tests)."""
        return self.render_text().plain

    def render_text(self) -> Text:
        p = self.progress
        if p is None:
            return Text()
        head, tail = segments(head_segments(p)), segments(tail_segments(p))
        room = self.content_size.width - cell_len(head.plain) - cell_len(tail.plain) - 2 * GAP
        done, left = bar(p.fraction, room) if room >= BAR_MIN else ("", "")
        text = head
        if done or left:
            text.append(" " * GAP)
            text.append(done, style=self._bar_style(p))
            text.append(left, style="dim")
            text.append(" " * GAP)
        else:
            text.append("  ")
        text.append_text(tail)
        return text

    @staticmethod
    def _bar_style(p: RunProgress) -> str:
        if p.paused:
            return "yellow"
        return "green" if p.fraction == 1.0 else "cyan"

    def _draw(self) -> None:
        if self.is_mounted:
            self.update(self.render_text(), layout=False)  # one fixed row: a repaint
