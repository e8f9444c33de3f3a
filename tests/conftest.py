"""Shared fixtures. Tests marked `docker` need the real engine: when ICAE_REQUIRE_DOCKER=1
(the test command and CI set it) a missing engine is a failure, never a skip."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from icae_tui.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_TASKS = ROOT / "tests" / "fixtures" / "tasks"
BUNDLED_TASKS = ROOT / "tasks"

_engine_state: dict[str, str | None] = {}


def _engine_problem() -> str | None:
    if "problem" not in _engine_state:
        from icae_tui.sandbox.docker.engine import EngineUnavailable, connect

        async def probe() -> str | None:
            try:
                docker = await connect(timeout_s=5)
            except EngineUnavailable as err:
                return str(err)
            await docker.close()
            return None

        _engine_state["problem"] = asyncio.run(probe())
    return _engine_state["problem"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is None:
        return
    problem = _engine_problem()
    if problem is None:
        return
    if os.environ.get("ICAE_REQUIRE_DOCKER") == "1":
        pytest.fail(f"Docker is required (ICAE_REQUIRE_DOCKER=1) but unavailable: {problem}")
    pytest.skip(f"no Docker engine: {problem}")


@pytest.fixture(scope="session")
def fixture_catalog():
    return load_catalog(FIXTURE_TASKS)


@pytest.fixture(scope="session")
def bundled_catalog():
    return load_catalog(BUNDLED_TASKS)


@pytest.fixture
def store(tmp_path):
    from icae_tui.store import RunStore

    s = RunStore(tmp_path / "runs.db")
    yield s
    s.close()
