"""`?`: the keys of the screen below and of the app, generated from their bindings (with
the keys as remapped by keymap.toml), each with what it does and its action id."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

from icae_tui.ui.commands import KeyRow, key_rows
from icae_tui.ui.keymap import keyed

NOTE = (
    "Every action is also in the command palette (ctrl+p). Remap keys by action id in "
    "keymap.toml, in ~/.config/icae-tui/ (or $XDG_CONFIG_HOME/icae-tui/)."
)


def row_cells(row: KeyRow) -> tuple[Text, Text, Text]:
    style = "" if row.enabled else "dim"
    return (
        Text(row.keys_text, style=f"bold {style}".strip()),
        Text(row.description, style=style),
        Text(row.action_id, style="dim"),
    )


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        background: $background 60%;
    }
    #help-dialog {
        width: 96;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        border-title-color: $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        background: $surface;
        padding: 0 1;
    }
    #help-keys {
        height: auto;
        max-height: 1fr;
        border: none;
    }
    #help-note {
        height: auto;
        margin-top: 1;
        color: $text-muted;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "help", [Binding("escape,q,question_mark,f1", "close", "Close")]
    )

    def __init__(self, target: Screen[Any]) -> None:
        """`target`: the screen whose keys are listed (the one below)."""
        super().__init__()
        self.target = target
        self.rows = key_rows(target)

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog") as dialog:
            dialog.border_title = "Keys"
            dialog.border_subtitle = "Esc or ? closes"
            table: DataTable[Text] = DataTable(
                id="help-keys", cursor_type="none", zebra_stripes=True
            )
            yield table
            yield Static(Text(NOTE), id="help-note")

    def on_mount(self) -> None:
        table = self.query_one("#help-keys", DataTable)
        table.add_columns("Key", "Action", "Id")
        sections = (("This screen", False), ("Everywhere", True))
        for title, everywhere in sections:
            rows = [r for r in self.rows if r.everywhere is everywhere]
            if not rows:
                continue
            table.add_row(Text(title, style="bold underline"), Text(""), Text(""))
            for row in rows:
                table.add_row(*row_cells(row))

    def action_close(self) -> None:
        self.dismiss(None)
