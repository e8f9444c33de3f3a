"""One side of the differential (oracle or delivery): a pool of ready containers.

Every case gets a fresh state, the whole container, never one folder. Creating one costs
~0.3 s here, so the pool pre-starts containers in the background, and — with a local engine
— a container that is *provably untouched* after a case serves the next one: its writable
layer equals the pristine one taken at start, its root (the box's `/`) with the same times
and xattrs; the processes are exactly its own init and keepalive (the same processes,
running the same host binaries: see `sandbox.keepalive`) with the limits, priorities,
affinity and OOM score they had (a case runs as their uid, so it can change them, and on
the supervised path every later case inherits the supervisor's); everything under `/dev`
(with `/dev/shm` and `/dev/mqueue`) and `/etc/hostname`, `/etc/hosts` and
`/etc/resolv.conf` (the engine binds its own files there) have the same names, modes,
owners, device numbers, contents, times and xattrs; and no SysV IPC object exists. Anything
else is discarded (removal kills whatever still runs) and replaced from the pool. A box kept
has its memory cgroup's peak set back, so the next case cannot read the last one's.

With a local engine the work directory (fixtures, most side effects) is a tmpfs, written
and read from the host through `/proc/<pid>/root` (looked up as the container would, never
through a link to the host), and emptied between cases: a case that only touched its work
directory leaves a container that can still be proven fresh.

Remote engines have no host view. There our own static tool looks from inside the box
(`sandbox.docker.inbox`): it stops what the case left, walks the root and reports the
box's processes and counters; the work directory is a tmpfs it empties, and a box it
proves untouched serves the next case, as with a local engine. Where that tool cannot
serve (no static build here, an engine of another architecture) each case takes a new
container and side effects come from the engine's `/changes` plus a manifest made by the
image's `python3` — slower, and the last resort.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import stat
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import aiodocker

from icae_tui.domain.outcome import SideOutcome
from icae_tui.errors import BoxError
from icae_tui.sandbox.base import CaseCall, ExecResult, Limits, Role
from icae_tui.sandbox.docker.containers import Container, create_container
from icae_tui.sandbox.docker.engine import local_data_root
from icae_tui.sandbox.docker.engine_api import container_changes
from icae_tui.sandbox.docker.hostview import (
    HostView,
    Meta,
    Settings,
    State,
    dir_identity,
    exe_identity,
    meta_at,
    open_container_root,
    open_in_root,
    process_parent,
    process_start,
    process_state,
    settings_of,
    state_of,
    walk_states,
)
from icae_tui.sandbox.docker.inbox import Inside, Look, baseline, tools_volume, why_dirty
from icae_tui.sandbox.docker.keepalive import KEEPALIVE_DIR, host_keepalive
from icae_tui.sandbox.docker.sidefx import layer_diff
from icae_tui.sandbox.docker.supervisor import Supervisor, SupervisorLost, binary_identity
from icae_tui.sandbox.effects import Change, Entry

log = logging.getLogger(__name__)

NSENTER = shutil.which("nsenter")
CASE_LIMITS = Limits(ttl_s=1800)
WORKDIR_TMPFS = "rw,exec,nosuid,nodev,size=256m,mode=755"


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Under /dev: our read-only keepalive folder is listed, never walked (it cannot change).
DEV_SKIP = frozenset({KEEPALIVE_DIR})
WorkIdentity = tuple[int, int, int, int, int, tuple[str, ...]]  # dev, ino, mode, uid, gid, xattrs


def _work_identity(fd: int) -> WorkIdentity:
    st = os.fstat(fd)
    with _reopen(fd) as rfd:
        xattrs = tuple(sorted(os.listxattr(rfd)))
    return (st.st_dev, st.st_ino, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, xattrs)


@contextlib.contextmanager
def _reopen(fd: int) -> Iterator[int]:
    """A readable descriptor of the directory `fd` (an O_PATH one) names."""
    rfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    try:
        yield rfd
    finally:
        os.close(rfd)


class ContainerGone(BoxError):
    """The container's init is gone (the container stopped or was removed)."""


