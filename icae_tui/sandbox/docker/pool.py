"""One side of the differential (oracle or delivery): a pool of ready containers.

Every case gets a fresh state, the whole container, never one folder. Creating one costs
~0.3 s here, so the pool pre-starts containers in the background, and a container that is
*provably untouched* after a case (`proof.py` says when) serves the next one; anything else
is discarded (removal kills whatever still runs) and replaced from the pool. A case runs in
its box through `cases.py`.

Remote engines have no host view. There our own static tool looks from inside the box
(`sandbox/docker/inbox.py`): it stops what the case left, walks the root and reports the
box's processes and counters; the work directory is a tmpfs it empties, and a box it
proves untouched serves the next case, as with a local engine. Where that tool cannot
serve (no static build here, an engine of another architecture) each case takes a new
container and side effects come from the engine's `/changes` plus a manifest made by the
image's `python3` (`manifest.py`) — slower, and the last resort.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiodocker

from icae_tui.domain.outcome import SideOutcome
from icae_tui.errors import BoxError
from icae_tui.sandbox.base import CaseCall, ExecResult, Limits, Role
from icae_tui.sandbox.docker.cases import run_case
from icae_tui.sandbox.docker.containers import Container, create_container
from icae_tui.sandbox.docker.engine import local_data_root
from icae_tui.sandbox.docker.hostview import HostView, exe_identity, process_parent
from icae_tui.sandbox.docker.inbox import Inside, Look, baseline, tools_volume
from icae_tui.sandbox.docker.keepalive import host_keepalive
from icae_tui.sandbox.docker.manifest import fallback_snapshot
from icae_tui.sandbox.docker.proof import (
    Box,
    take_baseline,
    why_dirty_in_box,
    why_dirty_on_host,
)
from icae_tui.sandbox.docker.supervisor import Supervisor, SupervisorLost, binary_identity
from icae_tui.sandbox.effects import Entry

log = logging.getLogger(__name__)

CASE_LIMITS = Limits(ttl_s=1800)
WORKDIR_TMPFS = "rw,exec,nosuid,nodev,size=256m,mode=755"


def _binary_identities(folder: Path) -> tuple[tuple[int, int], tuple[int, int]]:
    init, busybox = os.stat(folder / "init"), os.stat(folder / "busybox")
    return (init.st_dev, init.st_ino), (busybox.st_dev, busybox.st_ino)


async def _keepalive_procs(
    view: HostView, init_pid: int, keepalive: Path | None, *, wait_s: float = 5.0
) -> tuple[set[int], bool]:
    """The container's own processes — its init and the keepalive it starts — once the
    keepalive runs (taken too early, every case would look dirty), and whether they are
    provably ours: both run our host binaries (by exe device and inode, not by name) and
    the keepalive is the init's child. Without `keepalive` they are told by count only."""
    expected = _binary_identities(keepalive) if keepalive is not None else None
    deadline = time.monotonic() + wait_s
    while True:
        procs = view.procs() or set()
        others = procs - {init_pid}
        if len(procs) == 2 and init_pid in procs:
            (child,) = others
            if expected is None:
                return procs, False
            if (
                exe_identity(init_pid) == expected[0]
                and exe_identity(child) == expected[1]
                and process_parent(child) == init_pid
            ):
                return procs, True
        if time.monotonic() > deadline:
            return procs, False  # odd, but then the box is simply never reused
        await asyncio.sleep(0.005)


async def _with_supervisor(box: Box, view: HostView, keepalive: Path, procs: set[int]) -> set[int]:
    """The box's own processes with our supervisor started among them, when the keepalive
    folder holds one; a supervisor that fails to start is told to end (the box then runs
    its cases by exec), and a box where it will not end is not used at all."""
    identity = binary_identity(keepalive)
    if identity is None:
        return procs
    try:
        supervisor = await Supervisor.start(box.container, view, identity, procs)
    except SupervisorLost as err:
        log.info("box %s: no supervisor (%s)", box.container.id[:12], err)
        deadline = time.monotonic() + 5.0
        while (view.procs() or set()) - procs:  # it ends at the end of its closed channel
            if time.monotonic() > deadline:
                raise BoxError(f"a failed supervisor would not end in {box.container.id[:12]}") from err
            await asyncio.sleep(0.005)
        return procs
    box.supervisor = supervisor
    box.container.on_remove.append(supervisor.close)
    return procs | {supervisor.host_pid}


async def engine_is_local(docker: aiodocker.Docker) -> bool:
    """Layers readable here: a Unix-socket engine with overlay2 under a readable root."""
    return await local_data_root(docker) is not None


