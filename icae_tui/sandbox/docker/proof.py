"""Proving a case's box untouched, so that it may serve the next case (the side pool,
`pool.py`, keeps it then, and discards it else).

A container is *provably untouched* after a case when its writable layer equals the pristine
one taken at start, its root (the box's `/`) with the same times and xattrs; the processes
are exactly its own init and keepalive (the same processes, running the same host binaries:
see `sandbox/docker/keepalive.py`) with the limits, priorities, affinity and OOM score they
had (a case runs as their uid, so it can change them, and on the supervised path every later
case inherits the supervisor's); everything under `/dev` (with `/dev/shm` and `/dev/mqueue`)
and `/etc/hostname`, `/etc/hosts` and `/etc/resolv.conf` (the engine binds its own files
there) have the same names, modes, owners, device numbers, contents, times and xattrs; and
no SysV IPC object exists. A box kept has its memory cgroup's peak set back, so the next
case cannot read the last one's.

With a local engine the work directory (fixtures, most side effects) is a tmpfs, written
and read from the host through `/proc/<pid>/root` (looked up as the container would, never
through a link to the host), and emptied between cases: a case that only touched its work
directory leaves a container that can still be proven fresh. Remote engines have no host
view: there our own static tool looks from inside the box (`sandbox/docker/inbox.py`) and
`why_dirty_in_box` reads its look.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import aiodocker

from icae_tui.errors import BoxError
from icae_tui.sandbox.base import ExecResult
from icae_tui.sandbox.docker.containers import Container
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
    process_start,
    process_state,
    settings_of,
    state_of,
    walk_states,
)
from icae_tui.sandbox.docker.inbox import Inside, Look, why_dirty
from icae_tui.sandbox.docker.keepalive import KEEPALIVE_DIR
from icae_tui.sandbox.docker.manifest import fallback_diff
from icae_tui.sandbox.docker.sidefx import layer_diff
from icae_tui.sandbox.docker.supervisor import Supervisor
from icae_tui.sandbox.effects import Change, Entry

log = logging.getLogger(__name__)

NSENTER = shutil.which("nsenter")

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


def take_baseline(box: Box, procs: set[int], workdir: str) -> None:
    """What `why_dirty_on_host` compares against, taken once the keepalive runs (in a thread:
    these are file-system walks)."""
    assert box.view is not None
    root = open_container_root(box.init_pid)
    try:
        box.root_identity = dir_identity(root)
    finally:
        os.close(root)
    box.work_path = workdir
    with in_container(box, workdir) as fd:
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


def why_dirty_in_box(
    box: Box, inside: Inside, result: ExecResult, look: Look | None, workdir: str
) -> str:
    """Empty when our walker's `look` after the case proves the box as it started; else the
    first thing that differs."""
    if look is None:
        return "no look after the case"
    if result.overflowed or result.timed_out or result.exit_code is None:
        return "the case did not end normally"
    if box.lingering:
        return "a process was left behind"
    return why_dirty(inside, look, workdir)

async def why_dirty_on_host(box: Box, after: dict[str, Entry] | None, result: ExecResult) -> str:
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
