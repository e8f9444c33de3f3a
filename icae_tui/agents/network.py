"""What an agent's prompt says of the network: none, but the run's package registry when the
run has a package gateway (its settings are in the commands' environment)."""

from __future__ import annotations

from collections.abc import Mapping

NO_NETWORK = "There is no network, and nothing can be installed: use what is there."
PACKAGES = (
    "There is no network but the run's package registry: `pip install` and `npm install` "
    "work as usual through it (a package the task does not allow is refused with a message). "
    "Declare what you install (requirements.txt, package.json with its lockfile): the build "
    "is checked later without network, installing only what this run downloaded."
)


def network_note(env: Mapping[str, str]) -> str:
    return PACKAGES if "PIP_INDEX_URL" in env or "npm_config_registry" in env else NO_NETWORK