@contextlib.contextmanager
def in_container(box: Box, path: str) -> Iterator[int]:
    """An O_PATH descriptor of directory `path` as the box's container sees it, looked up
    from its root without ever leaving it (see `hostview.open_in_root`)."""
    try:
        root = open_container_root(box.init_pid, box.root_identity)
    except OSError as err:
        raise ContainerGone(f"container {box.container.id[:12]}: {err}") from None
    try:
        fd = open_in_root(root, path)
    finally:
        os.close(root)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def work_dir(box: Box) -> Iterator[int]:
    """The box's tmpfs work directory, checked to be the very tmpfs found at start."""
    if box.work_path is None or box.work_identity is None:
        raise OSError("this box has no tmpfs work directory")
    with in_container(box, box.work_path) as fd:
        if dir_identity(fd) != box.work_identity[:2]:
            raise OSError(f"{box.work_path} is no longer the work directory's tmpfs")
        yield fd


def write_fixtures(box: Box, files: dict[str, str]) -> None:
    """Fixtures straight into the tmpfs work directory (nothing runs in the container).
    Every parent is created and opened relative to the one before it, never through a link."""
    with work_dir(box) as root:
        for rel, text in files.items():
            parts = PurePosixPath(rel).parts
            if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
                raise ValueError(f"fixture path {rel!r} leaves the work directory")
            with _reopen(root) as top:
                dfd = os.dup(top)
            try:
                for part in parts[:-1]:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=dfd)
                    sub = os.open(part, _DIR, dir_fd=dfd)
                    os.close(dfd)
                    dfd = sub
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(parts[-1], flags, 0o644, dir_fd=dfd)
                with os.fdopen(fd, "wb") as f:
                    f.write(text.encode())
                    os.fchmod(f.fileno(), 0o644)
            finally:
                os.close(dfd)


def walk_work(box: Box, workdir: str) -> dict[str, Entry]:
    """The work directory's entries, keyed by container path. If it cannot be found where
    it was (a case cannot move a mount point, but can move a folder above it), one entry
    says so. ContainerGone when the container is."""
    try:
        with work_dir(box) as fd:
            return {p: s[0] for p, s in walk_states(fd, workdir).items()}
    except OSError:
        return {f"{workdir.rstrip('/')}/<unreachable>": ("other", 0, 0, "unreachable", "")}


def reset_workdir(box: Box) -> bool:
    """Empty the work directory and prove it is as it started. Runs with nothing running
    in the container, so nothing can race it; symlinks are removed, never followed."""
    if box.work_path is None:
        return False
    try:
        with work_dir(box) as fd, _reopen(fd) as root:
            for entry in os.scandir(root):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.name, dir_fd=root)
                else:
                    os.unlink(entry.name, dir_fd=root)
            return not os.listdir(root) and _work_identity(fd) == box.work_identity
    except (OSError, ContainerGone, RecursionError):  # rmtree recurses: a deep tree, a new box
        return False


def dev_states(box: Box, meta: dict[str, Meta] | None = None) -> dict[str, State]:
    """`/dev` as the container sees it, with `/dev/shm` and `/dev/mqueue` mounted in it:
    every name with its mode, owner, device number and (files) content; `meta`: filled
    with their times and xattrs."""
    with in_container(box, "/dev") as fd:
        return walk_states(fd, "/dev", skip=DEV_SKIP, include_root=True, meta=meta)


# The engine binds its own files over these (/etc/hostname at least: with the network
# disabled it leaves the image's hosts and resolv.conf): a write to them goes to the host,
# outside the writable layer. Read as the container sees them, whatever is mounted there.
ETC_FILES = ("hostname", "hosts", "resolv.conf")
_UNREACHABLE: State = (("other", 0, 0, "unreachable", ""), 0, 0, 0)


def etc_states(box: Box, meta: dict[str, Meta] | None = None) -> dict[str, State]:
    assert box.view is not None
    out: dict[str, State] = {}
    with in_container(box, "/etc") as fd:
        for name in ETC_FILES:
            state = state_of(fd, name, rename=box.view.hostname)
            if state is not None:
                out[f"/etc/{name}"] = state
                if meta is not None:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    meta[f"/etc/{name}"] = meta_at(fd, name, st)
    return out


