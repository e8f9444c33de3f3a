"""A disk limit for every box: how much of the host's disk its writable layer may take.

Overlay2 on ext4 (a stock engine) cannot bound a container's writable layer, so a delivery
case that writes 8 × 256 MB takes 2 GB of the host's disk. Three guards, strongest first:

- `quota` — the kernel refuses writes past the limit. The engine keeps its data on btrfs
  with quotas on (`scripts/engine.sh` sets that up); between a box's creation and its start
  its layer folder (`overlay2/<id>`, holding the upper and work directories overlayfs needs
  on one file system) becomes a btrfs subvolume with a quota group limited to the box's
  disk. Nothing else changes for the engine: the overlay paths stay the same.
- `watch` — a local engine on another file system: the host sums the layer's allocated
  blocks while the box works and stops what runs in it once the layer is full. A writer
  faster than the watch's poll can overshoot by what it writes in one poll.
- `none` — a remote engine: nothing on this host can see or bound its disk; the run says so.

When is a box *full*? A single write or allocation is at most the box's file-size limit
(RLIMIT_FSIZE, `file_limit`), so a write the kernel refused leaves the layer within one file
(and the file system's bookkeeping for it) of the limit: a layer that took more than
`full_at` = limit − file limit − 1/128 of the limit is full, whatever the guard. Boxes get a
file-size limit of an eighth of their disk (at most 256 MiB): *full* means more than about
7/8 of the disk used. With the quota guard the layer is measured as the quota counts it
(data, the file system's metadata, and what is reserved for writes in flight), so a refused
write always shows as a full box; the watch guard sums the allocated blocks it can see.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from icae_tui.errors import SandboxError
from icae_tui.sandbox.base import DEFAULT_DISK_BYTES, DiskBound, DiskGuard

log = logging.getLogger(__name__)

# --- btrfs (the quota guard) -----------------------------------------------------------------

_BTRFS_SUPER_MAGIC = 0x9123683E
_IOC_WRITE, _IOC_READ = 1, 2


def _ioc(direction: int, number: int, size: int) -> int:
    return (direction << 30) | (size << 16) | (0x94 << 8) | number  # 0x94: btrfs's ioctls


_SUBVOL_CREATE = _ioc(_IOC_WRITE, 14, 4096)  # struct btrfs_ioctl_vol_args
_INO_LOOKUP = _ioc(_IOC_READ | _IOC_WRITE, 18, 4096)  # struct btrfs_ioctl_ino_lookup_args
_QGROUP_LIMIT = _ioc(_IOC_READ, 43, 48)  # struct btrfs_ioctl_qgroup_limit_args
_LIMIT_MAX_RFER = 1  # BTRFS_QGROUP_LIMIT_MAX_RFER
_FIRST_FREE_OBJECTID = 256  # a subvolume's root directory


def _dir_fd(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _create_subvolume(parent: Path, name: str) -> None:
    fd = _dir_fd(parent)
    try:
        fcntl.ioctl(fd, _SUBVOL_CREATE, bytearray(struct.pack("q4088s", 0, name.encode())))
    finally:
        os.close(fd)


def _limit_subvolume(path: Path, limit: int) -> None:
    """Limit the bytes the subvolume at `path` refers to (its quota group 0/<id>)."""
    fd = _dir_fd(path)
    try:
        args = struct.pack("QQQQQQ", 0, _LIMIT_MAX_RFER, limit, 0, 0, 0)
        fcntl.ioctl(fd, _QGROUP_LIMIT, bytearray(args))
    finally:
        os.close(fd)


def subvolume_id(path: Path) -> int:
    fd = _dir_fd(path)
    try:
        buf = bytearray(struct.pack("QQ4080s", 0, _FIRST_FREE_OBJECTID, b""))
        fcntl.ioctl(fd, _INO_LOOKUP, buf)
        return int(struct.unpack_from("Q", buf)[0])
    finally:
        os.close(fd)


def _is_btrfs(path: Path) -> bool:
    """statfs(2)'s f_type, which os.statvfs does not give."""
    import ctypes

    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.statfs(os.fsencode(path), buf) != 0:
        return False
    magic: int = struct.unpack_from("l", buf.raw)[0]
    return magic == _BTRFS_SUPER_MAGIC


