"""What a local engine lets us see of a container from the host, in well under a millisecond.

- its writable layer (overlay2 `UpperDir`): every path a process added, changed (copy-up)
  or deleted (a whiteout: a 0/0 character device) since the container started;
- its image layers (`LowerDir`), to tell an added path from a modified one;
- anything mounted in it (the tmpfs work directory, `/dev`), through `/proc/<pid>/root`;
- its pids and memory cgroups: how many processes run, and how many were OOM-killed;
- what a case can change of the box's own processes without capabilities (`settings_of`).

Everything read here was made by the program under test, and we read it as root. So no
host-side read ever follows a link planted in the container: every walk and lookup opens
one component at a time, relative to the directory before it, with O_NOFOLLOW. A lookup
inside the container's root that must follow links (the work directory may be one in the
image) resolves them the way the container does, never above its root. Files are hashed
up to HASH_CAP bytes each and WALK_HASH_BUDGET bytes per walk, so a huge file costs at most
a bounded read (see `_hash_at` for what the digest then names). A walk goes as deep as the
tree does, holding at most two directories open; it is bounded by the entries it records
(MAX_ENTRIES) and past that says so in one marker entry (`cut_marker`).

With a remote engine none of this exists; `HostView.probe` returns None and callers fall
back to the engine's `/changes` plus an in-container manifest.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import heapq
import os
import platform
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icae_tui.sandbox.effects import Entry

# Written by the engine itself, not by the program under test.
ENGINE_NOISE = frozenset({"/usr/sbin/docker-init", "/usr/sbin", "/usr"})

# Entry: type, mode, size, sha256, link target (icae_tui/sandbox/effects.py)
# An entry with what a next case could also observe of it: owner, group and device number.
State = tuple[Entry, int, int, int]
# What else a next case could observe of an entry: its modification and change times and
# its extended attributes (a digest of names and values). Only a proof of reuse compares
# it, never side effects: two boxes' times always differ. ctime is the one no case can set
# back, so a change undone (`touch -d`, a file made and removed) still shows.
Meta = tuple[int, int, str]

# Bytes of one file that are hashed: past them the digest names a prefix and the size.
# sha256 runs at ~1 GB/s, so one file costs at most ~20 ms whatever its size.
HASH_CAP = 16 * 1024 * 1024
# Bytes hashed per walk; files past it are named by size only. A byte budget, not a time
# budget: the digest of a file must not depend on how loaded the machine was.
WALK_HASH_BUDGET = 1024 * 1024 * 1024
# A walk has no depth limit (a file 10⁴ levels down is seen); what bounds its cost is the
# entries it records and the characters of their paths (a chain of d directories has paths
# of ~d²/2 characters in all). Past either bound the walk stops, in its deterministic
# order, and one marker entry says so (see `cut_marker`).
MAX_ENTRIES = 200_000
MAX_PATH_CHARS = 64 * 1024 * 1024
MAX_LINKS = 40  # like the kernel's limit on links followed in one lookup
# Directories one `open_in_root` holds open (one per level, to go back up on `..`): a
# deeper path (links can expand one to ~40 × 2048 components) is refused rather than let
# it exhaust the process's descriptors.
MAX_LOOKUP_DEPTH = 256

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class Budget:
    """Bytes a walk may still hash."""

    left: int = field(default_factory=lambda: WALK_HASH_BUDGET)


@dataclass(frozen=True)
class HostView:
    container_id: str
    upper: Path
    lowers: tuple[Path, ...]
    shm: Path | None
    pids_current: Path | None
    pids_events: Path | None
    oom_control: Path | None
    hostname: str = ""  # the container's, which the engine writes into its /etc/hostname

    @classmethod
    def probe(cls, info: dict[str, Any]) -> HostView | None:
        """From a container's inspect data; None when the layers are not on this host."""
        graph = info.get("GraphDriver") or {}
        data = graph.get("Data") or {}
        upper = data.get("UpperDir")
        if graph.get("Name") != "overlay2" or not upper or not os.access(upper, os.R_OK):
            return None
        cid = info["Id"]
        lowers = tuple(Path(p) for p in (data.get("LowerDir") or "").split(":") if p)
        shm = Path("/var/lib/docker/containers") / cid / "mounts" / "shm"
        parent = (info.get("HostConfig") or {}).get("CgroupParent") or "docker"
        pids = Path("/sys/fs/cgroup/pids") / parent.strip("/") / cid / "pids.current"
        oom = Path("/sys/fs/cgroup/memory") / parent.strip("/") / cid / "memory.oom_control"
        return cls(
            container_id=cid,
            upper=Path(upper),
            lowers=lowers,
            shm=shm if shm.is_dir() else None,
            pids_current=pids if pids.exists() else None,
            pids_events=pids.with_name("pids.events")
            if pids.with_name("pids.events").exists()
            else None,
            oom_control=oom if oom.exists() else None,
            hostname=(info.get("Config") or {}).get("Hostname") or "",
        )

    # --- processes and memory -----------------------------------------------------------

    def process_count(self) -> int | None:
        if self.pids_current is None:
            return None
        try:
            return int(self.pids_current.read_text())
        except (OSError, ValueError):
            return None

    def procs(self) -> set[int] | None:
        """Host pids of the processes in the container's cgroup."""
        if self.pids_current is None:
            return None
        try:
            text = self.pids_current.with_name("cgroup.procs").read_text()
        except OSError:
            return None
        return {int(line) for line in text.split()}

    def pids_limit_hits(self) -> int:
        """How often a fork failed because the pids limit was reached (a fork bomb's mark)."""
        if self.pids_events is None:
            return 0
        try:
            for line in self.pids_events.read_text().splitlines():
                if line.startswith("max "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def oom_kills(self) -> int:
        if self.oom_control is None:
            return 0
        try:
            for line in self.oom_control.read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def shm_empty(self) -> bool | None:
        if self.shm is None:
            return None
        try:
            return not any(self.shm.iterdir())
        except OSError:
            return None

    # --- the layers -----------------------------------------------------------------------

    def in_lower(self, path: str) -> bool:
        """Whether the image (its layers merged as overlayfs merges them) has `path`."""
        return lower_lookup(self.lowers, path, Budget(0)) is not None

    def lower_entry(self, path: str, budget: Budget | None = None) -> Entry | None:
        """What the image has at `path`, or None; no link in the image is followed."""
        return lower_lookup(self.lowers, path, budget or Budget())

    def layer(self) -> dict[str, Entry]:
        """Every entry of the writable layer by absolute path, `/` (its root: the box's) with
        them; whiteouts are `deleted`."""
        return walk_tree(self.upper, "/", overlay=True, include_root=True)

    def root_meta(self) -> Meta:
        """The times and xattrs of the box's `/`: its writable layer's root."""
        fd = os.open(self.upper, _DIR_FLAGS)
        try:
            return meta_of(fd, os.fstat(fd))
        finally:
            os.close(fd)

    def reset_memory_peaks(self) -> bool:
        """Set the memory cgroup's high-water marks and failure counts back (cgroup v1: a
        write of 0 makes a peak the current usage), so a next case cannot read how much the
        last one took. False when they could not all be reset."""
        if self.oom_control is None:
            return False
        ok = True
        for name in MEMORY_MARKS:
            try:
                (self.oom_control.parent / name).write_text("0")
            except FileNotFoundError:
                continue  # not in this kernel (kmem, memsw without swap accounting)
            except OSError:
                ok = False
        return ok


# The memory cgroup's (v1) marks a case leaves and a write of 0 resets.
MEMORY_MARKS = tuple(
    f"memory.{kind}{mark}"
    for kind in ("", "memsw.", "kmem.", "kmem.tcp.")
    for mark in ("max_usage_in_bytes", "failcnt")
)


# --- processes --------------------------------------------------------------------------


def process_state(pid: int) -> str:
    """One-letter state from /proc/<pid>/stat ('Z' zombie, 'X' dead, '' gone)."""
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def process_start(pid: int) -> int | None:
    """Start time in clock ticks since boot: with the pid, it names one process for good."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def process_parent(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def _stat_fields(pid: int) -> list[str]:
    """Fields of /proc/<pid>/stat after the command name (state first)."""
    try:
        line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return line.rpartition(")")[2].split()


# What a case may change of another process of its uid without capabilities, all of it
# inherited by that process's children: limits (prlimit), nice and policy (setpriority,
# sched_setscheduler to batch or idle), affinity, I/O priority, OOM score and the nice of
# its autogroup. Per thread where the kernel keeps it per thread.
Settings = tuple[tuple[str, ...], ...]
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(platform.machine())  # syscall numbers
_STAT_SCHED = (15, 16, 37, 38)  # priority, nice, rt_priority, policy (fields after the name)
_STATUS_SCHED = ("Cpus_allowed_list:", "Mems_allowed_list:")
_libc: ctypes.CDLL | None = None


def settings_of(pid: int) -> Settings | None:
    """What a case can change of process `pid` (see `Settings`); None when it is gone."""
    try:
        tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        out: list[tuple[str, ...]] = [tuple(tids)]
        for name in ("oom_score_adj", "autogroup"):
            try:
                out.append((name, Path(f"/proc/{pid}/{name}").read_text()))
            except FileNotFoundError:
                out.append((name, "absent"))  # a kernel without autogroups
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            fields = Path(f"{task}/stat").read_text().rpartition(")")[2].split()
            status = Path(f"{task}/status").read_text().splitlines()
            out.append((
                tid,
                Path(f"{task}/limits").read_text(),
                *(fields[i] for i in _STAT_SCHED),
                *(line for line in status if line.startswith(_STATUS_SCHED)),
                str(_ioprio(int(tid))),
            ))  # fmt: skip
    except (OSError, ValueError, IndexError):
        return None
    return tuple(out)


def _ioprio(tid: int) -> int | None:
    """The I/O priority of thread `tid` (ioprio_get: /proc does not show it)."""
    global _libc
    if _IOPRIO_GET is None:
        return None
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    value = _libc.syscall(_IOPRIO_GET, 1, tid)  # IOPRIO_WHO_PROCESS: one thread
    return None if value < 0 else int(value)


def exe_identity(pid: int) -> tuple[int, int] | None:
    """Device and inode of the file a process runs: its name is the process's to choose."""
    try:
        st = os.stat(f"/proc/{pid}/exe")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


# --- inside the container's root --------------------------------------------------------


def open_container_root(pid: int, identity: tuple[int, int] | None = None) -> int:
    """An O_PATH descriptor of the root of the container whose init is `pid`.

    With `identity` (device and inode recorded when the container started), a pid that now
    names some other process (the container died and the pid was reused) is refused rather
    than read: its root could be the host's.
    """
    fd = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    st = os.fstat(fd)
    if identity is not None and (st.st_dev, st.st_ino) != identity:
        os.close(fd)
        raise ProcessLookupError(f"pid {pid} is no longer the container's init")
    return fd


def dir_identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def open_in_root(root_fd: int, path: str) -> int:
    """An O_PATH descriptor of directory `path` as the container sees it.

    Links on the way are followed as the container would follow them, but scoped to its
    root: an absolute target starts again at `root_fd`, `..` never climbs above it. (Going
    through `/proc/<pid>/root/<path>` instead resolves an absolute link against the HOST's
    root.) Every component is opened with O_NOFOLLOW relative to the one before.
    """
    todo = [p for p in path.split("/") if p and p != "."]
    stack = [os.dup(root_fd)]
    links = 0
    try:
        while todo:
            name = todo.pop(0)
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                continue
            try:
                fd = os.open(
                    name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                    dir_fd=stack[-1],
                )  # fmt: skip
            except OSError as err:
                if err.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    raise
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many links", path) from None
                target = os.readlink(name, dir_fd=stack[-1])
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                todo[:0] = [p for p in target.split("/") if p and p != "."]
                continue
            stack.append(fd)
            if len(stack) > MAX_LOOKUP_DEPTH + 1:  # the root, then one per level
                raise OSError(errno.ENAMETOOLONG, "too deep a lookup", path)
        return os.dup(stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


# --- image layers ---------------------------------------------------------------------------


def lower_lookup(lowers: tuple[Path, ...], path: str, budget: Budget) -> Entry | None:
    """The entry at `path` in the merged view of `lowers` (top layer first), or None.

    Looked up as overlayfs does, one component at a time through every layer: a whiteout
    hides the name in the layers below, an opaque directory hides their directories, and
    a non-directory hides everything below it. So a link (or a file) at a parent path means
    the path does not exist there: in the container a lookup would follow the link to
    somewhere else in the container, which the side-effect walk sees on its own. Nothing
    here follows a link.
    """
    parts = [p for p in path.split("/") if p and p != "."]
    if not parts or ".." in parts:
        return None
    # Only two levels are open at a time (one directory per layer each): a deep path in the
    # image costs time, never one descriptor per level.
    level = _open_layers(lowers)
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            top, below = _merged_step(level, name, enter=not last)
            if top is not None and last:
                return _state_at(top[0], name, top[1], budget, overlay=True)[0]
            _close_all(level)
            level = below
            if top is None or not stat.S_ISDIR(top[1].st_mode):
                return None
        return None
    finally:
        _close_all(level)


def _open_layers(lowers: tuple[Path, ...]) -> list[int]:
    level: list[int] = []
    try:
        for lower in lowers:
            try:
                level.append(os.open(lower, _DIR_FLAGS))
            except OSError:
                continue
    except BaseException:
        _close_all(level)
        raise
    return level


def _merged_step(
    level: list[int], name: str, *, enter: bool
) -> tuple[tuple[int, os.stat_result] | None, list[int]]:
    """`name` in the merged directories `level` (top layer first): the topmost entry (its
    directory descriptor and lstat), and with `enter` the directories merged under it."""
    top: tuple[int, os.stat_result] | None = None
    below: list[int] = []
    try:
        for dfd in level:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            if _is_whiteout(st):
                break
            if top is None:
                top = (dfd, st)
            if not stat.S_ISDIR(st.st_mode) or not enter:
                break  # a non-directory hides what is below; else only the top's mode matters
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
            except OSError:
                break
            below.append(sub)
            if _opaque(sub):
                break
    except BaseException:
        _close_all(below)
        raise
    return top, below


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    fds.clear()


# --- walks ------------------------------------------------------------------------------


def walk_tree(
    root: Path | int,
    prefix: str,
    *,
    overlay: bool = False,
    skip: frozenset[str] = frozenset(),
    include_root: bool = False,
) -> dict[str, Entry]:
    """Entries below `root` (a host path, or a directory descriptor), keyed `prefix` +
    relative path. No link is followed, at the root or below it. `overlay`: whiteouts are
    `deleted` and opaque directories marked, as in a writable layer. Paths in `skip` are
    listed but not entered. `include_root`: the root's own entry too, keyed `prefix`.

    The engine's own files (docker-init, ~0.7 MB) are not hashed on every case: their stat
    identity stands in, which still changes if anything rewrites them.
    """
    states = walk_states(root, prefix, overlay=overlay, skip=skip, include_root=include_root)
    return {p: s[0] for p, s in states.items()}


def walk_states(
    root: Path | int,
    prefix: str,
    *,
    overlay: bool = False,
    skip: frozenset[str] = frozenset(),
    include_root: bool = False,
    meta: dict[str, Meta] | None = None,
) -> dict[str, State]:
    """Like `walk_tree`, with owner, group and device number; `include_root`: the root's
    own state too, keyed `prefix`; `meta`: filled with every entry's `Meta`."""
    if isinstance(root, int):
        top = os.open(".", _DIR_FLAGS & ~os.O_NOFOLLOW, dir_fd=root)
    else:
        top = os.open(root, _DIR_FLAGS)
    out: dict[str, State] = {}
    base = prefix.rstrip("/")
    walk = _Walk(out, Budget(), overlay=overlay, skip=skip, meta=meta)
    try:
        if include_root:
            st = os.fstat(top)
            out[prefix] = _dir_state(top, st, overlay)
            if meta is not None:
                meta[prefix] = meta_of(top, st)
        walk.run(top, base)
    finally:
        os.close(top)
    if walk.cut:
        out[cut_marker(base, walk.cut)] = (("other", 0, 0, walk.cut, ""), 0, 0, 0)
    return out


def cut_marker(base: str, why: str) -> str:
    """The path of the entry that says a walk below `base` stopped early, and why. Its entry
    (type `other`, digest `why`) is one no real file has, so a cut side always differs from
    one that was not cut, and the stored changes name it."""
    return f"{base}/<{why}>"


@dataclass
class _Dir:
    """A directory being walked: its path, identity, and subdirectories still to enter
    (with their lstat), smallest name last."""

    path: str
    identity: tuple[int, int]
    todo: list[tuple[str, os.stat_result]]


class _Walk:
    """One walk, depth first in sorted order, without recursion and with at most two
    directories open below the root: a directory is listed (its other entries recorded),
    left, and reopened through `..` (checked to be the same directory) to enter its next
    subdirectory. Entries are reserved when their directory is listed: a listing that does
    not fit in what is left ends the walk, so the same tree always keeps the same entries."""

    def __init__(
        self,
        out: dict[str, State],
        budget: Budget,
        *,
        overlay: bool,
        skip: frozenset[str],
        meta: dict[str, Meta] | None = None,
    ) -> None:
        self.out = out
        self.meta = meta
        self.budget = budget
        self.overlay = overlay
        self.skip = skip
        self.entries_left = MAX_ENTRIES
        self.chars_left = MAX_PATH_CHARS
        self.kept = 0
        self.cut = ""  # why the walk stopped early, if it did

    def run(self, top: int, base: str) -> None:
        stack = [_Dir(base, dir_identity(top), self._list(top, base))]
        cur = top  # the directory of stack[-1]
        try:
            while stack and not self.cut:
                here = stack[-1]
                if not here.todo:
                    stack.pop()
                    if stack:
                        child, cur = cur, top  # _up closes it, whatever happens
                        cur = self._up(child, top, stack)
                    continue
                name, st = here.todo.pop()
                entered = self._enter(cur, here.path, name, st)
                if entered is not None:
                    fd, sub = entered
                    if cur != top:
                        os.close(cur)
                    cur = fd
                    stack.append(sub)
        finally:
            if cur != top:
                os.close(cur)

    def _up(self, child: int, top: int, stack: list[_Dir]) -> int:
        """The directory of stack[-1], the parent of `child` (closed here): `top`, or `..`
        checked to be that very directory; if it is not, the walk is cut (`top` is given)."""
        try:
            if len(stack) == 1:
                return top
            parent = os.open("..", _DIR_FLAGS, dir_fd=child)
        except OSError:
            self.cut = "walk cut: a directory could not be reopened"
            return top
        finally:
            os.close(child)
        if dir_identity(parent) == stack[-1].identity:
            return parent
        os.close(parent)
        self.cut = "walk cut: a directory moved"  # while walked: something still runs
        return top

    def _take(self, path: str) -> bool:
        """Whether `path` still fits in the walk's bound on path characters."""
        self.chars_left -= len(path)
        if self.chars_left < 0:
            self.cut = f"walk cut at {self.kept} entries"
            return False
        self.kept += 1
        return True

    def _names(self, dfd: int) -> list[str]:
        """The names in `dfd`, sorted, if they fit in the entries left (else the walk is
        cut). Only as many as could fit are held at once, however big the directory."""
        try:
            with os.scandir(dfd) as it:
                names = heapq.nsmallest(self.entries_left + 1, (e.name for e in it))
        except OSError:
            return []
        if len(names) > self.entries_left:
            self.cut = f"walk cut at {self.kept} entries"
            return []
        self.entries_left -= len(names)
        return names

    def _list(self, dfd: int, base: str) -> list[tuple[str, os.stat_result]]:
        """Record every entry of `dfd` but its subdirectories, which are returned (with
        their lstat) to be entered, smallest name last."""
        subdirs: list[tuple[str, os.stat_result]] = []
        for name in self._names(dfd):
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                subdirs.append((name, st))
                continue
            path = f"{base}/{name}"
            if not self._take(path):
                return []
            if path in ENGINE_NOISE and stat.S_ISREG(st.st_mode):
                identity = f"stat:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
                entry = ("file", stat.S_IMODE(st.st_mode), st.st_size, identity, "")
                self.out[path] = (entry, st.st_uid, st.st_gid, 0)
            else:
                self.out[path] = _state_at(dfd, name, st, self.budget, overlay=self.overlay)
            if self.meta is not None:
                self.meta[path] = meta_at(dfd, name, st)
        subdirs.reverse()
        return subdirs

    def _enter(self, dfd: int, base: str, name: str, st: os.stat_result) -> tuple[int, _Dir] | None:
        """Record subdirectory `name` of `dfd` and list it; its descriptor and its walk
        state if it has subdirectories to enter, else None (and it is closed)."""
        path = f"{base}/{name}"
        if not self._take(path):
            return None
        try:
            sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
        except OSError:
            self.out[path] = (("dir", stat.S_IMODE(st.st_mode), 0, "unreadable", ""),
                              st.st_uid, st.st_gid, 0)  # fmt: skip
            if self.meta is not None:
                self.meta[path] = meta_at(dfd, name, st)
            return None
        try:
            sst = os.fstat(sub)
            if (sst.st_dev, sst.st_ino) != (st.st_dev, st.st_ino):
                os.close(sub)  # replaced between the two calls: something still runs
                return None
            self.out[path] = _dir_state(sub, sst, self.overlay)
            if self.meta is not None:
                self.meta[path] = meta_of(sub, sst)
            todo = [] if path in self.skip else self._list(sub, path)
        except BaseException:
            os.close(sub)
            raise
        if not todo:
            os.close(sub)
            return None
        return sub, _Dir(path, (sst.st_dev, sst.st_ino), todo)


def state_of(dfd: int, name: str, *, rename: str = "") -> State | None:
    """The state of `name` in directory `dfd` (never followed if a link), or None.

    `rename`: the container's host name, hashed as `<hostname>` in a file's content. The
    engine writes it into the container's /etc/hostname and it differs between the oracle's
    and the delivery's containers, so the same write must give the same digest on both.
    """
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return None
    return _state_at(dfd, name, st, Budget(), rename=rename)


def meta_of(fd: int, st: os.stat_result) -> Meta:
    """The `Meta` of the file open as `fd` (readable, not O_PATH), whose fstat is `st`."""
    return (st.st_mtime_ns, st.st_ctime_ns, _xattrs_digest(fd))


def meta_at(dfd: int, name: str, st: os.stat_result) -> Meta:
    """The `Meta` of `name` in directory `dfd`, whose lstat is `st`; a link is not followed
    (its xattrs are read through the directory's descriptor, never a path of the box)."""
    return (st.st_mtime_ns, st.st_ctime_ns, _xattrs_digest(f"/proc/self/fd/{dfd}/{name}"))


def _xattrs_digest(target: int | str) -> str:
    """sha256 of the names and values of every extended attribute of `target` (a readable
    descriptor, or a path whose last component is not followed)."""
    h = hashlib.sha256()
    try:
        if isinstance(target, int):
            names = os.listxattr(target)
        else:
            names = os.listxattr(target, follow_symlinks=False)
        for name in sorted(names):
            if isinstance(target, int):
                value = os.getxattr(target, name)
            else:
                value = os.getxattr(target, name, follow_symlinks=False)
            raw = os.fsencode(name)
            h.update(b"%d:%s%d:%s" % (len(raw), raw, len(value), value))
    except OSError as err:
        if err.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return ""  # a file system without xattrs: nothing a case could set either
        return "unreadable"
    return h.hexdigest()


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(fd: int) -> bool:
    try:
        return os.getxattr(fd, "trusted.overlay.opaque") == b"y"
    except OSError:
        return False


def _dir_state(fd: int, st: os.stat_result, overlay: bool) -> State:
    opaque = "opaque" if overlay and _opaque(fd) else ""
    return (("dir", stat.S_IMODE(st.st_mode), 0, opaque, ""), st.st_uid, st.st_gid, 0)


def _state_at(
    dfd: int,
    name: str,
    st: os.stat_result,
    budget: Budget,
    *,
    overlay: bool = False,
    rename: str = "",
) -> State:
    """The state of non-directory `name` in directory `dfd`, whose lstat is `st`."""
    mode = stat.S_IMODE(st.st_mode)
    owner = (st.st_uid, st.st_gid)
    if overlay and _is_whiteout(st):
        return (("deleted", 0, 0, "", ""), 0, 0, 0)
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=dfd)
        except OSError:
            target = "<unreadable>"
        return (("link", mode, 0, "", target), *owner, 0)
    if stat.S_ISDIR(st.st_mode):
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
        except OSError:
            return (("dir", mode, 0, "", ""), *owner, 0)
        try:
            return _dir_state(fd, st, overlay)
        finally:
            os.close(fd)
    if stat.S_ISREG(st.st_mode):
        digest = _hash_at(dfd, name, st, budget, rename=rename)
        return (("file", mode, st.st_size, digest, ""), *owner, 0)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        # Named by its number, never opened: `mv /dev/zero /dev/null` is a change.
        kind = "char" if stat.S_ISCHR(st.st_mode) else "block"
        dev = f"{kind} {os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        return (("other", mode, 0, dev, ""), *owner, st.st_rdev)
    return (("other", mode, 0, "", ""), *owner, 0)


def _hash_at(dfd: int, name: str, st: os.stat_result, budget: Budget, *, rename: str) -> str:
    """sha256 of regular file `name`, read through a descriptor that cannot be a link.

    Up to HASH_CAP bytes: a longer file's digest is `<sha256 of its first HASH_CAP bytes>`
    `:first<HASH_CAP>of<size>`, so equal digests still mean equal sizes. Once the walk has
    hashed WALK_HASH_BUDGET bytes, a file is named `unhashed:<size>`. `rename`: the
    container's host name, hashed as `<hostname>` (see `state_of`).
    """
    want = min(st.st_size, HASH_CAP)
    if want > budget.left:
        return f"unhashed:{st.st_size}"
    try:
        # O_NOFOLLOW: a link swapped in after the lstat is not opened. O_NONBLOCK: neither
        # is a FIFO swapped in. fstat: the file opened is the one that was looked at.
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
            dir_fd=dfd,
        )  # fmt: skip
    except OSError:
        return "unreadable"
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            return "unreadable"
        h = hashlib.sha256()
        read = 0
        data = bytearray()
        while read < want:
            block = os.read(fd, min(1 << 20, want - read))
            if not block:
                break
            read += len(block)
            if rename:
                data += block
            else:
                h.update(block)
        budget.left -= read
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    if rename:
        h.update(bytes(data).replace(rename.encode(), b"<hostname>"))
    if st.st_size > HASH_CAP:
        return f"{h.hexdigest()}:first{HASH_CAP}of{st.st_size}"
    return h.hexdigest()
