"""The run's package gateway: PyPI and npm for a box with no network (see `server`)."""

from icae_tui.domain.states import PackageMode
from icae_tui.packages.cache import PackageCache, default_cache_dir
from icae_tui.packages.names import Policy
from icae_tui.packages.registries import Registries
from icae_tui.packages.server import (
    BOX_PORT,
    MANIFEST_FILE,
    PackageGateway,
    box_env,
    load_manifest,
    serving,
)

__all__ = [
    "BOX_PORT",
    "MANIFEST_FILE",
    "PackageCache",
    "PackageGateway",
    "PackageMode",
    "Policy",
    "Registries",
    "box_env",
    "default_cache_dir",
    "load_manifest",
    "serving",
]
