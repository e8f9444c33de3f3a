"""One side of the differential (oracle or delivery): a pool of ready containers.

Every case gets a fresh state, the whole container, never one folder. Creating one costs
~0.3 s here, so the pool pre-starts containers in the background, and — with a local engine
— a container that is *provably untouched* after a case serves the next one: its writable
layer equals the pristine one taken at start, no process was left behind (pids cgroup),
`/dev`, `/dev/shm` and `/dev/mqueue` list the same names, and no SysV IPC object exists.
Anything else is discarded (removal kills whatever still runs) and replaced from the pool.

With a local engine the work directory (fixtures, most side effects) is a tmpfs, written
and read from the host through `/proc/<pid>/root`, and emptied between cases: a case that
only touched its work directory leaves a container that can still be proven fresh.

Remote engines have no host view: each case takes a new container and side effects come
from the engine's `/changes` plus an in-container manifest — slower, equally correct.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import aiodocker

from icae_tui.sandbox.containers import Container, ExecResult, Limits, create_container
from icae_tui.sandbox.hostview import Entry, HostView, process_state

log = logging.getLogger(__name__)

NSENTER = shutil.which("nsenter")
CASE_LIMITS = Limits(ttl_s=1800)
WORKDIR_TMPFS = "rw,exec,nosuid,nodev,size=256m,mode=755"


def _identity(path: Path) -> tuple[int, int, int, tuple[str, ...]]:
    st = os.lstat(path)
    return (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, tuple(sorted(os.listxattr(path))))


def write_fixtures(root: Path, files: dict[str, str]) -> None:
    """Fixtures straight into the tmpfs work directory (nothing runs in the container)."""
    for rel, text in files.items():
        target = root / rel
        parent = root
        for part in Path(rel).parent.parts:  # create parents one by one, never through a link
            parent = parent / part
            if not parent.is_dir() or parent.is_symlink():
                os.mkdir(parent, 0o755)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode())
        os.chmod(target, 0o644, follow_symlinks=False)


def reset_workdir(box: Box) -> bool:
    """Empty the work directory and prove it is as it started. Runs with nothing running
    in the container, so nothing can race it; symlinks are removed, never followed."""
    root = box.work_root
    if root is None:
        return False
    try:
        for entry in os.scandir(root):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        return not os.listdir(root) and _identity(root) == box.work_identity
    except OSError:
        return False


_MANIFEST_PY = r"""
import hashlib, json, os, stat, sys
out = {}
for path in json.load(sys.stdin):
    try:
        st = os.lstat(path)
    except OSError:
        out[path] = ["deleted", 0, 0, "", ""]
        continue
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        out[path] = ["link", mode, 0, "", os.readlink(path)]
    elif stat.S_ISDIR(st.st_mode):
        out[path] = ["dir", mode, 0, "", ""]
    elif stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            digest = h.hexdigest()
        except OSError:
            digest = "unreadable"
        out[path] = ["file", mode, st.st_size, digest, ""]
    else:
        out[path] = ["other", mode, 0, "", ""]
