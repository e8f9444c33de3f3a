"""A one-line question at the bottom of the screen (the trace's search and text filter):
Enter gives the text typed, Escape None. What is under it stays in view and keeps updating."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from icae_tui.ui.keymap import keyed


class PromptScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    PromptScreen {
        align: left bottom;
        background: $background 10%;
    }
    #prompt-bar {
        height: 3;
        width: 100%;
        background: $panel;
    }
    #prompt-label {
        width: auto;
        padding: 1 1 0 1;
        color: $text-accent;
        text-style: bold;
    }
    #prompt-input {
        width: 1fr;
    }
    #prompt-hint {
        width: auto;
        padding: 1 1 0 1;
        color: $text-muted;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = keyed("prompt", [Binding("escape", "cancel", "Cancel")])

    def __init__(self, label: str, value: str = "", hint: str = "") -> None:
        super().__init__()
        self.label, self.value, self.hint = label, value, hint

    def compose(self) -> ComposeResult:
        with Horizontal(id="prompt-bar"):
            yield Static(Text(self.label), id="prompt-label")
            yield Input(self.value, id="prompt-input", select_on_focus=True)
            yield Static(Text(self.hint), id="prompt-hint")

    def on_mount(self) -> None:
        self.query_one("#prompt-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
