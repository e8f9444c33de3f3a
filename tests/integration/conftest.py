"""The engine tests' fixtures: `images`, the requesting module's tool images (its `IMAGES`, a
tests.integration.tool_images.ToolImages), built once per module."""

from __future__ import annotations

import asyncio

import pytest

from icae_tui.evaluation.differential import Sides
from tests.integration.tool_images import ToolImages, build_tool_images


@pytest.fixture(scope="module")
def images(request: pytest.FixtureRequest) -> Sides:
    declared: ToolImages = request.module.IMAGES
    return asyncio.run(build_tool_images(declared.tag, declared.files()))
