"""What a registry client says is installed in an image, as pinned names: how an imported
oracle's resolved dependency set is recorded (`[oracle] locked`) and checked again when its
image is rebuilt. Pure parsing; the caller runs the argv in a box of the image."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

PIP_LIST = ["python3", "-m", "pip", "list", "--format=json", "--disable-pip-version-check",
            "--exclude-editable"]  # fmt: skip
NPM_LIST = ["npm", "ls", "--global", "--all", "--json"]
_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$")
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+!_-]*$")


class UnreadableList(ValueError):
    """The client's listing could not be read."""


def list_argv(kind: str) -> list[str]:
    return PIP_LIST if kind == "pip" else NPM_LIST


def pinned(kind: str, output: bytes) -> set[str]:
    """`pip:NAME==V` / `npm:NAME@V` for each package the listing names."""
    try:
        data = json.loads(output or b"null")
    except (ValueError, RecursionError) as err:
        raise UnreadableList(f"{' '.join(list_argv(kind))}: not JSON: {err}") from None
    pairs = _pip_pairs(data) if kind == "pip" else _npm_pairs(data)
    found = set()
    for name, version in pairs:
        if not (isinstance(name, str) and isinstance(version, str)
                and _NAME.match(name) and _VERSION.match(version)):  # fmt: skip
            continue  # nothing a pin could name (a link, a local folder)
        found.add(f"pip:{name}=={version}" if kind == "pip" else f"npm:{name}@{version}")
    return found


def _pip_pairs(data: object) -> Iterable[tuple[object, object]]:
    if not isinstance(data, list):
        raise UnreadableList("pip list: not a list")
    return [(d.get("name"), d.get("version")) for d in data if isinstance(d, dict)]


def _npm_pairs(data: object) -> Iterable[tuple[object, object]]:
    if not isinstance(data, dict):
        raise UnreadableList("npm ls: not an object")
    pairs: list[tuple[object, object]] = []
    stack = [data.get("dependencies")]
    while stack and len(pairs) < 100_000:
        deps = stack.pop()
        if not isinstance(deps, dict):
            continue
        for name, info in deps.items():
            if isinstance(info, dict):
                pairs.append((name, info.get("version")))
                stack.append(info.get("dependencies"))
    return pairs


def locked_set(kind: str, before: bytes, after: bytes) -> list[str]:
    """What an install added: listed after it and not before, sorted."""
    return sorted(pinned(kind, after) - pinned(kind, before))


def difference(locked: Iterable[str], before: set[str], after: set[str]) -> str:
    """How an install differs from its lock, for a reader ("" when it does not): a locked
    package not there after it, or one it added that is not locked."""
    want = set(locked)
    missing, extra = sorted(want - after), sorted((after - before) - want)
    parts = []
    for what, names in (("not installed", missing), ("not locked", extra)):
        if names:
            parts.append(f"{what}: {', '.join(names[:5])}" + (" …" if len(names) > 5 else ""))
    return "; ".join(parts)
