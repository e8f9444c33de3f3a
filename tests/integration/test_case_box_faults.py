"""A delivery's case that kills its own box, fills its disk, or leaves a fork bomb behind,
on the real engine: each gets its own verdict, the same on every run, and the host keeps
its disk.

The oracle's tool prints `ok`; the delivery's misbehaves as its first argument says.
"""

from __future__ import annotations

from collections import Counter

import pytest

from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.domain.task import Case, Task
from icae_tui.evaluation.differential import Evaluator, Sides
from icae_tui.sandbox.docker import containers
from icae_tui.sandbox.docker.backend import DockerSandbox
from icae_tui.sandbox.docker.disk import DiskGuard, layer_size, quota_group_bytes
from icae_tui.sandbox.docker.pool import SidePool
from icae_tui.sandbox.docker.proof import Box
from tests.integration.tool_images import ToolImages, command_task

pytestmark = pytest.mark.docker

MiB = 2**20

ORACLE_TOOL = """#!/bin/bash
echo ok
"""

# `fill MiB`: files of MiB each (the box's file-size limit allows them) until 40 were
# written or one was refused. `falloc`: the 8 × 256 MB, each cut at the box's
# file-size limit (fallocate first, else writing zeros).
DELIVERY_TOOL = r"""#!/bin/bash
case "$1" in
  suicide) echo before; kill -9 -1 ;;
  detached) f() { f | f & }; f & ;;
  fill) for i in $(seq 40); do head -c "$2"M /dev/zero > /tmp/f$i 2>/dev/null || break; done ;;
  falloc) for i in $(seq 8); do
            fallocate -l 256M /tmp/g$i 2>/dev/null || head -c 256M /dev/zero > /tmp/g$i
          done 2>/dev/null ;;
esac
echo ok
"""


IMAGES = ToolImages("box-faults", ORACLE_TOOL, DELIVERY_TOOL)


def _task(commands: list[str], *, disk_mb: int = 1024) -> Task:
    task = command_task("box-faults", [Case(command=c, pattern=c) for c in commands], timeout_s=30)
    cases = task.spec.cases.model_copy(update={"disk_mb": disk_mb})
    return task.model_copy(update={"spec": task.spec.model_copy(update={"cases": cases})})


class LayerMeter:
    """Wraps a pool's `release`: the most any delivery box's layer took, measured on the host
    (as the quota counts it, and by its allocated blocks) before the box goes."""

    def __init__(self, pool: SidePool) -> None:
        self.most = 0
        self._release = pool.release
        pool.release = self._measured  # type: ignore[method-assign]

    async def _measured(self, box: Box, **kw: object) -> bool:
        if box.view is not None:
            counted = quota_group_bytes(box.view.upper.parent) or 0
            self.most = max(self.most, counted, layer_size(box.view.upper).bytes)
        return await self._release(box, **kw)  # type: ignore[arg-type]


async def _evaluate(task: Task, sides: Sides, run_id: str) -> tuple[dict[str, CaseResult], int]:
    sandbox = await DockerSandbox.open()
    try:
        async with Evaluator(sandbox, task, sides, run_id=run_id, concurrency=2) as ev:
            meter = LayerMeter(ev.delivery)
            results = {r.case_id: r async for r in ev.run_cases(task.cases)}
    finally:
        await sandbox.close()
    by_command = {ref.case.command or "": results[ref.id] for ref in task.cases}
    return by_command, meter.most


async def test_a_case_that_kills_its_own_box_is_told_so(images):
    task = _task(["tool suicide 1", "tool ok1", "tool suicide 2", "tool ok2"])
    results, _ = await _evaluate(task, images, "test-box-suicide")
    for r in (results[ref.case.command] for ref in task.cases if "suicide" in ref.case.command):
        assert r.verdict == Verdict.RUNTIME_ERROR, r.reason
        assert r.reason.startswith("killed its own box"), r.reason
        assert r.delivery is not None and r.delivery.box_died
        assert r.delivery.stdout.startswith("before\n")  # what it wrote is kept
    for command in ("tool ok1", "tool ok2"):
        assert results[command].verdict == Verdict.ACCEPTED, results[command].reason


async def test_a_case_past_its_disk_limit_gets_its_verdict_and_the_host_keeps_its_disk(images):
    """A 256 MiB disk (file-size limit 32 MiB): 40 files of 32 MiB are refused past it; the
    issue's 8 × 256 MB are cut to 32 MiB each and refused the same way."""
    task = _task(["tool fill 32", "tool falloc", "tool ok", "tool fill 1"], disk_mb=256)
    results, most = await _evaluate(task, images, "test-box-disk")
    for command in ("tool fill 32", "tool falloc"):
        r = results[command]
        assert r.verdict == Verdict.DISK_LIMIT, (command, r.verdict, r.reason)
        assert "256 MiB" in r.reason and r.delivery is not None and r.delivery.disk_full
    assert results["tool ok"].verdict == Verdict.ACCEPTED
    # 40 files of 1 MiB fill nothing: judged on their side effects, not on the disk
    assert results["tool fill 1"].verdict == Verdict.SIDE_EFFECTS, results["tool fill 1"].reason
    assert 200 * MiB < most <= 256 * MiB  # the kernel's bound: at most the limit


async def test_without_a_quota_the_host_stops_a_box_that_fills_its_disk(images, monkeypatch):
    """The watch guard (an engine whose file system takes no quota): the host sums the
    layer while the case writes and stops the case once its box is full."""
    monkeypatch.setattr(containers, "_guards", {})

    async def watch_only(docker: object) -> DiskGuard:
        return DiskGuard.WATCH

    monkeypatch.setattr(containers, "disk_guard", watch_only)
    task = _task(["tool fill 32", "tool ok"], disk_mb=256)
    results, most = await _evaluate(task, images, "test-box-disk-watch")
    fill = results["tool fill 32"]
    assert fill.verdict == Verdict.DISK_LIMIT, (fill.verdict, fill.reason)
    assert results["tool ok"].verdict == Verdict.ACCEPTED
    # stopped within a few files of its limit, far from the 1,280 MiB it meant to write
    assert 200 * MiB < most < 512 * MiB


async def test_a_detached_fork_bomb_gets_the_same_verdict_on_ten_runs(images):
    task = _task([f"tool detached {i}" for i in range(9)])
    seen: Counter[tuple[str, str]] = Counter()
    for attempt in range(10):
        results, _ = await _evaluate(task, images, f"test-box-bomb-{attempt}")
        seen.update((r.verdict.value, r.reason) for r in results.values())
    reason = "left processes running after its command ended"
    assert seen == Counter({("runtime_error", reason): 90})