json.dump(out, sys.stdout)
"""


@dataclass
class Box:
    container: Container
    view: HostView | None
    init_pid: int = 0
    pristine: dict[str, Entry] = field(default_factory=dict)
    base_pids: int | None = None
    base_procs: set[int] = field(default_factory=set)
    base_oom: int = 0
    base_pid_hits: int = 0
    base_dev: tuple[frozenset[str], ...] = ()
    baseline: dict[str, Entry] | None = None  # fallback path: changes right after start
    lingering: bool = False  # the last case left a process running (the box was frozen)
    work_root: Path | None = None  # fast path: the tmpfs work directory, seen from the host
    work_identity: tuple[int, int, int, tuple[str, ...]] | None = None  # its mode, owner, xattrs
    cases_served: int = 0


def _dev_listing(pid: int) -> tuple[frozenset[str], ...]:
    root = f"/proc/{pid}/root/dev"
    out = []
    for sub in ("", "/shm", "/mqueue"):
        try:
            out.append(frozenset(os.listdir(root + sub)))
        except OSError:
            out.append(frozenset({"<unreadable>"}))
    return tuple(out)


_libc = None
_SYSV_FILES = ("/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg")
CLONE_NEWIPC = 0x08000000


def _sysv_lines_in_namespace(pid: int) -> int | None:
    """Count SysV IPC objects in `pid`'s IPC namespace, from a thread that joins it.

    setns(2) moves only the calling thread; /proc/sysvipc/* shows the reader's namespace.
    The thread returns to our own namespace before it is reused. None: cannot tell.
    """
    import ctypes

    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    try:
        own = os.open("/proc/thread-self/ns/ipc", os.O_RDONLY)
    except OSError:
        return None
    try:
        target = os.open(f"/proc/{pid}/ns/ipc", os.O_RDONLY)
    except OSError:
        os.close(own)
        return None
    try:
        if _libc.setns(target, CLONE_NEWIPC) != 0:
            return None
        try:
            count = 0
            for path in _SYSV_FILES:
                with open(path) as f:
                    count += max(0, len(f.read().splitlines()) - 1)
            return count
        finally:
            if _libc.setns(own, CLONE_NEWIPC) != 0:  # never leave a pool thread inside
                raise RuntimeError("could not return to our IPC namespace")
    finally:
        os.close(target)
        os.close(own)


async def _sysv_ipc_empty(pid: int) -> bool:
    """No shared memory, semaphore or message queue in the container's IPC namespace."""
    count = await asyncio.to_thread(_sysv_lines_in_namespace, pid)
    if count is not None:
        return count == 0
    if NSENTER is None:
        return False  # cannot prove it: do not reuse
    proc = await asyncio.create_subprocess_exec(
        NSENTER, "-t", str(pid), "-i", "--", "cat", *_SYSV_FILES,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        return False
    rows = [ln for ln in out.decode().splitlines() if ln.strip()]
    return len(rows) == len(_SYSV_FILES)  # headers only


async def settles(view: HostView, base: set[int], *, patience_s: float = 3.0) -> bool:
    """Whether only the container's own processes (`base`) remain after a case.

    A process that is still alive after its command ended is a background process: no.
    Processes that are only exiting (zombies waiting for the container's init to reap
    them, slower on a loaded machine) are waited for, up to `patience_s`.
    """
    deadline = time.monotonic() + patience_s
    delay = 0.002
    while True:
        procs = view.procs()
        if procs is None:
            return False
        extra = procs - base
        if not extra:
            return True
        if any(process_state(p) not in ("Z", "X", "") for p in extra):
            return False
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)


async def _keepalive_procs(view: HostView, init_pid: int, *, wait_s: float = 5.0) -> set[int]:
    """The container's own processes — its init and the `sleep <ttl>` it starts — once the
    sleep runs. Taken too early (init not yet forked), every case would look dirty."""
    deadline = time.monotonic() + wait_s
    while True:
        procs = view.procs() or set()
        for pid in procs - {init_pid}:
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
            except OSError:
                continue
            if argv0 == b"sleep" and len(procs) == 2:
                return procs
        if time.monotonic() > deadline:
            return procs  # odd, but then the box is simply never reused
        await asyncio.sleep(0.005)


async def engine_is_local(docker: aiodocker.Docker) -> bool:
    """Layers readable here: a Unix-socket engine with overlay2 under a readable root."""
    if not str(docker.docker_host).startswith("unix://"):
        return False
    info = await docker.system.info()
    root = info.get("DockerRootDir", "/var/lib/docker")
    return info.get("Driver") == "overlay2" and os.access(f"{root}/overlay2", os.R_OK)


@dataclass
class SideStats:
    created: int = 0
    reused: int = 0
    discarded: int = 0
    dirty_reasons: dict[str, int] = field(default_factory=dict)


class SidePool:
    def __init__(
        self,
        docker: aiodocker.Docker,
        image: str,
        *,
        run_id: str,
        role: Literal["oracle", "delivery"],
        size: int = 2,
        limits: Limits = CASE_LIMITS,
        fast: bool = True,
        workdir: str = "/",
    ) -> None:
        self.docker = docker
        self.image = image
        self.run_id = run_id
        self.role = role
        self.size = max(1, size)
        self.limits = limits
        self.fast = fast
        self.workdir = workdir
        self.stats = SideStats()
        self._clean: list[Box] = []
        self._ready: asyncio.Queue[Box | BaseException] = asyncio.Queue()
        self._filling = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        if self.fast and not await engine_is_local(self.docker):
            self.fast = False  # a remote engine: the fallback path, honestly slower
        self._refill()

    async def close(self) -> None:
        """Stop filling and remove every box. Creations and removals in flight finish their
        engine call first (see `complete_despite_cancel`), so none is left to nobody."""
        self._closed = True
        while self._tasks:  # a release during close may still spawn a removal: await it too
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        boxes = list(self._clean)
        self._clean.clear()
        while not self._ready.empty():
            item = self._ready.get_nowait()
            if isinstance(item, Box):
                boxes.append(item)
        await asyncio.gather(*(b.container.remove() for b in boxes), return_exceptions=True)

    def _spawn(self, coro) -> None:  # noqa: ANN001
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _refill(self) -> None:
        if self._closed:
            return
        want = self.size - (self._ready.qsize() + self._filling + len(self._clean))
        for _ in range(max(0, want)):
            self._filling += 1
            self._spawn(self._make())

    async def _make(self) -> None:
        try:
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
        tmpfs = {self.workdir: WORKDIR_TMPFS} if self.fast else None
        c = await create_container(
            self.docker, self.image, run_id=self.run_id, role=self.role, limits=self.limits,
            workdir=self.workdir, tmpfs=tmpfs,
        )  # fmt: skip
        self.stats.created += 1
        try:
            info = await c.raw.show()
            view = HostView.probe(info) if self.fast else None
            box = Box(container=c, view=view, init_pid=int(info["State"].get("Pid") or 0))
            if self.fast and view is None:
                # a tmpfs work directory is invisible to `/changes`: never judge without a view
                raise RuntimeError("the engine's layers are not readable from this host")
            if view is not None:
                box.work_root = Path(f"/proc/{box.init_pid}/root{self.workdir}")
                box.work_identity = _identity(box.work_root)
                box.pristine = view.layer()
                box.base_procs = await _keepalive_procs(view, box.init_pid)
                box.base_pids = len(box.base_procs)
                box.base_oom = view.oom_kills()
                box.base_pid_hits = view.pids_limit_hits()
                box.base_dev = _dev_listing(box.init_pid)
            else:
                # taken while the pool fills, so a case pays for one `/changes`, not two
                box.baseline = await fallback_snapshot(self.docker, c)
            return box
        except BaseException:
            await c.remove()
            raise

    # --- use ------------------------------------------------------------------------------

    async def take(self) -> Box:
        if self._clean:
            box = self._clean.pop()
            self.stats.reused += 1
            return box
        self._refill()
        item = await self._ready.get()
        self._refill()
        if isinstance(item, BaseException):
            raise item
        return item

    async def release(
        self, box: Box, *, after: dict[str, Entry] | None, result: ExecResult
    ) -> bool:
        """Keep the box for the next case only if it is provably as it started."""
        box.cases_served += 1
        clean = await self._untouched(box, after, result)
        if clean and not self._closed:
            self._clean.append(box)
        else:
            self.stats.discarded += 1
            self._spawn(box.container.remove())
            self._refill()
        return clean

    async def _untouched(
        self, box: Box, after: dict[str, Entry] | None, result: ExecResult
    ) -> bool:
        reason = await self._why_dirty(box, after, result)
        if reason:
            log.debug("%s box %s not reused: %s", self.role, box.container.id[:12], reason)
            self.stats.dirty_reasons[reason] = self.stats.dirty_reasons.get(reason, 0) + 1
        return reason == ""

    async def _why_dirty(self, box: Box, after: dict[str, Entry] | None, result: ExecResult) -> str:
        """Empty when the box is provably as it started; else the first thing that differs."""
        view = box.view
        if view is None or after is None:
            return "no host view"
        if result.overflowed or result.timed_out or result.exit_code is None:
            return "the case did not end normally"
        if after != box.pristine:
            return "writable layer changed"
        if box.lingering or view.process_count() != box.base_pids:
            return "a process was left behind"
        if view.oom_kills() != box.base_oom or view.pids_limit_hits() != box.base_pid_hits:
            return "memory or process limit hit"
        if _dev_listing(box.init_pid) != box.base_dev:
            return "/dev, /dev/shm or /dev/mqueue changed"
        if not await _sysv_ipc_empty(box.init_pid):
            return "SysV IPC objects exist"
        if not await asyncio.to_thread(reset_workdir, box):
            return "work directory could not be reset"
        return ""


# --- the fallback's view of changes (remote engines) ---------------------------------------


async def engine_changes(docker: aiodocker.Docker, container_id: str) -> dict[str, int]:
    """`GET /containers/{id}/changes`: path → kind (0 modified, 1 added, 2 deleted)."""
    data = await docker._query_json(f"containers/{container_id}/changes")  # noqa: SLF001
    return {item["Path"]: item["Kind"] for item in data or []}


async def manifest_of(c: Container, paths: list[str]) -> dict[str, Entry]:
    if not paths:
        return {}
    res = await c.exec(
        ["python3", "-c", _MANIFEST_PY], stdin=json.dumps(paths).encode(), timeout_s=120
    )
    if res.exit_code != 0:
        raise RuntimeError(
            f"manifest failed in {c.id[:12]}: {res.stderr.decode(errors='replace')[-300:]}"
        )
    return {p: tuple(v) for p, v in json.loads(res.stdout).items()}  # type: ignore[misc]


async def fallback_snapshot(docker: aiodocker.Docker, c: Container) -> dict[str, Entry]:
    """Changed paths with their manifest. A directory the engine calls modified is left
    out: that only means something inside it changed, and those paths are listed too."""
    changed = await engine_changes(docker, c.id)
    entries = await manifest_of(c, sorted(p for p, k in changed.items() if k != 2))
    for path, kind in changed.items():
        if kind == 2:
            entries[path] = ("deleted", 0, 0, "", "")
        elif kind == 0 and entries.get(path, ("",))[0] == "dir":
            del entries[path]
    return entries


def fallback_diff(
    before: dict[str, Entry], after: dict[str, Entry]
) -> dict[str, tuple[str, Entry]]:
    """Like `layer_diff`, without a view of the image: a path first seen changed is
    `added` (or `deleted`); one seen before the case and changed since is `modified`."""
    out: dict[str, tuple[str, Entry]] = {}
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None or new[0] == "deleted":
            if old is None or old[0] != "deleted":
                out[path] = ("deleted", old or ("deleted", 0, 0, "", ""))
        elif old is None or old[0] == "deleted":
            out[path] = ("added", new)
        elif not (new[0] == old[0] == "dir" and new[1] == old[1]):
            out[path] = ("modified", new)
    return out


async def remove_quietly(c: Container) -> None:
    with contextlib.suppress(Exception):
        await c.remove()
