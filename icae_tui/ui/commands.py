"""What a screen's keys do, for the help screen and the command palette: the bindings active
on a screen (its own, its focused widget's, the app's), with their keys as remapped."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual.actions import ActionError, parse
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen

from icae_tui.ui.keymap import KNOWN

PALETTE_ACTIONS = {"command_palette", "app.command_palette"}


@dataclass
class KeyRow:
    """One action of a screen: the keys that run it, what it does, its id."""

    keys: list[str]
    description: str
    action_id: str
    action: str
    node: DOMNode
    enabled: bool
    everywhere: bool  # the app's: on every screen

    @property
    def keys_text(self) -> str:
        return ", ".join(self.keys)


def describe(binding: Binding) -> str:
    if binding.description:
        return binding.description
    try:
        _namespace, name, _args = parse(binding.action)
    except ActionError:
        name = binding.action
    return name.replace("_", " ").capitalize()


def key_rows(screen: Screen[Any]) -> list[KeyRow]:
    """The bindings active on `screen`, one row per action (its keys together): the screen's
    and its widgets' first, then the app's. A widget's binding is listed when it is one of the
    console's (it has an action id) or shown in the footer; Textual's cursor keys are not."""
    app = screen.app
    rows: dict[tuple[int, str], KeyRow] = {}
    for active in screen.active_bindings.values():
        node, binding = active.node, active.binding
        ours = binding.id is not None and binding.id in KNOWN
        if not (node is screen or node is app or ours or binding.show):
            continue
        if binding.system and not binding.description:
            continue
        action_id = binding.id or binding.action
        row = rows.get((id(node), action_id))
        key = app.get_key_display(binding)
        if row is None:
            rows[(id(node), action_id)] = KeyRow(
                [key],
                describe(binding),
                action_id,
                binding.action,
                node,
                active.enabled,
                node is app,
            )
        elif key not in row.keys:
            row.keys.append(key)
    return sorted(rows.values(), key=lambda r: r.everywhere)  # stable: chain order kept


def action_commands(app: App[Any], screen: Screen[Any]) -> Iterator[SystemCommand]:
    """A palette command for each action `screen` can run now (the palette itself aside).
    Actions of one description (the task list's q and the app's ctrl+q, both Quit) are one
    command, with all their keys."""
    commands: dict[str, tuple[list[str], KeyRow]] = {}
    for row in key_rows(screen):
        if not row.enabled or row.action in PALETTE_ACTIONS:
            continue
        keys, _first = commands.setdefault(row.description, ([], row))
        keys += [k for k in row.keys if k not in keys]
    for description, (keys, row) in commands.items():
        yield SystemCommand(
            description,
            f"{', '.join(keys)} · {row.action_id}",
            partial(app.run_action, row.action, row.node),
        )
