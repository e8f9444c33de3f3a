"""Waiting on a condition in async tests without blocking the event loop, and sleeps that
are recorded instead of waited (no test waits on a clock).

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


class Sleeps:
    """An injected sleep (`sleep=Sleeps()`): each wait is recorded in `waits` (rounded to
    `digits` places, if given) instead of waited. It returns after one turn of the loop or,
    `gated`, once the test calls `open()`."""

    def __init__(self, *, digits: int | None = None, gated: bool = False) -> None:
        self.waits: list[float] = []
        self.digits = digits
        self.gated = gated
        self._open = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds if self.digits is None else round(seconds, self.digits))
        if self.gated:
            await self._open.wait()
        else:
            await asyncio.sleep(0)

    def open(self) -> None:
        """Let the waits under way end; later ones wait again."""
        opened, self._open = self._open, asyncio.Event()
        opened.set()