# The first baseline each image had on each engine (its files all hashed, ~1 s for a few
# hundred MB): a later box of that image whose walk adds up to the same tree takes it.
_twins: dict[tuple[str, str], Inside] = {}
_twin_locks: dict[tuple[tuple[str, str], int], asyncio.Lock] = {}  # per event loop


MAKE_AT_ONCE = 2  # boxes a pool makes at once (see SidePool._make_gate)


@dataclass
class SideStats:
    created: int = 0
    reused: int = 0
    discarded: int = 0
    supervised: int = 0  # cases run by a box's supervisor (the rest: by an engine exec)
    supervisor_lost: int = 0  # cases its supervisor failed, run again by exec
    dirty_reasons: dict[str, int] = field(default_factory=dict)


class SidePool:
    def __init__(
        self,
        docker: aiodocker.Docker,
        image: str,
        *,
        run_id: str,
        role: Role,
        size: int = 2,
        limits: Limits = CASE_LIMITS,
        fast: bool = True,
        in_box: bool = True,
        supervised: bool = True,
        workdir: str = "/",
    ) -> None:
        self.docker = docker
        self.supervised = supervised  # with a host view: cases run by our supervisor in the box
        self.in_box = in_box  # without the host path: our walker in the box, where it serves
        self.tools: str | None = None  # the engine's volume of our tools, once found
        self._twin_key: tuple[str, str] | None = None  # engine and image id
        self.image = image
        self.run_id = run_id
        self.role = role
        self.size = max(1, size)
        self.limits = limits
        self.fast = fast
        self.workdir = workdir
        self.stats = SideStats()
        self._clean: list[Box] = []
        self._waiting = 0  # take()s blocked on _ready: a clean box released goes to them
        self._ready: asyncio.Queue[Box | BaseException] = asyncio.Queue()
        self._filling = 0
        self._in_use = 0  # taken and not yet released
        # boxes made ahead of need: none while boxes come back clean (each case then finds
        # one), as many as cases at once after a discard (each may need a new box soon)
        self._spares = 0
        # boxes made at once: made all together they are all ready late (the engine and
        # the machine share out the work); a few at a time, the first cases start early
        self._make_gate = asyncio.Semaphore(MAKE_AT_ONCE)
        self._tasks: set[asyncio.Task[None]] = set()
        self._making: set[asyncio.Task[None]] = set()  # the subset that creates boxes
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        if self.fast and not await engine_is_local(self.docker):
            self.fast = False  # a remote engine: no host view
        if not self.fast and self.in_box:
            self.tools = await tools_volume(self.docker, self.image, run_id=self.run_id)
            image_id = (await self.docker.images.inspect(self.image)).get("Id", "")
            self._twin_key = (str(self.docker.docker_host), image_id) if image_id else None
        self._refill()

    async def close(self) -> None:
        """Stop filling and remove every box. Creations and removals in flight finish their
        engine call first (see `complete_despite_cancel`), so none is left to nobody."""
        self._closed = True
        while self._tasks:  # a release during close may still spawn a removal: await it too
            for t in list(self._making):  # never a removal: cancelled before its first step,
                t.cancel()  # it would not even start, and its container would stay
            await asyncio.gather(*self._tasks, return_exceptions=True)
        boxes = list(self._clean)
        self._clean.clear()
        while not self._ready.empty():
            item = self._ready.get_nowait()
            if isinstance(item, Box):
                boxes.append(item)
        await asyncio.gather(*(b.container.remove() for b in boxes), return_exceptions=True)

    def _spawn(self, coro: Coroutine[Any, Any, None], *, making: bool = False) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if making:
            self._making.add(task)
            task.add_done_callback(self._making.discard)

    def _refill(self) -> None:
        if self._closed:
            return
        coming = self._ready.qsize() + self._filling
        want = max(
            self.size + self._spares - (coming + len(self._clean) + self._in_use),
            self._waiting - coming,  # every take() blocked has a box on its way
        )
        for _ in range(max(0, want)):
            self._filling += 1
            self._spawn(self._make(), making=True)

    async def _make(self) -> None:
        try:
            async with self._make_gate:
                box = await self._new_box()
        except BaseException as err:  # surfaces in take(), not lost in a background task
            self._filling -= 1
            self._ready.put_nowait(err)
            if isinstance(err, asyncio.CancelledError):
                raise
            return
        self._filling -= 1
        if self._closed:
            await box.container.remove()
            return
        self._ready.put_nowait(box)

    async def _new_box(self) -> Box:
        inside = self.tools is not None
        tmpfs = {self.workdir: WORKDIR_TMPFS} if self.fast or inside else None
        keepalive = await asyncio.to_thread(host_keepalive) if self.fast else None
        limits = self.limits
        if keepalive is not None and self.supervised and binary_identity(keepalive) is not None:
            # the supervisor's own pid: a case keeps the budget it has without one
            limits = dataclasses.replace(limits, pids=limits.pids + 1)
        c = await create_container(
            self.docker, self.image, run_id=self.run_id, role=self.role, limits=limits,
            workdir=self.workdir, tmpfs=tmpfs, keepalive=keepalive, keepalive_volume=self.tools,
        )  # fmt: skip
        self.stats.created += 1
        try:
            if inside:
                return Box(container=c, view=None, inside=await self._baseline_inside(c))
            info = await c.raw.show()
            view = HostView.probe(info) if self.fast else None
            box = Box(container=c, view=view, init_pid=int(info["State"].get("Pid") or 0))
            if self.fast and view is None:
                # a tmpfs work directory is invisible to `/changes`: never judge without a view
                raise BoxError("the engine's layers are not readable from this host")
            if view is not None:
                procs, box.trusted_keepalive = await _keepalive_procs(view, box.init_pid, keepalive)
                if box.trusted_keepalive and keepalive is not None and self.supervised:
                    procs = await _with_supervisor(box, view, keepalive, procs)
                await asyncio.to_thread(take_baseline, box, procs, self.workdir)
            else:
                # taken while the pool fills, so a case pays for one `/changes`, not two
                box.baseline = await fallback_snapshot(self.docker, c)
            return box
        except BaseException:
            await c.remove()
            raise

    async def _baseline_inside(self, c: Container) -> Inside:
        """The box's baseline, from its image's twin once there is one; the first box of an
        image makes it while the others wait (each would hash the whole image)."""
        key = self._twin_key
        if key is None:
            return await baseline(c)
        if key not in _twins:
            lock = _twin_locks.setdefault((key, id(asyncio.get_running_loop())), asyncio.Lock())
            async with lock:
                if key not in _twins:
                    _twins[key] = await baseline(c)
                    return _twins[key]
        return await baseline(c, _twins[key])

    # --- use ------------------------------------------------------------------------------

    async def run(self, call: CaseCall) -> SideOutcome:
        """A case in a fresh state (`sandbox.base.CasePool`)."""
        return await run_case(self, call)

    async def take(self) -> Box:
        if self._clean:
            box = self._clean.pop()
            self.stats.reused += 1
            self._in_use += 1
            return box
        self._waiting += 1
        self._refill()
        try:
            item = await self._ready.get()
        finally:
            self._waiting -= 1
        if isinstance(item, BaseException):
            self._refill()
            raise item
        self._in_use += 1
        self._refill()
        return item

    async def release(
        self,
        box: Box,
        *,
        after: dict[str, Entry] | None,
        result: ExecResult,
        look: Look | None = None,
    ) -> bool:
        """Keep the box for the next case only if it is provably as it started (`look`:
        the in-box path's look after the case)."""
        box.cases_served += 1
        try:
            clean = await self._untouched(box, after, result, look)
        except BaseException:  # cancelled (or failed) while checking: the box must not be lost
            self._in_use -= 1
            self.stats.discarded += 1
            self._spawn(box.container.remove())
            raise
        self._in_use -= 1
        self._spares = max(0, self._spares - 1) if clean else self.size
        if clean and not self._closed and self._waiting > self._ready.qsize():
            # a take() is blocked on the queue: in the clean list it would never see this box
            # (the refill counts it as supply), so every waiter could hang with boxes idle
            self.stats.reused += 1
            self._ready.put_nowait(box)
        elif clean and not self._closed:
            self._clean.append(box)
        else:
            self.stats.discarded += 1
            self._spawn(box.container.remove())
            self._refill()
        return clean

    async def _untouched(
        self, box: Box, after: dict[str, Entry] | None, result: ExecResult, look: Look | None
    ) -> bool:
        if box.inside is not None:
            reason = why_dirty_in_box(box, box.inside, result, look, self.workdir)
        else:
            reason = await why_dirty_on_host(box, after, result)
        if reason:
            log.debug("%s box %s not reused: %s", self.role, box.container.id[:12], reason)
            self.stats.dirty_reasons[reason] = self.stats.dirty_reasons.get(reason, 0) + 1
        return reason == ""
