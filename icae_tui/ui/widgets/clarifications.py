"""The clarification pane: the run view's turns — each question and its answer, with who
answered and from what, the simulated user's drafts (assisted mode), each switch of responder,
the questions refused past the budget and, once the run is over, the interaction metrics.

Questions are bounded by the budget (the ones past it are counted in one entry), but nothing
bounds the operator's switches of responder: the pane shows the last SWITCHES_SHOWN of them
(each one is a widget, and each widget makes every later layout of the pane dearer), and its
first entry says how many earlier ones left it; the trace keeps a line for every switch.

Its title says how many questions were asked and who answers; in a narrow pane (80 columns)
it says it shorter rather than be cut before the responder: "1/3 asked · human".
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from icae_tui.display.view import RunView, Turn
from icae_tui.display.wording import NO_QUESTIONS, clarifications_title, metrics_line
from icae_tui.domain.states import ResponderMode
from icae_tui.ui.text import segments, style_of
from icae_tui.util.safe_text import printable

SHORT_DRAFT = 160  # of a draft whose whole text is in the answer box
SWITCHES_SHOWN = 20  # the latest switches of responder the pane shows
TITLE_CELLS = 6  # of the pane's outer width, what its border takes beside the title: "╭─ " " ─╮"


def fitting_title(
    asked: int, budget: int | None, mode: ResponderMode | None, summary: str, width: int
) -> str:
    """The pane's title for a pane `width` cells wide: the whole one when it fits, else
    shorter ones that still say who answers (0: not laid out yet, the whole one)."""
    whole = clarifications_title(asked, budget, mode, summary)
    room = width - TITLE_CELLS
    if width <= 0 or len(whole) <= room:
        return whole
    if summary:  # the run is over: its interaction metrics, as many as fit
        return summary
    of = f"{asked}/{budget}" if budget is not None else str(asked)
    shorter = [f"{of} asked · responder {mode}", f"{of} asked · {mode}", f"{of} · {mode}"]
    if mode is None:
        shorter = [f"{of} asked", of]
    return next((title for title in shorter if len(title) <= room), shorter[-1])


def earlier_switches_text(count: int) -> Text:
    switches = "switch" if count == 1 else "switches"
    return Text(f"… {count:,} earlier {switches} of responder: the trace has them", "dim italic")


def turn_text(turn: Turn, *, limit: int | None = None) -> Text:
    text = segments(turn.head)
    if turn.body is not None:
        cut = turn.limit if limit is None else min(limit, turn.limit)
        text.append("\n")
        body = printable(turn.body, keep_newlines=True, limit=cut)
        text.append(body, style=style_of(turn.body_style))
    return text


class ClarificationPane(VerticalScroll):
    """A scrolling list of the view's turns; `sync()` draws what changed."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.view: RunView | None = None
        self.mode: ResponderMode | None = None
        self.turns: list[tuple[str, str]] = []  # (kind, plain text) for tests and copy
        self._shown: list[Turn] = []
        self._statics: list[Static | None] = []  # None: a switch that left the pane
        self._empty: Static | None = None
        self._switches: deque[int] = deque()  # the switches shown (turn indices), oldest first
        self.switches_gone = 0  # switches that left the pane
        self._gone_note: Static | None = None

    def on_mount(self) -> None:
        if not self._shown:
            self._empty = Static(Text(NO_QUESTIONS, style="dim italic"), classes="empty")
            self.mount(self._empty)
        self._retitle()

    def show(self, view: RunView) -> None:
        self.view = view

    @property
    def asked(self) -> int:
        return self.view.asked if self.view is not None else 0

    def set_mode(self, mode: ResponderMode | None) -> None:
        self.mode = mode
        self._retitle()

    def on_resize(self) -> None:
        self._retitle()

    def _retitle(self) -> None:
        view, width = self.view, self.outer_size.width
        if view is None:
            self.border_title = fitting_title(0, None, self.mode, "", width)
            return
        m = view.interaction
        summary = metrics_line(m, has_records=view.has_records) if m is not None else ""
        self.border_title = fitting_title(view.asked, view.budget, self.mode, summary, width)

    def sync(self, *, short_draft: int | None = None) -> None:
        """Draw the turns that are new or changed; the draft of `short_draft` (the question
        in the answer box, which holds the whole draft) shows only its beginning."""
        self._retitle()
        if self.view is None:
            return
        added = False
        for i, turn in enumerate(self.view.turns):
            if i < len(self._shown) and self._shown[i] is turn:
                continue
            short = turn.kind == "draft" and turn.question_id == short_draft
            content = turn_text(turn, limit=SHORT_DRAFT if short else None)
            if i < len(self._shown):  # updated in place (the count past the budget)
                shown = self._statics[i]
                if shown is not None:
                    shown.update(content)
                self._shown[i] = turn
                self.turns[i] = (turn.kind, content.plain)
                continue
            if self._empty is not None:
                self._empty.remove()
                self._empty = None
            widget = Static(content, classes=f"turn {turn.kind}")
            self._shown.append(turn)
            self._statics.append(widget)
            self.turns.append((turn.kind, content.plain))
            self.mount(widget)
            added = True
            if turn.kind == "switch":
                self._switches.append(i)
                if len(self._switches) > SWITCHES_SHOWN:
                    self._forget_switch(self._switches.popleft())
        if added:
            self.call_after_refresh(self.scroll_end, animate=False)  # once the turn has a size

    def _forget_switch(self, i: int) -> None:
        """Take the switch of turn `i` out of the pane; the note at the top counts it."""
        widget = self._statics[i]
        self._statics[i] = None
        if widget is not None:
            widget.remove()
        self.switches_gone += 1
        note = earlier_switches_text(self.switches_gone)
        if self._gone_note is None:
            self._gone_note = Static(note, classes="turn switch gone")
            self.mount(self._gone_note, before=0)
        else:
            self._gone_note.update(note)
