"""Every registered sandbox backend (`icae_tui.sandbox.registry`), opened as a run opens it:
`docker` on the real engine (marked `docker`), `processes` where it can run here (it needs
root for its mounts, util-linux `unshare` and `nsenter`, and an overlayfs kernel:
icae_tui/sandbox/processes.py), any other backend as it is registered. A backend whose
documented requirement is missing is skipped with that reason, never faked."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from icae_tui.sandbox import registry
from icae_tui.sandbox.base import Sandbox


def _processes_missing() -> str | None:
    if os.geteuid() != 0:
        return "the processes backend mounts: it needs root"
    missing = [tool for tool in ("unshare", "nsenter") if shutil.which(tool) is None]
    if missing:
        return f"the processes backend needs util-linux {' and '.join(missing)}"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the processes backend needs an overlayfs kernel"
    return None


def _param(name: str) -> object:
    if name == registry.DEFAULT_ENGINE:
        return pytest.param(name, marks=pytest.mark.docker, id=name)
    if name == "processes" and (why := _processes_missing()) is not None:
        return pytest.param(name, marks=pytest.mark.skip(reason=why), id=name)
    return pytest.param(name, id=name)


BACKENDS = [_param(name) for name in sorted(registry.backends())]


@pytest.fixture(params=BACKENDS)
async def sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                  tmp_path: Path) -> AsyncIterator[Sandbox]:  # fmt: skip
    name: str = request.param
    if registry.backends()[name].unsafe:  # the tests' own permission (registry.UNSAFE_VAR)
        monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no engines file
    opened = await registry.open_sandbox(name)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def image(sandbox: Sandbox) -> str:
    """The backend's base image: every backend has one (docker: icae-base:bookworm)."""
    return await sandbox.base_image()


@pytest.fixture
def run_id() -> str:
    return f"t-contract-{uuid.uuid4().hex[:8]}"


Leftovers = Callable[[Sandbox, str], Awaitable[list[str]]]


async def _docker_leftovers(sandbox: Sandbox, run_id: str) -> list[str]:
    docker = sandbox.docker  # type: ignore[attr-defined]
    found = await docker.containers.list(all=True, filters={"label": [f"icae.run={run_id}"]})
    return [c.id for c in found]


async def _processes_leftovers(sandbox: Sandbox, run_id: str) -> list[str]:
    boxes = sandbox.root / "boxes"  # type: ignore[attr-defined]
    return sorted(p.name for p in boxes.iterdir() if p.name.startswith(f"{run_id}-"))


async def _registered_leftovers(sandbox: Sandbox, run_id: str) -> list[str]:
    return await sandbox.remove_run_boxes(run_id)


LEFTOVERS: dict[str, Leftovers] = {"docker": _docker_leftovers, "processes": _processes_leftovers}


@pytest.fixture
def leftovers(sandbox: Sandbox) -> Leftovers:
    """What is left of a run's boxes, seen the backend's own way (the engine's containers by
    label, the processes backend's box folders); another backend: what it would remove."""
    return LEFTOVERS.get(sandbox.name, _registered_leftovers)