def _remove_subvolume(path: Path) -> None:
    """An empty subvolume goes with rmdir(2) (Linux 4.18 and later)."""
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def quota_works(data_root: Path) -> bool:
    """Whether layers under `data_root` can take a quota: btrfs, quotas on. Proved by
    limiting a scratch subvolume, not by reading settings."""
    overlay = data_root / "overlay2"
    if not overlay.is_dir() or not _is_btrfs(overlay):
        return False
    probe = overlay / f"icae-quota-probe-{os.getpid()}"
    try:
        _create_subvolume(overlay, probe.name)
    except OSError:
        return False
    try:
        _limit_subvolume(probe, DEFAULT_DISK_BYTES)
        return True
    except OSError as err:  # ENOTCONN: quotas are off on this file system
        log.info("btrfs at %s takes no quota: %s", overlay, err)
        return False
    finally:
        _remove_subvolume(probe)


class LayerNotBounded(SandboxError):
    """A box's layer could not be made a subvolume with a quota (then it is watched)."""


def bound_layer(upper: Path, limit: int) -> None:
    """Make the layer folder holding `upper` (a container created, not started) a btrfs
    subvolume whose quota group is limited to `limit` bytes.

    The folder holds `diff` (the upper directory, empty before the start), `work` (where
    overlayfs prepares copies before renaming them into `diff`: it must be in the same
    subvolume, renames across subvolumes fail) and the engine's `link` and `lower` files.
    A fresh subvolume with the same contents takes its place by two renames."""
    layer = upper.parent
    if upper.name != "diff" or any(upper.iterdir()):
        raise LayerNotBounded(f"{upper}: not an empty overlay upper directory")
    fresh = layer.with_name(layer.name + "-icae-quota")
    old = layer.with_name(layer.name + "-icae-old")
    try:
        _create_subvolume(layer.parent, fresh.name)
    except OSError as err:
        raise LayerNotBounded(f"{layer}: no subvolume: {err}") from None
    try:
        for entry in os.scandir(layer):
            source = Path(entry.path)
            mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
            if entry.is_dir(follow_symlinks=False):
                if any(source.iterdir()) and entry.name != "work":
                    raise LayerNotBounded(f"{source}: not empty")
                os.mkdir(fresh / entry.name, mode)
                os.chmod(fresh / entry.name, mode)  # past the umask
            elif entry.is_file(follow_symlinks=False):
                shutil.copy2(source, fresh / entry.name, follow_symlinks=False)
            else:
                raise LayerNotBounded(f"{source}: unexpected {stat.filemode(mode)}")
        os.chmod(fresh, stat.S_IMODE(os.stat(layer).st_mode))
        _limit_subvolume(fresh, limit)
        os.rename(layer, old)
    except BaseException as err:
        _remove_subvolume(fresh)
        if isinstance(err, OSError):
            raise LayerNotBounded(f"{layer}: {err}") from None
        raise
    try:
        os.rename(fresh, layer)
    except BaseException:
        os.rename(old, layer)  # as it was: the box starts on its old, unbounded folder
        _remove_subvolume(fresh)
        raise
    shutil.rmtree(old, ignore_errors=True)


def raise_quota(layer: Path, limit: int) -> None:
    """A new limit for a bounded layer (the run's own files need room in a full box)."""
    _limit_subvolume(layer, limit)


# --- how much a layer takes ----------------------------------------------------------------

_SCAN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_SCANNED = 1_000_000  # entries a count looks at
MAX_SCAN_DEPTH = 1024  # directories open at once (one a level)


@dataclass(frozen=True)
class LayerSize:
    bytes: int
    complete: bool  # False: the count was cut (too many entries, too deep): a lower bound


