"""The teach picker: after a human answered a question the simulated user could not, attach
that question to one of the level's records as a new trigger phrase (users/teaching.py).

Under the answer box, keyboard only: ↑/↓ choose the record (the one the answer most likely
came from is highlighted first), Enter attaches, Tab edits the phrase first (the question as
asked: trim it to the part the record answers), Escape skips. The screen stores the choice
(pending until `icae tasks teach` accepts it); the picker only asks.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from icae_tui.ui.keymap import keyed
from icae_tui.users.teaching import RecordChoice, TeachOffer
from icae_tui.util.safe_text import printable

RESPONSE_SHOWN = 70  # characters of a record's response in its option
HINTS = ("⏎ attach · ↑↓ record · tab phrase · esc skip", "⏎ attach · esc skip")
HINT_CELLS = 6  # of the picker's outer width, what its border takes beside the hint


def _option(choice: RecordChoice, likely: bool) -> Option:
    response = " ".join(choice.response.split())
    if len(response) > RESPONSE_SHOWN:
        response = response[: RESPONSE_SHOWN - 1] + "…"
    prompt = Text.assemble((choice.record_id, "bold"), "  ", printable(response))
    if likely:
        prompt.append("  · likely", style="italic")
    return Option(prompt, id=choice.record_id)


class TeachPicker(Vertical):
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "teach",
        [
            Binding("escape", "skip", "Skip"),
            # from the phrase box too: the records stay one key away
            Binding("up", "move(-1)", "Record above", show=False),
            Binding("down", "move(1)", "Record below", show=False),
        ],
    )

    class Chosen(Message):
        """Attach `offer`'s question, as `phrase`, to `record_id`."""

        def __init__(self, offer: TeachOffer, record_id: str, phrase: str) -> None:
            super().__init__()
            self.offer, self.record_id, self.phrase = offer, record_id, phrase

    class Skipped(Message):
        def __init__(self, offer: TeachOffer) -> None:
            super().__init__()
            self.offer = offer

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.offer: TeachOffer | None = None

    def compose(self) -> ComposeResult:
        yield Input(id="teach-phrase", placeholder="the phrase to attach")
        yield OptionList(id="teach-records")

    def on_resize(self) -> None:
        room = self.outer_size.width - HINT_CELLS
        self.border_subtitle = next((h for h in HINTS if len(h) <= room), HINTS[-1])

    @property
    def records(self) -> OptionList:
        return self.query_one("#teach-records", OptionList)

    @property
    def phrase(self) -> Input:
        return self.query_one("#teach-phrase", Input)

    def show_offer(self, offer: TeachOffer, choices: list[RecordChoice], likely: int) -> None:
        """Ask about `offer`: its question as the phrase, the level's records to choose."""
        self.offer = offer
        # the simulated user fell back on it and a human answered: from which record?
        self.border_title = f"Teach Q{offer.question_id}: which record?"
        self.on_resize()
        self.phrase.value = " ".join(offer.question.split())
        records = self.records
        records.clear_options()
        records.add_options([_option(c, i == likely) for i, c in enumerate(choices)])
        records.highlighted = max(likely, 0)

    def focus_records(self) -> None:
        self.records.focus()

    def _choose(self) -> None:
        highlighted = self.records.highlighted
        if self.offer is None or highlighted is None:
            return
        record_id = self.records.get_option_at_index(highlighted).id or ""
        phrase = self.phrase.value.strip()
        if not phrase:
            self.notify("An empty phrase teaches nothing: type one, or Escape skips.")
            self.phrase.focus()
            return
        self.post_message(self.Chosen(self.offer, record_id, phrase))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._choose()

    def action_move(self, step: int) -> None:
        records = self.records
        if records.option_count:
            at = (records.highlighted or 0) + step
            records.highlighted = min(max(at, 0), records.option_count - 1)

    def action_skip(self) -> None:
        if self.offer is not None:
            self.post_message(self.Skipped(self.offer))