def container_states(box: Box, meta: dict[str, Meta] | None = None) -> dict[str, State]:
    """What a next case could see outside the writable layer and the work directory:
    `/dev` and the /etc files the engine binds (`meta`: filled with their times and xattrs,
    which only the proof of reuse compares)."""
    out: dict[str, State] = {}
    for what, states in (("/dev", dev_states), ("/etc", etc_states)):
        try:
            out |= states(box, meta)
        except OSError:
            out[f"{what}/<unreachable>"] = _UNREACHABLE
    return out


def entries(states: dict[str, State]) -> dict[str, Entry]:
    return {p: s[0] for p, s in states.items()}


# The engine's `/changes` gives names that are not UTF-8 with U+FFFD in place of each bad
# byte: such a path is looked up again here by the raw names it may stand for (so two names
# that differ only there stay two), and reported by its raw name (surrogate-escaped in JSON).
_MANIFEST_PY = r"""
import hashlib, json, os, stat, sys

def raw_paths(path):
    found = [b"/"]
    for part in path.strip("/").split("/"):
        nxt = []
        for base in found:
            if "\ufffd" not in part:
                nxt.append(os.path.join(base, part.encode("utf-8", "surrogateescape")))
                continue
            try:
                names = os.listdir(base)
            except OSError:
                continue
            nxt += [os.path.join(base, n) for n in names
                    if n.decode("utf-8", "replace") == part]
        found = nxt
    return [os.fsdecode(p) for p in found] or [path]

out = {}
for asked in json.load(sys.stdin):
    for path in (raw_paths(asked) if "\ufffd" in asked else [asked]):
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
    base_states: dict[str, State] = field(default_factory=dict)  # /dev and /etc mounts
    base_meta: dict[str, Meta] = field(default_factory=dict)  # their times and xattrs
    base_root: Meta | None = None  # the times and xattrs of `/` (the writable layer's root)
    base_settings: dict[int, Settings | None] = field(default_factory=dict)  # own processes'
    base_ident: frozenset[ProcIdentity] = frozenset()  # init and keepalive, for good
    trusted_keepalive: bool = False  # init and keepalive are our host binaries
    baseline: dict[str, Entry] | None = None  # fallback path: changes right after start
    lingering: bool = False  # the last case left a process running (the box was frozen)
    root_identity: tuple[int, int] | None = None  # the container's root, as seen at start
    work_path: str | None = None  # fast path: the tmpfs work directory, in the container
    work_identity: WorkIdentity | None = None  # its device, inode, mode, owner, xattrs
    inside: Inside | None = None  # in-box path: the baseline our walker took
    supervisor: Supervisor | None = None  # runs its cases (host path, where it builds)
    cases_served: int = 0


ProcIdentity = tuple[int, int | None, tuple[int, int] | None]  # pid, start time, exe


def proc_identity(pids: set[int]) -> frozenset[ProcIdentity]:
    """Who runs, for good: a pid with its start time names one process, and its exe names
    what it runs (a process chooses its own name, never its exe)."""
    return frozenset((p, process_start(p), exe_identity(p)) for p in pids)


def left_running(view: HostView, base: set[int]) -> int:
    """Processes other than the container's own that are alive (not zombies)."""
    extra = (view.procs() or set()) - base
    return sum(process_state(p) not in ("Z", "X", "") for p in extra)


def kill_extras(view: HostView, keep: set[int], *, rounds: int = 500) -> bool:
    """SIGKILL, from the host, every process in the container's cgroup but `keep`, until
    none is left alive (a fork bomb refills the cgroup while we kill); bounded.

    A pid read from cgroup.procs may be gone and reused by a host process by the time we
    signal it, so each is signalled through a pidfd, and only if its pid is still listed
    in the cgroup after the pidfd was opened: the pidfd then names a process of the cgroup.
    """
    for _ in range(rounds):
        procs = view.procs()
        if procs is None:
            return False
        extra = {p for p in procs - keep if process_state(p) not in ("Z", "X", "")}
        if not extra:
            return True
        fds: dict[int, int] = {}
        for pid in extra:
            with contextlib.suppress(OSError):
                fds[pid] = os.pidfd_open(pid)
        try:
            listed = view.procs() or set()
            for pid, fd in fds.items():
                if pid in listed:
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
        finally:
            for fd in fds.values():
                os.close(fd)
        time.sleep(0.002)  # let the dying exit before the next look
    return False


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


