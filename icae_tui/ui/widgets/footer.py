"""The key footer: Textual's, less the widgets each change of the bindings made and kept.

Textual's `Footer` composes its keys again whenever the screen's bindings change (a switch of
responder, a pause, the focus moving): it removes every `FooterKey` and mounts new ones. Two
costs, both while an operator cycles the responder under a flooding agent:

- each key is bound to the footer's `compact` (`data_bind`): a watcher kept on the footer,
  pointing at the key, which Textual prunes only when `compact` changes — never, here. So
  every recompose left its keys alive with their styles, caches and message queues: on the
  run screen about 250 widgets (10 MiB) each 10 s (Textualize/textual#6666). This footer
  drops the watchers of the keys that were removed before it composes new ones;
- removing and mounting the keys takes the loop away from everything else for each change.
  When the same keys are shown (the same bindings' keys, in the same order; no groups), this
  footer changes the keys in place instead: their description ("Responder ▸ human"), action,
  whether they are enabled, their tooltip. Anything else is composed again, as Textual does.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer as TextualFooter

__all__ = ["Footer"]


def removed(owner: object) -> bool:
    """A widget that was mounted and is gone (a key of an earlier compose)."""
    return isinstance(owner, Widget) and not owner.is_attached


WATCHERS = "__watchers"  # where Textual keeps the watchers of an object's reactives

# One key shown: (key, what it shows: key display, description, action, enabled, tooltip).
Shown = tuple[str, tuple[str, str, str, bool, str]]


@runtime_checkable
class KeyFields(Protocol):
    """What this footer changes in place on Textual's `FooterKey` (a private class)."""

    key: str
    key_display: str
    description: str
    action: str


class Footer(TextualFooter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._composed: list[Shown] | None = None  # the keys mounted, if laid out plainly

    def compose(self) -> ComposeResult:
        self.forget_removed_keys()
        self._composed = self._plan() if self._bindings_ready else None
        yield from super().compose()

    def forget_removed_keys(self) -> int:
        """Drop the watchers of widgets that were removed (the keys of the last compose);
        how many."""
        watchers: dict[str, list[tuple[object, object]]] = getattr(self, WATCHERS, {})
        dropped = 0
        for entries in watchers.values():
            alive = [entry for entry in entries if not removed(entry[0])]
            dropped += len(entries) - len(alive)
            entries[:] = alive
        return dropped

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if (
            self._composed is not None
            and self.is_attached
            and screen is self.screen
            and screen.app.app_focus
        ):
            self.call_after_refresh(self._update_keys)
            return
        super().bindings_changed(screen)

    async def _update_keys(self) -> None:
        """Show the bindings now active: in place when the same keys are shown."""
        if not self.is_attached:
            return
        plan, composed = self._plan(), self._composed
        if plan is None or composed is None or [k for k, _ in plan] != [k for k, _ in composed]:
            await self.recompose()
            return
        # by type name (the class is private), and with the fields this changes
        keys = [k for k in self.query_children("FooterKey") if isinstance(k, KeyFields)]
        if len(keys) != len(plan):
            await self.recompose()
            return
        for widget, (key, shown), (_, before) in zip(keys, plan, composed, strict=True):
            if shown == before:
                continue
            key_display, description, action, enabled, tooltip = shown
            widget.key, widget.key_display, widget.description = key, key_display, description
            widget.action = action
            widget.disabled = not enabled
            widget.tooltip = tooltip or None
            width = cell_len(key_display) + cell_len(description)
            widget.refresh(layout=width != cell_len(before[0]) + cell_len(before[1]))
        self._composed = plan

    def _plan(self) -> list[Shown] | None:
        """The keys `compose` would show for the bindings now active, in order (the command
        palette's last); None when some are grouped (laid out otherwise)."""
        app, active = self.app, self.screen.active_bindings
        first: dict[str, tuple[Any, bool, str]] = {}  # by action: its first binding shown
        for _, binding, enabled, tooltip in active.values():
            if binding.show:
                if binding.group is not None:
                    return None
                first.setdefault(binding.action, (binding, enabled, tooltip))
        plan: list[Shown] = [
            (b.key, (app.get_key_display(b), b.description, b.action, enabled, tooltip or ""))
            for b, enabled, tooltip in first.values()
        ]
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            palette = active.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _, b, enabled, _ = palette
                tip = b.tooltip or b.description
                plan.append(
                    (b.key, (app.get_key_display(b), b.description, b.action, enabled, tip))
                )
        return plan
