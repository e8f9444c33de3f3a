"""Waiting on a condition in async tests without blocking the event loop.

(In a Textual Pilot test use `tests.ui.helpers.until`, which lets the app run between tries.)
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


async def eventually(
    probe: Callable[[], T | Awaitable[T]],
    *,
    what: str,
    timeout: float = 10.0,
    interval: float = 0.05,
) -> T:
    """Call `probe` (sync or async) until it returns something truthy, and return that.
    Between tries the loop runs (`asyncio.sleep(interval)`); after `timeout` seconds the test
    fails, saying it was waiting for `what`. A probe that raises fails at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if loop.time() >= deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(interval)