async def settle(view: HostView, base: set[int], *, patience_s: float = 3.0) -> tuple[bool, int]:
    """Whether only the container's own processes (`base`) remain after a case, and how many
    others were alive when it was not so.

    A process that is still alive after its command ended is a background process: not
    settled, and counted. Processes that are only exiting (zombies waiting for the
    container's init to reap them, slower on a loaded machine) are waited for, up to
    `patience_s`; past it the box is not settled, with none alive.
    """
    deadline = time.monotonic() + patience_s
    delay = 0.002
    while True:
        procs = view.procs()
        if procs is None:
            return False, 0
        extra = procs - base
        if not extra:
            return True, 0
        alive = sum(process_state(p) not in ("Z", "X", "") for p in extra)
        if alive:
            return False, alive
        if time.monotonic() > deadline:
            return False, 0
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)


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


def host_snapshot(box: Box) -> tuple[dict[str, Entry], dict[str, State]]:
    """The writable layer, `/dev` and the /etc mounts as they are now (after a `prep`)."""
    assert box.view is not None
    return box.view.layer(), container_states(box)


def host_effects(
    box: Box,
    workdir: str,
    before: dict[str, Entry],
    before_states: dict[str, State],
    before_work: dict[str, Entry],
) -> tuple[dict[str, Entry], dict[str, Change]]:
    """The writable layer after the case, and every effective change: in the layer, in the
    tmpfs work directory, under /dev (/dev/shm, /dev/mqueue, modes) and in the /etc mounts."""
    assert box.view is not None
    after = box.view.layer()
    diff = layer_diff(box.view, before, after)
    diff |= fallback_diff(before_work, walk_work(box, workdir))
    diff |= fallback_diff(entries(before_states), entries(container_states(box)))
    return after, diff


FREEZE_TRIES = 3


