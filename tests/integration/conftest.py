"""The engine tests' fixtures: `images`, the requesting module's tool images (its `IMAGES`, a
tests.integration.tool_images.ToolImages), built once per module and removed after it; `docker`, a connection to
the engine with the base image built."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import ensure_base_image
from tests.integration.tool_images import ToolImages, build_tool_images, remove_tool_images


@pytest.fixture(scope="module")
def images(request: pytest.FixtureRequest) -> Iterator[Sides]:
    declared: ToolImages = request.module.IMAGES
    sides = asyncio.run(build_tool_images(declared.tag, declared.files()))
    yield sides
    asyncio.run(remove_tool_images(sides))


@pytest.fixture
async def docker():
    d = await connect()
    await ensure_base_image(d)
    yield d
    await d.close()
