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

It also fits its width (Textual's cuts the last keys off, mid-word: "^q Q" at 80 columns).
When the keys do not all fit, the most important ones are shown, in their order, followed by
the key to the help screen ("? All keys"), which lists them all; the command palette's key
stays on the right. What is most important: the keys whose actions the screen names in its
`FOOTER_FIRST` (in that order), then the others in their order, the app's own keys last.
A resize fits them again. Its key widgets are its own (FooterKey, KeyGroup, FooterLabel:
Textual's are in a private module), drawn and named as Textual's, so the same styles apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalGroup
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer as TextualFooter
from textual.widgets import Label

__all__ = ["MORE", "Footer", "FooterKey", "Grouped", "KeyPlan", "fit"]

HELP_ACTION = "help"  # the app's: the help screen lists every key of the screen
MORE = "All keys"  # what the help key says when some keys are left out
KEY_CELLS = 3  # a key's cells beside its key and description: " ^q Quit "
PALETTE_CELLS = KEY_CELLS + 2  # the palette's key: its left border and right padding too


def removed(owner: object) -> bool:
    """A widget that was mounted and is gone (a key of an earlier compose)."""
    return isinstance(owner, Widget) and not owner.is_attached


WATCHERS = "__watchers"  # where Textual keeps the watchers of an object's reactives

# --- the footer's widgets ---------------------------------------------------------------------
# Textual's own (FooterKey, KeyGroup, FooterLabel) live in a private module: these draw the
# same, and carry the same type names, so the footer's styles (Textual's and the theme's)
# apply to them as they do to Textual's.


class FooterKey(Widget):
    """One key and what it does; a click presses the key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer-key--key", "footer-key--description"}
    DEFAULT_CSS = """
    FooterKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .footer-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
        &.-compact {
            .footer-key--key {
                padding: 0;
            }
            .footer-key--description {
                padding: 0 0 0 1;
            }
        }
    }
    """

    compact = reactive(True)

    def __init__(self, key: str, key_display: str, description: str, action: str, *,
                 disabled: bool = False, tooltip: str = "", classes: str = "") -> None:  # fmt: skip
        self.key, self.key_display, self.description, self.action = (
            key, key_display, description, action,
        )  # fmt: skip
        self.off = disabled  # shown dimmed, and a click only rings the bell
        super().__init__(classes=f"{classes} -disabled" if disabled else classes)
        self.set_reactive(Widget.shrink, False)
        if tooltip:
            self.tooltip = tooltip

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        key_pad = self.get_component_styles("footer-key--key").padding
        description_pad = self.get_component_styles("footer-key--description").padding
        key = " " * key_pad.left + self.key_display + " " * key_pad.right
        if not self.description:
            label = Text.assemble((self.key_display, key_style))  # spans, as below
        else:
            description = (
                " " * description_pad.left + self.description + " " * description_pad.right
            )
            label = Text.assemble((key, key_style), (description, description_style))
        label.stylize_before(self.rich_style)
        return label

    def on_mouse_down(self) -> None:
        if self.off:
            self.app.bell()
        else:
            self.app.simulate_key(self.key)

    def watch_compact(self, compact: bool) -> None:
        self.set_class(compact, "-compact")


class KeyGroup(HorizontalGroup):
    """The keys of one binding group."""

    DEFAULT_CSS = """
    KeyGroup {
        width: auto;
    }
    """


class FooterLabel(Label):
    """A binding group's description, after its keys."""


# One key shown: (key, what it shows: key display, description, action, enabled, tooltip).
Shown = tuple[str, tuple[str, str, str, bool, str]]


@dataclass(frozen=True)
class Grouped:
    """The keys of one binding group (more than one), shown as their keys, then the group's
    description ("←→ Seek")."""

    description: str
    compact: bool
    keys: tuple[Shown, ...]


Item = Shown | Grouped


@dataclass(frozen=True)
class KeyPlan:
    """The keys a footer would show, before fitting them to its width: `keys` in order,
    each with its rank (lower: kept first); the help key to show when some are left out;
    the palette's key (on the right)."""

    keys: tuple[tuple[Item, int], ...]
    more: Shown | None = None
    palette: Shown | None = None


def width_of(item: Item) -> int:
    """The cells an item takes, as Textual's footer styles lay it out."""
    if isinstance(item, Grouped):  # the keys (a margin each unless compact), the label
        margin = 0 if item.compact else 2
        keys = sum(cell_len(shown[1][0]) + margin for shown in item.keys)
        return keys + (2 if item.compact else 0) + cell_len(item.description) + 1
    key_display, description = item[1][0], item[1][1]
    return cell_len(key_display) + cell_len(description) + KEY_CELLS


def fit(plan: KeyPlan, width: int) -> list[Item]:
    """The keys shown in `width` cells, in their order, the palette's last: all of them when
    they fit; else the best ranked that fit beside the help key, then the help key."""
    room = width - (width_of(plan.palette) + PALETTE_CELLS - KEY_CELLS if plan.palette else 0)
    keys = [item for item, _ in plan.keys]
    palette: list[Item] = [plan.palette] if plan.palette else []
    if width <= 0 or sum(map(width_of, keys)) <= room or plan.more is None:
        return keys + palette
    room -= width_of(plan.more)
    kept: set[int] = set()
    for i, (item, _) in sorted(enumerate(plan.keys), key=lambda entry: entry[1][1]):
        if width_of(item) <= room:
            kept.add(i)
            room -= width_of(item)
    return [keys[i] for i in sorted(kept)] + [plan.more] + palette


def signature(items: Sequence[Item] | None) -> list[object]:
    """Which keys are shown, in order (what a change in place keeps)."""
    return [
        tuple(k for k, _ in item.keys) if isinstance(item, Grouped) else item[0]
        for item in items or ()
    ]


def plain_keys(items: Sequence[Item]) -> list[Shown] | None:
    """The items, when none is a group (those the footer can change in place)."""
    shown = [item for item in items if not isinstance(item, Grouped)]
    return shown if len(shown) == len(items) else None


def ranks(first: Sequence[str], action: str, *, app_key: bool) -> int:
    """A key's rank: its action's place in the screen's FOOTER_FIRST (by the action's name,
    without its parameters), else after those, the app's keys after all."""
    name = action.split("(", 1)[0]
    if name in first:
        return first.index(name)
    return len(first) + (1 if app_key else 0)


class Footer(TextualFooter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._items: list[Item] = []  # what is mounted
        self._composed: list[Shown] | None = None  # the same, if laid out plainly

    def compose(self) -> ComposeResult:
        self.forget_removed_keys()
        plan = self._plan() if self._bindings_ready else None
        self._items = items = self._fitted(plan) if plan is not None else []
        self._composed = plain_keys(items) if plan is not None else None
        for item in items:
            if isinstance(item, Grouped):  # as Textual lays out a group
                with KeyGroup(classes="-compact" if item.compact else ""):
                    for key, (key_display, _, action, enabled, tooltip) in item.keys:
                        yield FooterKey(key, key_display, "", action, disabled=not enabled,
                                        tooltip=tooltip, classes="-grouped",
                                        ).data_bind(compact=Footer.compact)  # fmt: skip
                yield FooterLabel(item.description)
                continue
            key, (key_display, description, action, enabled, tooltip) = item
            palette = item is plan.palette if plan is not None else False
            widget = FooterKey(key, key_display, description, action, disabled=not enabled,
                               tooltip=tooltip, classes="-command-palette" if palette else "")  # fmt: skip
            yield widget if palette else widget.data_bind(compact=Footer.compact)

    def _fitted(self, plan: KeyPlan) -> list[Item]:
        return fit(plan, self.size.width or self.app.size.width)

    def on_resize(self, event: events.Resize) -> None:
        plan = self._plan() if self._bindings_ready and self.is_attached else None
        if plan is not None and signature(self._fitted(plan)) != signature(self._items):
            self.call_after_refresh(self.recompose)

    @property
    def shown_keys(self) -> list[str]:
        """What the footer shows, as "key description" ("←→ Seek" for a group; for tests)."""
        return [
            "".join(shown[1][0] for shown in item.keys) + f" {item.description}"
            if isinstance(item, Grouped)
            else f"{item[1][0]} {item[1][1]}"
            for item in self._items
        ]

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
        planned, composed = self._plan(), self._composed
        items = self._fitted(planned) if planned is not None else None
        plan = plain_keys(items) if items is not None else None
        if plan is None or composed is None or signature(plan) != signature(composed):
            await self.recompose()
            return
        keys = list(self.query_children(FooterKey))
        if len(keys) != len(plan):
            await self.recompose()
            return
        for widget, (key, shown), (_, before) in zip(keys, plan, composed, strict=True):
            if shown == before:
                continue
            key_display, description, action, enabled, tooltip = shown
            widget.key, widget.key_display, widget.description = key, key_display, description
            widget.action = action
            widget.off = not enabled
            widget.set_class(not enabled, "-disabled")
            widget.tooltip = tooltip or None
            width = cell_len(key_display) + cell_len(description)
            widget.refresh(layout=width != cell_len(before[0]) + cell_len(before[1]))
        self._items = list(plan)
        self._composed = plan

    def _plan(self) -> KeyPlan:
        """The keys `compose` would show for the bindings now active, in order (consecutive
        ones of a group together, as Textual shows them), and the help and palette keys."""
        app, screen = self.app, self.screen
        active = screen.active_bindings
        first_of: Sequence[str] = getattr(screen, "FOOTER_FIRST", ())
        first: dict[str, tuple[Binding, bool, str, bool]] = {}  # by action: its first shown
        more: Shown | None = None
        for _, (node, binding, enabled, tooltip) in active.items():
            if binding.show:
                first.setdefault(binding.action, (binding, enabled, tooltip, isinstance(node, App)))
            elif binding.action == HELP_ACTION and more is None and enabled:
                more = (binding.key, (app.get_key_display(binding), MORE, binding.action, True,
                                      binding.description))  # fmt: skip
        keys: list[tuple[Item, int]] = []
        for group, entries in groupby(first.values(), lambda entry: entry[0].group):
            shown = [
                (
                    (b.key, (app.get_key_display(b), b.description, b.action, enabled,
                             tooltip or (b.description if group is not None else ""))),
                    ranks(first_of, b.action, app_key=app_key),
                )
                for b, enabled, tooltip, app_key in entries
            ]  # fmt: skip
            if group is not None and len(shown) > 1:
                grouped = Grouped(group.description, group.compact, tuple(k for k, _ in shown))
                keys.append((grouped, min(rank for _, rank in shown)))
            else:
                keys += shown
        palette: Shown | None = None
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            found = active.get(app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, b, enabled, _ = found
                tip = b.tooltip or b.description
                palette = (b.key, (app.get_key_display(b), b.description, b.action, enabled, tip))
        return KeyPlan(tuple(keys), more, palette)
