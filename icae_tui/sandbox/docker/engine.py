"""Connecting to the Docker engine, with errors a person can act on."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiodocker

from icae_tui.errors import EngineUnavailable

LABEL_TOOL = "icae.tool"
TOOL_NAME = "icae-tui"


def engine_url() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


async def connect(timeout_s: float = 10.0, *, url: str | None = None) -> aiodocker.Docker:
    """A client of the engine at `url` (default: `engine_url()`) that has answered a ping,
    or EngineUnavailable naming where it looked."""
    url = url or engine_url()
    try:
        docker = aiodocker.Docker(url)
    except Exception as err:
        raise EngineUnavailable(f"Docker engine at {url}: {err}") from None
    try:
        async with asyncio.timeout(timeout_s):
            await docker.version()
    except Exception as err:
        await docker.close()
        raise EngineUnavailable(
            f"Docker engine at {url} is not answering ({type(err).__name__}: {err}). "
            "Start it with `scripts/engine.sh` (or `dockerd &`)."
        ) from None
    return docker


async def local_data_root(docker: aiodocker.Docker) -> Path | None:
    """The engine's data root when its overlay2 layers are readable on this host (a local
    engine on a Unix socket); None for a remote engine or another storage driver."""
    if not str(docker.docker_host).startswith("unix://"):
        return None
    info = await docker.system.info()
    root = Path(info.get("DockerRootDir", "/var/lib/docker"))
    if info.get("Driver") != "overlay2" or not os.access(root / "overlay2", os.R_OK):
        return None
    return root
