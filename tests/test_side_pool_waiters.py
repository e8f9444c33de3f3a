"""The case pool's bookkeeping (no engine: making a box and judging it clean are stand-ins
here; tests/integration cover them on Docker): a clean box released while a take() waits
reaches that waiter. It used to go to the clean list, which the refill counts as supply,
so a waiter could hang with every box idle (seen: `icae tasks check` stuck in CI)."""

from __future__ import annotations

import asyncio
from typing import Any

from icae_tui.sandbox.base import Role
from icae_tui.sandbox.docker.pool import SidePool
from icae_tui.sandbox.docker.proof import Box


class Pool(SidePool):
    """Boxes made one at a time, each when `make` is set; every box released clean."""

    def __init__(self) -> None:
        super().__init__(None, "image", run_id="r", role=Role.ORACLE, size=1, fast=False)  # type: ignore[arg-type]
        self.make = asyncio.Event()
        self.made = 0

    async def _new_box(self) -> Box:
        await self.make.wait()
        self.make.clear()
        self.made += 1
        return Box(container=f"box{self.made}", view=None)  # type: ignore[arg-type]

    async def _untouched(self, box: Box, *args: Any) -> bool:
        return True


async def _until(condition) -> None:
    while not condition():
        await asyncio.sleep(0)


async def test_a_clean_box_released_while_two_takes_wait_reaches_the_second():
    pool = Pool()
    first = asyncio.ensure_future(pool.take())
    await _until(lambda: pool._waiting == 1)
    pool.make.set()
    a = await first  # box1; the refill after it starts box2
    waiters = [asyncio.ensure_future(pool.take()) for _ in range(2)]
    await _until(lambda: pool._waiting == 2)
    pool.make.set()  # box2 reaches one waiter (each waiter had a box started for it)
    await _until(lambda: sum(w.done() for w in waiters) == 1)
    await pool.release(a, after=None, result=None)  # type: ignore[arg-type]
    got = await asyncio.wait_for(asyncio.gather(*waiters), timeout=60)
    assert sorted(b.container for b in got) == ["box1", "box2"]  # type: ignore[comparison-overlap]
    assert pool.stats.reused == 1 and pool._clean == []
    await pool.close()  # the third box, never made: cancelled