def layer_size(upper: Path) -> LayerSize:
    """Bytes allocated under `upper` (st_blocks: delayed allocations and fallocate count,
    the holes of sparse files do not). Depth first, holding one open directory a level;
    no link is followed, a vanishing entry is skipped."""
    total, scanned, complete = 0, 0, True
    chain: list[tuple[int, list[str]]] = []  # open directories, with subfolders to visit

    def enter(fd: int) -> None:
        nonlocal total, scanned
        subdirs: list[str] = []
        chain.append((fd, subdirs))
        with contextlib.suppress(OSError), os.scandir(fd) as entries:
            for entry in entries:
                scanned += 1
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append(entry.name)

    try:
        enter(os.open(upper, _SCAN_FLAGS))
    except OSError:
        return LayerSize(0, True)
    try:
        while chain:
            fd, pending = chain[-1]
            if not pending:
                os.close(chain.pop()[0])
                continue
            name = pending.pop()
            if scanned >= MAX_SCANNED or len(chain) >= MAX_SCAN_DEPTH:
                complete = False
                continue
            with contextlib.suppress(OSError):
                enter(os.open(name, _SCAN_FLAGS, dir_fd=fd))
    finally:
        for fd, _ in chain:
            os.close(fd)
    return LayerSize(total, complete)


_FS_INFO = _ioc(_IOC_READ, 31, 1024)  # struct btrfs_ioctl_fs_info_args


def quota_group_bytes(layer: Path) -> int | None:
    """What the quota group of the subvolume at `layer` counts against its limit: bytes
    committed plus every reservation for writes in flight (as the kernel checks a limit).
    It lags behind a deletion until the next commit: a box that filled its disk and then
    emptied it is still seen full for a while."""
    try:
        if os.stat(layer).st_ino != _FIRST_FREE_OBJECTID:
            return None  # not a subvolume of its own: no quota group counts it alone
        fd = _dir_fd(layer)
        try:
            info = bytearray(1024)
            fcntl.ioctl(fd, _FS_INFO, info)
        finally:
            os.close(fd)
        fsid = info[16:32].hex()
        uuid = "-".join((fsid[:8], fsid[8:12], fsid[12:16], fsid[16:20], fsid[20:]))
        group = Path(f"/sys/fs/btrfs/{uuid}/qgroups/0_{subvolume_id(layer)}")
        return sum(int((group / name).read_text()) for name in _COUNTED)
    except (OSError, ValueError):
        return None


_COUNTED = ("referenced", "rsv_data", "rsv_meta_pertrans", "rsv_meta_prealloc")


def used_bytes(upper: Path, guard: DiskGuard) -> int:
    """What a box's writable layer takes now, measured as its guard counts it."""
    if guard is DiskGuard.QUOTA:
        counted = quota_group_bytes(upper.parent)
        if counted is not None:
            return counted
    return layer_size(upper).bytes


def full_bytes(upper: Path, bound: DiskBound) -> int | None:
    """The bytes a box's layer takes when the box is full, else None."""
    used = used_bytes(upper, bound.guard)
    return used if used > bound.full_at else None


WATCH_POLL_S = 0.05  # at least; a layer that takes long to sum is summed less often


class LayerWatch:
    """While a box works, with the watch guard only: the host sums its layer over and over
    and calls `stop` (in a thread) once the box is full. `tripped` says it did."""

    def __init__(self, upper: Path | None, bound: DiskBound | None, stop: Callable[[], object]):
        self._upper = upper
        self._bound = bound
        self._stop = stop
        self._task: asyncio.Task[None] | None = None
        self.tripped = False

    async def __aenter__(self) -> LayerWatch:
        upper, bound = self._upper, self._bound
        if upper is not None and bound is not None and bound.guard is DiskGuard.WATCH:
            self._task = asyncio.ensure_future(self._watch(upper, bound))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self, upper: Path, bound: DiskBound) -> None:
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            size = await asyncio.to_thread(layer_size, upper)
            if size.bytes > bound.full_at:
                self.tripped = True
                await asyncio.to_thread(self._stop)
                return
            await asyncio.sleep(max(WATCH_POLL_S, 2 * (loop.time() - began)))
