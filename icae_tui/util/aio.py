"""asyncio helpers the package shares."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def complete_despite_cancel(work: Awaitable[T]) -> T:
    """Await `work` to its end even if the caller is cancelled meanwhile (once or more);
    then the cancel goes on. For steps that must not be cut in half: a container the
    engine makes while its creator is cancelled would otherwise belong to nobody."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():  # the engine is doing it anyway: wait for its answer
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        raise
