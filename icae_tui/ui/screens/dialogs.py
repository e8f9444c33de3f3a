"""Small modal dialogs: a yes/no confirmation; one side of a case as text. The case detail
is in `case_detail.py` (imported here too, where the run screen has always found it)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from icae_tui.domain.results import SideRun
from icae_tui.ui.keymap import keyed
from icae_tui.ui.screens.case_detail import CaseDetailScreen, case_summary_text
from icae_tui.ui.text import exit_text, safe

__all__ = ["CaseDetailScreen", "ConfirmScreen", "case_summary_text", "side_text"]

OUTPUT_LIMIT = 20_000


class ConfirmScreen(ModalScreen[bool]):
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "confirm",
        [
            Binding("escape,n", "answer(False)", "No"),
            Binding("y", "answer(True)", "Yes"),
        ],
    )

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.yes, self.no = yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Static(Text(self.question), id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(self.yes, variant="error", id="yes")
                yield Button(self.no, variant="primary", id="no")
            # The buttons alone hide that y / n answer at once (Enter presses the focused one).
            yield Static(Text(f"y {self.yes} · n or Esc {self.no}"), id="confirm-keys")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


def side_text(name: str, side: SideRun | None) -> Text:
    text = Text()
    text.append(f"{name}\n", style="bold underline")
    if side is None:
        text.append("did not run\n", style="dim italic")
        return text
    text.append("exit ", style="dim")
    text.append_text(exit_text(side.exit_code, side.timed_out))
    text.append(f"  ·  {side.duration_s:.2f}s", style="dim")
    text.append(f"  ·  stdout {side.stdout_bytes} B · stderr {side.stderr_bytes} B\n", style="dim")
    for label, body in (("stdout", side.stdout), ("stderr", side.stderr)):
        text.append(f"\n{label}\n", style="bold cyan")
        if body:
            text.append_text(safe(body, lines=True, limit=OUTPUT_LIMIT))
            if not body.endswith("\n"):
                text.append("⏎ (no final newline)\n", style="dim")
        else:
            text.append("(empty)\n", style="dim italic")
    text.append("\nchanges\n", style="bold cyan")
    if not side.changes:
        text.append("(none)\n", style="dim italic")
    for change in side.changes:
        text.append(f"{change.change:<9} ", style="yellow")
        text.append_text(safe(change.path))
        text.append(f"  {change.type} {change.size} B", style="dim")
        if change.sha256:
            text.append(f"  sha256 {change.sha256[:12]}", style="dim")
        if change.target:
            text.append(" → ")
            text.append_text(safe(change.target))
        text.append("\n")
    if side.changes_total > len(side.changes):
        more = side.changes_total - len(side.changes)
        text.append(f"… {more} more not kept ({side.changes_total} in all,", style="yellow")
        text.append(f" sha256 {side.changes_sha256[:12]})\n", style="dim")
    return text
