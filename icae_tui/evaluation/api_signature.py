"""Whether the golden API signature is honoured — a static check, and only that.

The signature (`golden_api_signature` of the level's user-agent record) is read for the
items it names, each looked for in the delivery's source text (never run):

| item | read from the signature | honoured when |
| --- | --- | --- |
| file | a path under the workspace (`/workspace/semver.py`) | the delivery has that file |
| function | `def f(`, `function f(`, `func f(`, `fn f(`, or a bare annotated `f(a: str) -> str` | a source defines `f` that way, or binds `f = function / lambda / (…) =>` |
| class | `class C` | a source has `class C` (or `struct` / `interface` / `type` C) |
| command | the choices of the first `<a\\|b\\|c>` after the tool's name | a source holds `"a"` (or `'a'`, `` `a` ``) as a literal, or `a:` as an object key (`{ a: run }`) |
| option | `--flag`, and `-n` standing alone | a source holds the flag (`--flag` not inside a longer word) |

So "honoured" means the names are there — not that they take the arguments the signature
gives or behave as it says; the cases judge behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from icae_tui.domain.diagnostics import SignatureCheck, SignatureItem

ItemKind = Literal["file", "function", "class", "command", "option"]

_PATH = re.compile(r"(?<![\w.-])(/[\w.+-]+(?:/[\w.+-]+)*\.[A-Za-z0-9]+)")
_FUNC = re.compile(r"\b(?:def|function|func|fn)\s+([A-Za-z_$][\w$]*)\s*\(")
# A bare signature as ICAE writes one, `handle_operation(operation: str, payload: dict) -> str`
# (TypeScript's `f(a: number): string` too), its parameters possibly over several lines:
# annotated — a `name: type` parameter or a return type — so prose's `see f(x)` is no item.
# A qualifier (`Store.get(…)`) is skipped: the method is looked for as a function.
_BARE = re.compile(
    r"(?<![\w$.])(?:[A-Za-z_$][\w$]*\.)*([A-Za-z_$][\w$]*)\(([^()]*)\)"
    r"([ \t]*(?:->|:)[ \t]*[\w\[{<'\"])?"
)
# a parameter that starts `name: type` (`*args: int`, TypeScript's `opt?: string`), not a
# literal's `{a: 1}` or `"a: b"` in a call shown as an example
_ANNOTATED = re.compile(r"^\s*\*{0,2}[A-Za-z_$][\w$]*\??\s*:\s*[\w\[{<'\"]")
_CLASS = re.compile(r"\bclass\s+([A-Za-z_$][\w$]*)")
_CHOICES = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*)\s+<([\w-]+(?:\|[\w-]+)+)>")
_LONG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")
_SHORT = re.compile(r"(?<![\w-])(-[A-Za-z])(?![\w-])")


def items_of(signature: str, workspace: str) -> list[tuple[ItemKind, str]]:
    """(kind, name) of each item the signature names, in order, without repeats."""
    found: list[tuple[ItemKind, str]] = []

    def add(kind: ItemKind, name: str) -> None:
        if (kind, name) not in found:
            found.append((kind, name))

    prefix = workspace.rstrip("/") + "/"
    for path in _PATH.findall(signature):
        if path.startswith(prefix):
            add("file", path[len(prefix) :])
    for name in _FUNC.findall(signature):
        add("function", name)
    for bare in _BARE.finditer(signature):
        params = bare.group(2).split(",")
        if bare.group(3) or any(_ANNOTATED.match(p) for p in params):
            add("function", bare.group(1))
    for name in _CLASS.findall(signature):
        add("class", name)
    if choices := _CHOICES.search(signature):
        for name in choices.group(2).split("|"):
            add("command", name)
    for flag in _LONG.findall(signature):
        add("option", flag)
    for flag in _SHORT.findall(signature):
        add("option", flag)
    return found


def _pattern(kind: str, name: str) -> re.Pattern[str]:
    n = re.escape(name)
    if kind == "function":
        return re.compile(
            rf"\b(?:def|function|func|fn)\s+{n}\s*[(<]"
            rf"|(?<![\w$.]){n}\s*[:=]\s*(?:async\s+)?(?:function\b|lambda\b|\([^)]*\)\s*=>)"
        )
    if kind == "class":
        return re.compile(rf"\b(?:class|struct|interface|type)\s+{n}\b")
    if kind == "command":
        return re.compile(rf"([\"'`]){n}\1|[{{,]\s*{n}\s*:(?!:)")
    return re.compile(rf"(?<![\w-]){n}(?![\w-])")  # an option


def check_signature(
    signature: str, files: set[str], sources: Mapping[str, str], *, workspace: str
) -> SignatureCheck:
    """`files`: the delivery's file paths (relative to the workspace); `sources`: the text
    of its source files, by the same paths."""
    out = SignatureCheck(signature=signature)
    for kind, name in items_of(signature, workspace):
        if kind == "file":
            found, where = name in files, name if name in files else ""
        else:
            pattern = _pattern(kind, name)
            where = next((p for p, text in sorted(sources.items()) if pattern.search(text)), "")
            found = bool(where)
        out.items.append(SignatureItem(kind=kind, name=name, found=found, where=where))
    return out
