"""Sandbox backends by name, the way inspect_ai registers its sandbox environments.

A backend registers a factory under a name (`docker` is built in); an operator picks one
with `--engine NAME`, where NAME is a backend, or an entry of the user's engines file
(`~/.config/icae-tui/engines.toml`):

    [engines.lab]            # --engine lab
    backend = "docker"
    host = "ssh://me@lab"    # the backend's own options

A backend marked unsafe (one that runs commands without isolation, for the unit tests) is
refused unless ICAE_ALLOW_UNSAFE_BACKEND=1, which only the tests set. Installed packages
bring backends through the entry point group `icae_tui.backends` (util/plugins.py).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icae_tui.errors import ConfigError
from icae_tui.sandbox.base import Sandbox
from icae_tui.util.documents import TooDeep, load_toml
from icae_tui.util.plugins import load_plugins

Factory = Callable[[dict[str, Any]], Awaitable[Sandbox]]
UNSAFE_VAR = "ICAE_ALLOW_UNSAFE_BACKEND"
DEFAULT_ENGINE = "docker"
BACKEND_PLUGINS = "icae_tui.backends"  # entry points: a callable that registers


@dataclass(frozen=True)
class Backend:
    name: str
    factory: Factory
    unsafe: bool = False  # no isolation: tests only
    summary: str = ""


_BACKENDS: dict[str, Backend] = {}


def register_backend(name: str, factory: Factory, *, unsafe: bool = False, summary: str = "") -> None:
    _BACKENDS[name] = Backend(name, factory, unsafe, summary)


def unregister_backend(name: str) -> None:
    _BACKENDS.pop(name, None)


def backends() -> dict[str, Backend]:
    """Every backend: the built-in ones, then those of installed plug-ins."""
    _load_builtins()
    load_plugins(BACKEND_PLUGINS)
    return dict(_BACKENDS)


def _load_builtins() -> None:
    if DEFAULT_ENGINE not in _BACKENDS:
        from icae_tui.sandbox.docker.backend import open_docker
        from icae_tui.sandbox.processes import open_processes

        register_backend(DEFAULT_ENGINE, open_docker, summary="a Docker engine (local or remote)")
        register_backend(
            "processes", open_processes, unsafe=True,
            summary="host processes over temporary folders, no isolation (tests only)",
        )  # fmt: skip


def engines_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "icae-tui" / "engines.toml"


def engine_entries(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The engines file's entries (none when there is no file); ConfigError naming the file
    and line when it does not parse or an entry is not a table with a `backend`."""
    path = path or engines_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        data = load_toml(text)
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    entries = data.get("engines", {})
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: [engines] must be a table of engines")
    out: dict[str, dict[str, Any]] = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("backend"), str):
            raise ConfigError(f"{path}: engines.{name}: needs backend = \"<name>\"")
        out[name] = dict(entry)
    return out


def resolve(name: str, entries: Mapping[str, dict[str, Any]] | None = None) -> tuple[Backend, dict[str, Any]]:
    """The backend and its options for `--engine name`."""
    known = backends()
    entries = engine_entries() if entries is None else entries
    options: dict[str, Any] = {}
    backend_name = name
    if name in entries:
        options = {k: v for k, v in entries[name].items() if k != "backend"}
        backend_name = entries[name]["backend"]
    backend = known.get(backend_name)
    if backend is None:
        names = ", ".join(sorted({*known, *entries})) or "none"
        raise ConfigError(f"engine {name!r}: no such backend or engines entry (known: {names})")
    if backend.unsafe and os.environ.get(UNSAFE_VAR) != "1":
        raise ConfigError(
            f"engine {name!r}: the {backend.name} backend runs commands without isolation; "
            f"it is for the tests only ({UNSAFE_VAR}=1)"
        )
    return backend, options


async def open_sandbox(name: str = DEFAULT_ENGINE) -> Sandbox:
    """The engine `name` names, connected (EngineUnavailable when it does not answer)."""
    backend, options = resolve(name)
    return await backend.factory(options)
