"""What a local engine lets us see of a container from the host, in well under a millisecond.

- its writable layer (overlay2 `UpperDir`): every path a process added, changed (copy-up)
  or deleted (a whiteout: a 0/0 character device) since the container started;
- its `/dev/shm`, when the container's IPC is `shareable` (a host folder);
- its pids and memory cgroups: how many processes run, and how many were OOM-killed.

With a remote engine none of this exists; `HostView.probe` returns None and callers fall
back to the engine's `/changes` plus an in-container manifest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

# Written by the engine itself, not by the program under test.
ENGINE_NOISE = frozenset({"/usr/sbin/docker-init", "/usr/sbin", "/usr"})

Entry = tuple[str, int, int, str, str]  # type, mode, size, sha256, link target


@dataclass(frozen=True)
class HostView:
    container_id: str
    upper: Path
    lowers: tuple[Path, ...]
    shm: Path | None
    pids_current: Path | None
    pids_events: Path | None
    oom_control: Path | None

    @classmethod
    def probe(cls, info: dict) -> HostView | None:
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

    # --- the writable layer -------------------------------------------------------------

    def in_lower(self, path: str) -> bool:
        rel = path.lstrip("/")
        return any(os.path.lexists(lower / rel) for lower in self.lowers)

    def layer(self) -> dict[str, Entry]:
        """Every entry of the writable layer by absolute path; whiteouts are `deleted`."""
        return walk_tree(self.upper, "/")


def process_state(pid: int) -> str:
    """One-letter state from /proc/<pid>/stat ('Z' zombie, 'X' dead, '' gone)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat_line.rpartition(")")[2].split()[0]


def walk_tree(root: Path, prefix: str) -> dict[str, Entry]:
    """Entries below `root`, keyed `prefix` + relative path; symlinks are never followed.

    The engine's own files (docker-init, ~0.7 MB) are not hashed on every case: their stat
    identity stands in, which still changes if anything rewrites them.
    """
    out: dict[str, Entry] = {}
    base = str(root)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            path = prefix.rstrip("/") + "/" + os.path.relpath(full, base)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if path in ENGINE_NOISE and stat.S_ISREG(st.st_mode):
                identity = f"stat:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
                out[path] = ("file", stat.S_IMODE(st.st_mode), st.st_size, identity, "")
                continue
            out[path] = _entry(full, st, hash_files=True)
    return out


def _entry(full: str, st: os.stat_result, *, hash_files: bool) -> Entry:
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return ("deleted", 0, 0, "", "")
    if stat.S_ISLNK(st.st_mode):
        return ("link", mode, 0, "", os.readlink(full))
    if stat.S_ISDIR(st.st_mode):
        opaque = ""
        try:
            if os.getxattr(full, "trusted.overlay.opaque") == b"y":
                opaque = "opaque"
        except OSError:
            pass
        return ("dir", mode, 0, opaque, "")
    if stat.S_ISREG(st.st_mode):
        digest = ""
        if hash_files:
            h = hashlib.sha256()
            try:
                # O_NOFOLLOW: a process swapping the file for a symlink between lstat and
                # open must not make us read a host file.
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                digest = h.hexdigest()
            except OSError:
                digest = "unreadable"
        return ("file", mode, st.st_size, digest, "")
    return ("other", mode, 0, "", "")
