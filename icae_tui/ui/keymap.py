"""Remappable keys: every binding of the console has an action id, and
`$XDG_CONFIG_HOME/icae-tui/keymap.toml` maps ids to keys.

An id is `<scope>.<action>[.<argument>…]`, from the binding's action: the run screen's
`cancel_run` is `run.cancel_run`, its `focus('#trace')` is `run.focus.trace`, the app's
`help` is `app.help`. Bindings of one action share its id (the run screen's Escape and q are
both `run.back`: remapping it replaces both). The help screen (`?`) shows each binding's id.

    # keymap.toml: an id, or a group of ids (`run.cycle` = run.cycle.simulated, .human,
    # .assisted), → a key or a list of keys
    "run.cancel_run" = "x"
    "app.help" = ["f1", "?"]
    [run]                     # a table is a scope: this is run.follow
    follow = "ctrl+f"

Textual applies the map (`App.set_keymap`) to the bindings wherever they are, so the footer,
the help screen and the palette show the new keys. A bad entry (an unknown id, a key that is
no key) is reported with the file and the id; the others apply. A key that another action
of the same scope already has is applied and reported: that action loses it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from textual.actions import ActionError, parse
from textual.binding import Binding, BindingType
from textual.keys import Keys, key_to_character

from icae_tui.ui.settings import Problem, read_toml

APP_SCOPE = "app"
MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
KEY_NAMES = frozenset(
    {k.value.rpartition("+")[2] for k in Keys}
    | {"space", "enter", "tab", "escape", "backspace", "delete", "insert"}
    | {"home", "end", "pageup", "pagedown", "up", "down", "left", "right"}
    | {f"f{i}" for i in range(1, 25)}
)


@dataclass(frozen=True)
class KnownBinding:
    """A binding of the console, as declared: its id, scope and (normalised) key."""

    id: str
    scope: str
    key: str
    action: str
    description: str
    priority: bool


KNOWN: dict[str, list[KnownBinding]] = {}  # id → the bindings that have it, as declared


def slug(value: object) -> str:
    return re.sub(r"[^a-z0-9_-]+", "_", str(value).lower()).strip("_") or "_"


def action_id(scope: str, action: str) -> str:
    """`run` + `focus('#trace')` → `run.focus.trace`; `app.quit` in `tasks` → `tasks.quit`."""
    try:
        _namespace, name, args = parse(action)
    except ActionError:
        return f"{scope}.{slug(action)}"
    return ".".join([scope, name, *(slug(a) for a in args)])


def keyed(scope: str, bindings: Iterable[BindingType]) -> list[BindingType]:
    """`bindings` (a class's BINDINGS) with an id each, remembered for the keymap. A binding
    that has an id keeps it. Bindings of one action share its id, except a priority binding
    beside a plain one of the same action: it gets the key too (`run.cycle.human.ctrl_t`), so
    remapping the plain one never makes a key that is typed into a text box a priority key."""
    out: list[BindingType] = []
    priority_of: dict[str, bool] = {}
    for binding in Binding.make_bindings(bindings):
        binding_id = binding.id
        if binding_id is None:
            binding_id = action_id(scope, binding.action)
            if priority_of.setdefault(binding_id, binding.priority) != binding.priority:
                binding_id = f"{binding_id}.{slug(binding.key)}"
        known = KnownBinding(
            binding_id, scope, binding.key, binding.action, binding.description, binding.priority
        )
        entries = KNOWN.setdefault(binding_id, [])
        if known not in entries:
            entries.append(known)
        out.append(Binding(
            binding.key, binding.action, binding.description, show=binding.show,
            key_display=binding.key_display, priority=binding.priority,
            tooltip=binding.tooltip, id=binding_id, system=binding.system,
            group=binding.group,
        ))  # fmt: skip
    return out


def normalise_key(key: str) -> str | None:
    """Textual's name of `key` (`?` → `question_mark`), or None when it is no key."""
    key = key.strip()
    if not key or "," in key:
        return None
    *modifiers, last = key.split("+")
    if any(m.lower() not in MODIFIERS for m in modifiers) or not last:
        return None
    if len(last) == 1:
        return next(iter(Binding.make_bindings([Binding(key, "noop")]))).key
    if last in KEY_NAMES or key_to_character(last) is not None:
        return key
    return None


def flatten(table: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """`{"run": {"follow": "f"}}` → `{"run.follow": "f"}`."""
    out: dict[str, object] = {}
    for name, value in table.items():
        full = f"{prefix}{name}"
        if isinstance(value, dict):
            out |= flatten(value, full + ".")
        else:
            out[full] = value
    return out


def resolve(entry: str, known: Mapping[str, object]) -> list[str]:
    """The ids an entry names: itself, or its group's (`run.cycle` → `run.cycle.<mode>`)."""
    if entry in known:
        return [entry]
    return sorted(i for i in known if i.rpartition(".")[0] == entry)


def default_keys(binding_id: str) -> set[str]:
    return {b.key for b in KNOWN.get(binding_id, [])}


def describe(binding_id: str) -> str:
    descriptions = [b.description for b in KNOWN.get(binding_id, []) if b.description]
    return f"{binding_id} ({descriptions[0]})" if descriptions else binding_id


def parse_keys(value: object) -> tuple[list[str], str]:
    """A keymap value (a key, `"a,b"`, or a list of keys) → the keys, or what is wrong."""
    raw = [value] if isinstance(value, str) else value
    if not isinstance(raw, list) or not raw or not all(isinstance(k, str) for k in raw):
        return [], f"not a key or a list of keys: {value!r}"
    keys: list[str] = []
    for item in raw:
        for part in item.split(","):
            key = normalise_key(part)
            if key is None:
                return [], f"not a key: {part.strip()!r} (a comma is 'comma')"
            if key not in keys:
                keys.append(key)
    return keys, ""


def parse_keymap(path: Path, table: Mapping[str, object]) -> tuple[dict[str, str], list[Problem]]:
    keymap: dict[str, str] = {}
    problems: list[Problem] = []
    for entry, value in flatten(table).items():
        ids = resolve(entry, KNOWN)
        if not ids:
            close = difflib.get_close_matches(entry, list(KNOWN), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else " (? lists the ids)"
            problems.append(Problem(path, entry, f"no such action{hint}"))
            continue
        keys, wrong = parse_keys(value)
        if wrong:
            problems.append(Problem(path, entry, wrong))
            continue
        for binding_id in ids:
            keymap[binding_id] = ",".join(keys)
    problems += clashes(path, keymap)
    return keymap, problems


def clashes(path: Path, keymap: Mapping[str, str]) -> list[Problem]:
    """A remapped key that another action of the same scope still has. Textual applies the
    map anyway: the other action loses the key. (A screen's key over an app key is no clash:
    on that screen the screen's wins, as it does without a keymap.)"""
    final = {i: set(keymap[i].split(",")) if i in keymap else default_keys(i) for i in KNOWN}
    scope_of = {i: KNOWN[i][0].scope for i in KNOWN}
    problems: list[Problem] = []
    for binding_id, keys in keymap.items():
        for other, other_keys in final.items():
            if other == binding_id or scope_of[other] != scope_of[binding_id]:
                continue
            if other in keymap and default_keys(other) & default_keys(binding_id):
                continue  # a group remapped together (run.cycle.*): one key, as before
            for key in sorted(set(keys.split(",")) & other_keys):
                problems.append(Problem(
                    path, binding_id, f"key '{key}' is also {describe(other)}: "
                    f"it now runs {binding_id} only",
                ))  # fmt: skip
    return problems


def load_keymap(path: Path) -> tuple[dict[str, str], list[Problem]]:
    table, problems = read_toml(path)
    if table is None:
        return {}, problems
    return parse_keymap(path, table)
