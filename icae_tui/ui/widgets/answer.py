"""The operator's answer box: a small text area where Enter sends.

A `TextArea` rather than an `Input`, so a long, multi-paragraph draft from the simulated user
is shown whole (soft-wrapped) and sent back byte for byte when the operator leaves it as is.
Enter sends; ctrl+j (or shift+enter where the terminal reports it) starts a new line.
Its bottom border names those keys, and the others as they fit (the footer has them too):
at 80 columns "⏎ send · ^j new line", never a hint cut to "^l…".
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from icae_tui.display.wording import draft_source
from icae_tui.domain.events import QuestionAsked
from icae_tui.domain.states import ResponderMode
from icae_tui.ui.keymap import keyed

NEWLINE_KEYS = ("ctrl+j", "shift+enter")
# the keys the border names, in order, with their rank (lower: kept first when narrow)
HINTS = (("⏎ send", 0), ("^j new line", 0), ("^l clear", 3), ("^r draft", 2), ("^t responder", 1))
ASSISTED_ONLY = "^r draft"
HINT_CELLS = 6  # of the box's outer width, what its border takes beside the hint: "▊▁ " " ▁▎"


def keys_hint(assisted: bool, width: int) -> str:
    """The keys the box's border names in `width` cells (0: not laid out, all of them);
    the ranked last are left out first, never Enter nor ctrl+j."""
    hints = [(hint, rank) for hint, rank in HINTS if assisted or hint != ASSISTED_ONLY]
    room = width - HINT_CELLS

    def length(kept: list[tuple[str, int]]) -> int:
        return sum(len(hint) for hint, _ in kept) + 3 * max(0, len(kept) - 1)

    while width > 0 and length(hints) > room and any(rank for _, rank in hints):
        worst = max(rank for _, rank in hints)
        hints = [(hint, rank) for hint, rank in hints if rank != worst]
    return " · ".join(hint for hint, _ in hints)


class BoxMessage(Message):
    """A message from the answer box, which it names as its control."""

    def __init__(self, box: AnswerBox) -> None:
        super().__init__()
        self.box = box

    @property
    def control(self) -> AnswerBox:
        return self.box


class AnswerBox(TextArea):
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "answer",
        [
            Binding("ctrl+l", "clear", "Clear"),
            Binding("ctrl+r", "restore_draft", "Restore draft"),
            # Escape leaves the box, as it leaves an input in k9s or lazygit; leaving the run
            # from inside the box would be one key away from a cancel dialog mid-answer.
            Binding("escape", "leave", "Leave box"),
        ],
    )

    class Left(BoxMessage):
        """The operator pressed Escape in the box: the screen decides where focus goes."""

    class Submitted(BoxMessage):
        def __init__(self, box: AnswerBox, text: str) -> None:
            super().__init__(box)
            self.text = text

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(soft_wrap=True, tab_behavior="focus", name=name, id=id, classes=classes)
        self.draft = ""  # what ctrl+r restores; empty outside assisted mode
        self.question_id: int | None = None  # the question the text belongs to
        self.assisted = False  # the border names ctrl+r

    def on_resize(self) -> None:
        self._hint()

    def _hint(self) -> None:
        self.border_subtitle = keys_hint(self.assisted, self.outer_size.width)

    def offer(self, q: QuestionAsked, mode: ResponderMode | None) -> tuple[str, str]:
        """Ready the box for `q`, answered in `mode` (human or assisted): a fresh box for a new
        question; in assisted mode the simulated draft, unless the operator typed something.
        Returns the status line to show and the notice for when the box appears."""
        qid = q.question_id
        if self.question_id != qid:
            self.question_id = qid
            self.draft = ""
            self.set_text("")
        if mode == ResponderMode.ASSISTED:
            self.draft = q.draft
            if not self.text.strip():
                self.set_text(q.draft)
            self.border_title = f"Answer Q{qid} · assisted · draft {draft_source(q.draft_records)}"
            self.assisted = True
            self._hint()
            return (
                f"Q{qid}: the simulated draft is in the box — Enter sends it, or edit it",
                f"The agent asks Q{qid}. The simulated draft is in the answer box.",
            )
        if self.draft and self.text == self.draft:  # an untouched draft: a human answers alone
            self.set_text("")
        self.draft = ""
        self.border_title = f"Answer Q{qid} · human"
        self.assisted = False
        self._hint()
        return (
            f"waiting for your answer to Q{qid} (box on the right)",
            f"The agent asks Q{qid} — type your answer.",
        )

    def action_leave(self) -> None:
        self.post_message(self.Left(self))

    def forget(self) -> None:
        """The question is answered or given up: its text goes."""
        self.question_id = None
        self.draft = ""
        self.set_text("")

    def set_text(self, text: str) -> None:
        """Replace the content and put the cursor at its end."""
        self.text = text
        self.move_cursor(self.document.end)

    async def _on_key(self, event: events.Key) -> None:
        # Runs before TextArea's own key handler (Textual walks the MRO); stopping here and
        # preventing the default keeps TextArea from inserting a newline on Enter.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
        elif event.key in NEWLINE_KEYS and not self.read_only:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self.replace("\n", start, end, maintain_selection_offset=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restore_draft":
            return bool(self.draft)
        return True

    def action_clear(self) -> None:
        self.set_text("")

    def action_restore_draft(self) -> None:
        if self.draft:
            self.set_text(self.draft)
