"""Where local models live: `$ICAE_MODELS_DIR`, else the data folder's `models/`
(`$XDG_DATA_HOME/icae-tui/models`, `~/.local/share/icae-tui/models`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from icae_tui.local_models.catalog import LocalModel

SERVER_BINARY_ENV = "ICAE_LLAMA_SERVER"  # a llama-server (or compatible) program to use instead


def models_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if given := env.get("ICAE_MODELS_DIR"):
        return Path(given)
    xdg = env.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "icae-tui" / "models"


def model_file(model: LocalModel, environ: Mapping[str, str] | None = None) -> Path:
    return models_dir(environ) / model.file_name


def server_venv(environ: Mapping[str, str] | None = None) -> Path:
    return models_dir(environ) / "server"


def server_manifest(environ: Mapping[str, str] | None = None) -> Path:
    """What `icae models install` wrote after building the server: its binary and version."""
    return models_dir(environ) / "server.json"


def running_file(model: LocalModel, environ: Mapping[str, str] | None = None) -> Path:
    return models_dir(environ) / "running" / f"{model.name}.json"


def log_file(model: LocalModel, environ: Mapping[str, str] | None = None) -> Path:
    return models_dir(environ) / "logs" / f"{model.name}.log"