async def hold_still(box: Box) -> None:
    """Freeze the container; if the engine cannot (a fork bomb can keep its freezer from
    ever settling: `unable to freeze`), kill from the host everything in it but its init
    and keepalive. Either way nothing of the case runs on while we walk."""
    c = box.container
    for attempt in range(FREEZE_TRIES):
        try:
            await c.raw.pause()
            return
        except aiodocker.DockerError as err:
            if err.status in (404, 409):  # gone or stopped: not a freezer's trouble
                raise
            log.info("pausing %s failed (%s), try %d", c.id[:12], err, attempt + 1)
            if attempt + 1 < FREEZE_TRIES:
                await asyncio.sleep(0.05 * 2**attempt)  # back off: the bomb may settle
    assert box.view is not None
    if not await asyncio.to_thread(kill_extras, box.view, box.base_procs or {box.init_pid}):
        log.warning("processes in %s still alive after killing: walking anyway", c.id[:12])


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
                await asyncio.to_thread(self._baseline, box, procs)
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

    def _baseline(self, box: Box, procs: set[int]) -> None:
        """What `_why_dirty` compares against, taken once the keepalive runs (in a thread:
        these are file-system walks)."""
        assert box.view is not None
        root = open_container_root(box.init_pid)
        try:
            box.root_identity = dir_identity(root)
        finally:
            os.close(root)
        box.work_path = self.workdir
        with in_container(box, self.workdir) as fd:
            box.work_identity = _work_identity(fd)
        box.pristine = box.view.layer()
        box.base_procs = procs
        box.base_pids = len(procs)
        box.base_ident = proc_identity(procs)
        box.base_oom = box.view.oom_kills()
        box.base_pid_hits = box.view.pids_limit_hits()
        box.base_states = container_states(box, box.base_meta)
        box.base_root = box.view.root_meta()
        box.base_settings = {p: settings_of(p) for p in procs}

    # --- use ------------------------------------------------------------------------------

    async def run(self, call: CaseCall) -> SideOutcome:
        """A case in a fresh state (`sandbox.base.CasePool`)."""
        from icae_tui.sandbox.docker.cases import run_case  # cases.py builds on this module

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
            reason = self._why_dirty_inside(box, box.inside, result, look)
        else:
            reason = await self._why_dirty(box, after, result)
        if reason:
            log.debug("%s box %s not reused: %s", self.role, box.container.id[:12], reason)
            self.stats.dirty_reasons[reason] = self.stats.dirty_reasons.get(reason, 0) + 1
        return reason == ""

    def _why_dirty_inside(
        self, box: Box, inside: Inside, result: ExecResult, look: Look | None
    ) -> str:
        if look is None:
            return "no look after the case"
        if result.overflowed or result.timed_out or result.exit_code is None:
            return "the case did not end normally"
        if box.lingering:
            return "a process was left behind"
        return why_dirty(inside, look, self.workdir)

    async def _why_dirty(self, box: Box, after: dict[str, Entry] | None, result: ExecResult) -> str:
        """Empty when the box is provably as it started; else the first thing that differs."""
        view = box.view
        if view is None or after is None:
            return "no host view"
        if result.overflowed or result.timed_out or result.exit_code is None:
            return "the case did not end normally"
        if not box.trusted_keepalive:
            return "no trusted keepalive"
        if after != box.pristine:
            return "writable layer changed"
        try:
            root, settings = await asyncio.to_thread(_own_state, box)
        except OSError:
            return "the writable layer is gone"
        if root != box.base_root:
            return "/ changed (its times or xattrs)"
        if box.lingering or view.process_count() != box.base_pids:
            return "a process was left behind"
        if proc_identity(view.procs() or set()) != box.base_ident:
            return "the init, the keepalive or the supervisor changed"
        if settings != box.base_settings:
            return "the limits or scheduling of the box's own processes changed"
        if box.supervisor is not None and (box.supervisor.broken or box.supervisor.stopped()):
            return "the supervisor was stopped or left mid-case"
        if view.oom_kills() != box.base_oom or view.pids_limit_hits() != box.base_pid_hits:
            return "memory or process limit hit"
        meta: dict[str, Meta] = {}
        try:
            states = await asyncio.to_thread(container_states, box, meta)
        except ContainerGone:
            return "the container is gone"
        if states != box.base_states:
            changed = sorted(states.keys() ^ box.base_states.keys()) or sorted(
                p for p in states if states[p] != box.base_states[p]
            )
            return f"{changed[0].rsplit('/', 1)[0] or '/'} changed"
        if meta != box.base_meta:
            changed = sorted(p for p in meta if meta[p] != box.base_meta.get(p))
            return f"{changed[0] if changed else '/dev'} changed (its times or xattrs)"
        if not await _sysv_ipc_empty(box.init_pid):
            return "SysV IPC objects exist"
        if not await asyncio.to_thread(reset_workdir, box):
            return "work directory could not be reset"
        # last, once the work directory's files are gone: a peak then reads as a fresh box's
        if not await asyncio.to_thread(view.reset_memory_peaks):
            return "the memory cgroup's peak could not be reset"
        return ""


def _own_state(box: Box) -> tuple[Meta, dict[int, Settings | None]]:
    """The times and xattrs of the box's `/`, and what a case can change of the box's own
    processes (read in a thread: xattrs are hashed)."""
    assert box.view is not None
    return box.view.root_meta(), {p: settings_of(p) for p in box.base_procs}


# --- the fallback's view of changes (remote engines) ---------------------------------------


async def engine_changes(docker: aiodocker.Docker, container_id: str) -> dict[str, int]:
    """`GET /containers/{id}/changes`: path → kind (0 modified, 1 added, 2 deleted)."""
    data = await container_changes(docker, container_id)
    return {item["Path"]: item["Kind"] for item in data}


async def manifest_of(c: Container, paths: list[str]) -> dict[str, Entry]:
    if not paths:
        return {}
    res = await c.exec(
        ["python3", "-c", _MANIFEST_PY], stdin=json.dumps(paths).encode(), timeout_s=120
    )
    if res.exit_code != 0:
        raise BoxError(
            f"manifest failed in {c.id[:12]}: {res.stderr.decode(errors='replace')[-300:]}"
        )
    rows: dict[str, list[Any]] = json.loads(res.stdout)
    return {p: (str(v[0]), int(v[1]), int(v[2]), str(v[3]), str(v[4])) for p, v in rows.items()}


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


def fallback_diff(before: dict[str, Entry], after: dict[str, Entry]) -> dict[str, Change]:
    """Like `layer_diff`, without a view of the image: a path first seen changed is
    `added` (or `deleted`); one seen before the case and changed since is `modified`."""
    out: dict[str, Change] = {}
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
