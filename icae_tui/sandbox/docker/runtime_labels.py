"""Which runtime versions the engine's runtime images hold, read from their labels.

A runtime image (images.py `ensure_runtime_image`) keeps its probe's version in
`icae.runtime.version` and what it holds in `icae.runtime.key` (domain/runtimes.image_key):
a listing states a task's language version by matching its card's key against them, one
engine call for a whole catalog, nothing built.
"""

from __future__ import annotations

import aiodocker

from icae_tui.errors import EngineUnavailable
from icae_tui.sandbox.docker.engine import connect

LABEL_RUNTIME_VERSION = "icae.runtime.version"
LABEL_RUNTIME_KEY = "icae.runtime.key"
# A listing waits this long for the engine before it says the versions are unknown.
LISTING_TIMEOUT_S = 3.0


async def runtime_version(docker: aiodocker.Docker, image: str) -> str:
    """The runtime version a runtime image's probe printed when it was built ("" if none)."""
    labels = (await docker.images.inspect(image))["Config"].get("Labels") or {}
    return str(labels.get(LABEL_RUNTIME_VERSION, ""))


async def built_runtimes(docker: aiodocker.Docker) -> dict[str, str]:
    """Every runtime image on the engine: its key → the version its probe printed; of two
    with one key (a base rebuilt since), the newer."""
    found: dict[str, tuple[int, str]] = {}
    for image in await docker.images.list(filters={"label": [LABEL_RUNTIME_KEY]}):
        labels = image.get("Labels") or {}
        key, created = str(labels.get(LABEL_RUNTIME_KEY, "")), int(image.get("Created", 0))
        if key and created >= found.get(key, (-1, ""))[0]:
            found[key] = (created, str(labels.get(LABEL_RUNTIME_VERSION, "")))
    return {key: version for key, (_, version) in found.items()}


async def engine_runtimes(timeout_s: float = LISTING_TIMEOUT_S) -> dict[str, str] | None:
    """`built_runtimes` of the local engine (DOCKER_HOST), or None when it does not answer."""
    try:
        docker = await connect(timeout_s=timeout_s)
    except EngineUnavailable:
        return None
    try:
        return await built_runtimes(docker)
    except aiodocker.DockerError:
        return None
    finally:
        await docker.close()
