"""Case boxes seen from inside, for engines whose layers this host cannot read (remote ones).

The engine's `/changes` costs ~0.3 s a call and says only which paths changed; a manifest
made by the image's own `python3` is the delivery's code judging itself. Instead, our own
static tool (`sandbox/assets/icae-walk.c`, built here with `gcc -static`) runs in the box,
from a read-only volume of the engine mounted at /dev/.icae beside the static init and
busybox the box runs as its keepalive (`keepalive.py`).

What it proves, and why a case cannot forge it:

- It is mode 0111: the case (root, no capabilities) can run it but not read it, so the
  kernel makes it non-dumpable at exec — no ptrace, no /proc/<pid>/mem, no borrowed fds.
  It runs no program of the image. The volume is read-only in every case box.
- Before it looks, it SIGKILLs every process but the box's init and keepalive, until none
  is alive (a fork bomb is bounded by the pids limit); what was alive is reported, and a
  box where anything was is never reused. Nothing of the case then runs while it walks.
- It walks the whole root without following a link (skipping /proc, /sys and its own
  folder) and hashes each regular file whose ctime is at or after the box's baseline: every
  change to a file sets its ctime to now, and nothing without CAP_SYS_TIME sets it back. A
  file not hashed is one no one touched since the box was filled.
- It reads the SysV IPC tables and the cgroup's OOM and pids-limit counters from inside the
  box's own namespaces, and reports the init's and keepalive's pid and start time: the same
  pair names the same process, and that process (non-dumpable too) cannot be taken over.

So a box is reused when the walk after a case equals its baseline outside the work
directory (a tmpfs, emptied by the tool after its walk), nothing was left running, the
counters did not move, and the same init and keepalive run — the local path's proofs, made
inside. Engines of another architecture, or hosts without gcc's static libc, keep the
`/changes` path.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import io
import logging
import os
import platform
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import aiodocker

from icae_tui.errors import BoxError
from icae_tui.sandbox.base import ExecResult, Role
from icae_tui.sandbox.docker.containers import Container, labels_for
from icae_tui.sandbox.docker.hostview import HASH_CAP
from icae_tui.sandbox.docker.keepalive import KEEPALIVE_DIR, compile_static, static_binaries
from icae_tui.sandbox.effects import Change, Entry

log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parent.parent / "assets" / "icae-walk.c"
WALKER = f"{KEEPALIVE_DIR}/walk"
VOLUME_PREFIX = "icae-tools-"
VOLUME_LABEL = "icae.tools"
COMPLETE = "complete"  # written last into the volume: its files are all there
WALK_CAP = 64 * 1024 * 1024  # bytes of a walk's report; ~200,000 entries fit
WALK_TIMEOUT_S = 120.0
MAX_LISTED = 64  # the walker's -e paths
FIELDS = 9  # per entry: path kind mode uid gid size fresh digest target

# kind, mode, uid, gid, size, fresh (ctime at or after the baseline), digest, link target
Record = tuple[str, int, int, int, int, bool, str, str]


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int
    state: str
    ppid: int = 0


@dataclass
class Look:
    """One report of the tool: the box's processes, counters and paths. A baseline lists
    every path; a later look (a delta) lists what changed, and `Inside.again` rebuilds the
    whole tree from the baseline, with the paths it `touched`."""

    alive: int = 0  # processes other than init and the kept, alive when it started
    others: list[Proc] = field(default_factory=list)  # the first of them
    left: int = 0  # alive after its kill rounds
    zombies: int = 0
    procs: str = ""  # init and the kept: pid:start:state, comma-separated
    threshold: str = ""
    sysv: int = 0
    oom: int = 0
    pids_max: int = 0
    records: dict[str, Record] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)  # paths that may differ from the baseline
    unfresh: int = 0  # paths not fresh, and the sum of their records' hashes (mod 2⁶⁴)
    unfresh_sum: int = 0
    failed: bool = False  # a directory could not be read
    reset: str = ""  # "", "ok" or "failed"

    def entries(self, paths: set[str] | None = None) -> dict[str, Entry]:
        """As `sandbox.effects` knows them; only `paths` when given."""
        records = self.records
        if paths is not None:
            records = {p: records[p] for p in paths if p in records}
        return {p: (r[0], r[1], r[4], r[6], r[7]) for p, r in records.items()}


def record_hash(path: str, r: Record) -> int:
    """As the tool sums it: the first 8 bytes of the sha256 of the fields as printed, the
    digest left empty (only a baseline has every file's)."""
    fields = (
        os.fsencode(path), r[0].encode(), str(r[1]).encode(), str(r[2]).encode(),
        str(r[3]).encode(), str(r[4]).encode(), b"1" if r[5] else b"0", b"",
        os.fsencode(r[7]),
    )  # fmt: skip
    return int.from_bytes(
        hashlib.sha256(b"".join(f + b"\0" for f in fields)).digest()[:8], "little"
    )


def parse_look(data: bytes) -> Look:
    """The tool's NUL-separated report; BoxError when it is not one, or was cut short."""
    parts = data.split(b"\0")
    if len(parts) < 2 or parts[0] != b"ICAEWALK1" or parts[-2:] != [b"done", b""]:
        raise BoxError("the box's walk did not complete (its report is cut short)")
    look = Look()
    i = 1
    try:
        while parts[i] != b"entries":
            key, value = parts[i].decode(), parts[i + 1].decode()
            i += 2
            if key == "others":
                look.others = [_proc(p) for p in value.split(",") if p]
            elif key in ("procs", "t"):
                setattr(look, "procs" if key == "procs" else "threshold", value)
            elif key in ("alive", "left", "zombies", "sysv", "oom"):
                setattr(look, key, int(value))
            elif key == "pidsmax":
                look.pids_max = int(value)
        i += 1
        while parts[i] != b"end":
            f = parts[i : i + FIELDS]
            path = os.fsdecode(f[0])  # not UTF-8: surrogate-escaped, like the host's walks
            look.records[path] = (
                f[1].decode(), int(f[2]), int(f[3]), int(f[4]), int(f[5]), f[6] == b"1",
                f[7].decode(), os.fsdecode(f[8]),
            )  # fmt: skip
            i += FIELDS
        if int(parts[i + 1]) != len(look.records):
            raise BoxError("the box's walk reported a path twice")
        i += 2
        while parts[i] != b"done":
            key, value = parts[i].decode(), parts[i + 1].decode()
            i += 2
            if key == "failed":
                look.failed = value != "0"
            elif key == "reset":
                look.reset = value
            elif key == "unfresh":
                look.unfresh = int(value)
            elif key == "sum":
                look.unfresh_sum = int(value)
    except (IndexError, ValueError, UnicodeDecodeError) as err:
        raise BoxError(f"the box's walk report is malformed: {err}") from err
    return look


def _proc(text: str) -> Proc:
    pid, start, state, *ppid = text.split(":")
    return Proc(int(pid), int(start), state, int(ppid[0]) if ppid else 0)


# --- the tools on this host, then on the engine -------------------------------------------


@dataclass(frozen=True)
class Tools:
    blobs: dict[str, bytes]  # init, busybox, walk

    @property
    def tag(self) -> str:
        digests = sorted(hashlib.sha256(b).hexdigest() for b in self.blobs.values())
        return hashlib.sha256("".join(digests).encode()).hexdigest()[:16]


@functools.cache
def host_tools() -> Tools | None:
    """The static init and busybox with the walker built here, or None (no gcc or static
    libc, no static tini/busybox): then remote boxes take the `/changes` path."""
    blobs = static_binaries()
    walker = compile_static(SOURCE)
    if blobs is None or walker is None:
        log.info("no static tools for in-box walks (gcc or static tini/busybox missing)")
        return None
    blobs["walk"] = walker
    return Tools(blobs)


_volumes: set[tuple[str, str]] = set()
_locks: dict[tuple[str, str, int], asyncio.Lock] = {}  # a lock serves one event loop


async def tools_volume(docker: aiodocker.Docker, image: str, *, run_id: str) -> str | None:
    """The engine's volume holding our tools (made once per engine and tools), or None when
    they cannot serve there (none built here, or the engine runs another architecture)."""
    tools = await asyncio.to_thread(host_tools)
    if tools is None:
        return None
    info = await docker.system.info()
    if info.get("Architecture") not in (platform.machine(), None):
        log.info("engine is %s, the tools %s: no in-box walks", info.get("Architecture"),
                 platform.machine())  # fmt: skip
        return None
    name = VOLUME_PREFIX + tools.tag
    key = (str(docker.docker_host), name)
    async with _locks.setdefault((*key, id(asyncio.get_running_loop())), asyncio.Lock()):
        if key not in _volumes:
            await _fill_volume(docker, image, name, tools, run_id=run_id)
            _volumes.add(key)
    return name


async def _fill_volume(
    docker: aiodocker.Docker, image: str, name: str, tools: Tools, *, run_id: str
) -> None:
    """Through a container that is created, never started, with the volume mounted: the
    archive API reaches a volume of a stopped container. The marker goes in last."""
    await docker.volumes.create({"Name": name, "Labels": {VOLUME_LABEL: tools.tag}})
    config: dict[str, Any] = {
        "Image": image,
        "Cmd": ["true"],
        "Labels": labels_for(run_id, Role.BUILD, 300),
        "NetworkDisabled": True,
        "HostConfig": {
            "NetworkMode": "none",
            "Mounts": [{"Type": "volume", "Source": name, "Target": "/icae-tools"}],
        },
    }
    helper = Container(docker, await docker.containers.create(config))
    try:
        with contextlib.suppress(aiodocker.DockerError):
            await helper.raw.get_archive(f"/icae-tools/{COMPLETE}")
            return  # filled before, by us or a console like us
        await helper.raw.put_archive("/icae-tools", _tar(tools.blobs, mode=0o111))
        await helper.raw.put_archive("/icae-tools", _tar({COMPLETE: b""}, mode=0o444))
    finally:
        await helper.remove()


def _tar(files: dict[str, bytes], *, mode: int) -> bytes:
    """Our binaries go in mode 0111: run, never read (see `keepalive.py`)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# --- looking ------------------------------------------------------------------------------


def pack_fixtures(files: dict[str, str]) -> bytes:
    """Fixtures as the walker's `-x` reads them: `D` path NUL for a folder, `F` path NUL size
    NUL bytes for a file, paths relative to the work directory, parents first. A path that
    leaves the work directory is refused."""
    out = bytearray()
    made: set[str] = set()
    for rel, text in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"fixture path {rel!r} leaves the work directory")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder not in made:
                made.add(folder)
                out += b"D" + os.fsencode(folder) + b"\0"
        data = text.encode()
        out += b"F" + os.fsencode("/".join(parts)) + b"\0" + str(len(data)).encode() + b"\0"
        out += data
    return bytes(out)


# Fixtures small enough travel as one argument (the kernel takes up to 128 KiB in one) of
# the walker, which unpacks them and then execs the case by the image's PATH with the
# environment untouched: no round trip of their own. Larger ones take an exec of their own.
FIXTURES_IN_ARGV = 96 * 1024
UNPACK_FAILED = 125
UNPACK_FAILED_LINE = b"icae: the fixtures could not be unpacked"


def fixtures_prefix(fixtures: dict[str, str], workdir: str) -> list[str] | None:
    """Argv that unpacks `fixtures` into `workdir`, then execs what follows it. None when
    they are too large for one argument."""
    packed = base64.b64encode(pack_fixtures(fixtures)).decode()
    if len(packed) > FIXTURES_IN_ARGV:
        return None
    return [WALKER, "-x", workdir, packed, "--"]


def fixtures_failed(res: ExecResult) -> bool:
    """The walker could not unpack (the case then never ran)."""
    return res.exit_code == UNPACK_FAILED and res.stderr.rstrip().endswith(UNPACK_FAILED_LINE)


async def unpack(c: Container, fixtures: dict[str, str], workdir: str) -> None:
    """Fixtures into the work directory by our walker, from its stdin (the archive API
    cannot reach a tmpfs: it writes beneath the mount)."""
    res = await c.exec(
        [WALKER, "-X", workdir], stdin=pack_fixtures(fixtures), timeout_s=60, in_box_timeout=False
    )
    if res.exit_code != 0:
        why = res.stderr.decode(errors="replace")[-300:]
        raise BoxError(f"fixtures into {c.id[:12]} failed ({res.exit_code}): {why}")


async def look(
    c: Container,
    *,
    threshold: str = "",
    keep: tuple[int, ...] = (),
    kill: bool = False,
    reset: str = "",
    delta: bool = False,
    wait: bool = False,
    hash_all: bool = False,
    listed: tuple[str, ...] = (),
) -> Look:
    """Run the walker in the box; BoxError when it could not run or report."""
    argv = [
        WALKER,
        *(["-K"] if kill else []),
        *(["-d"] if delta else []),
        *(["-H"] if hash_all else []),
        *(["-w"] if wait else []),
    ]
    for pid in keep:
        argv += ["-k", str(pid)]
    argv += ["-t", threshold] if threshold else []
    for path in listed:
        argv += ["-e", path]
    argv += ["-r", reset] if reset else []
    res = await c.exec(
        argv, timeout_s=WALK_TIMEOUT_S, cap_bytes=WALK_CAP,
        kill_after_bytes=WALK_CAP, in_box_timeout=False, wait_exit=False,
    )  # fmt: skip
    if res.overflowed:
        raise BoxError(f"the walk of {c.id[:12]} is past {WALK_CAP} bytes")
    if res.timed_out:
        raise BoxError(f"the walk of {c.id[:12]} took past {WALK_TIMEOUT_S:g} s")
    try:
        return parse_look(res.stdout)  # its last field says it completed: no exit code asked
    except BoxError as err:
        why = res.stderr.decode(errors="replace")[-300:]
        raise BoxError(f"{err} ({c.id[:12]}{': ' + why if why else ''})") from err


@dataclass
class Inside:
    """A box's baseline, taken once its keepalive runs: what every later look is rebuilt
    from and must match."""

    base: Look
    keepalive: int  # its pid
    hashes: dict[str, int] = field(default_factory=dict)  # of the paths not fresh
    children: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.hashes and self.children:  # shared with a twin (`twin`)
            return
        hash_them = not self.hashes
        for path, r in self.base.records.items():
            if hash_them and not r[5]:
                self.hashes[path] = record_hash(path, r)
            if path != "/":
                parent = path.rpartition("/")[0] or "/"
                self.children.setdefault(parent, []).append(path)
        if (self.base.unfresh, self.base.unfresh_sum) != (
            len(self.hashes),
            _sum(self.hashes.values()),
        ):
            raise BoxError("the box's baseline walk does not add up (a tool of another build?)")

    async def again(
        self,
        c: Container,
        *,
        kill: bool = False,
        reset: str = "",
    ) -> Look:
        """A later look: a delta against this baseline's threshold, keeping its keepalive,
        rebuilt into the whole tree (and checked against the tool's count and sum)."""
        delta = await look(
            c, threshold=self.base.threshold, keep=(self.keepalive,), kill=kill, reset=reset,
            delta=True,
        )  # fmt: skip
        return self.rebuild(delta)

    def rebuild(self, delta: Look) -> Look:
        base = self.base.records
        records, touched = dict(base), set(delta.records)
        for path, r in delta.records.items():
            if r[0] == "dir" and r[5]:  # a fresh folder is listed whole: drop what it had
                for gone in self._below(path):
                    records.pop(gone, None)
                    touched.add(gone)
        records.update(delta.records)
        count, total = len(self.hashes), sum(self.hashes.values())
        for path in touched:
            if path in self.hashes:
                count, total = count - 1, total - self.hashes[path]
            now = records.get(path)
            if now is not None and not now[5]:
                count, total = count + 1, total + record_hash(path, now)
        if (count, total % 2**64) != (delta.unfresh, delta.unfresh_sum):
            raise BoxError("a walk of the box does not add up with its baseline")
        delta.records, delta.touched = records, touched
        return delta

    @functools.cached_property
    def fresh(self) -> tuple[str, ...]:
        """Paths fresh in this baseline: a twin's delta must list them (fresh there or not),
        or what it sums would not be what the rebuild counts."""
        return tuple(p for p, r in self.base.records.items() if r[5])

    def twin(self, delta: Look, *, keepalive: int) -> Inside:
        """A box of the same image: its first look, a delta against its own start (what the
        engine made as it started may be fresh there, /dev/mqueue's whole-second times), is
        rebuilt on this tree; BoxError when it does not add up to the same one."""
        rebuilt = self.rebuild(delta)
        hashes, children = self.hashes, self.children
        if rebuilt.touched:
            hashes = dict(hashes)
            for path in rebuilt.touched:
                hashes.pop(path, None)
                r = rebuilt.records.get(path)
                if r is not None and not r[5]:
                    hashes[path] = record_hash(path, r)
            if any((p in rebuilt.records) != (p in self.base.records) for p in rebuilt.touched):
                children = {}  # a path came or went: the index is made again
        rebuilt.touched = set()
        return Inside(base=rebuilt, keepalive=keepalive, hashes=hashes, children=children)

    def _below(self, folder: str) -> list[str]:
        out, todo = [], list(self.children.get(folder, ()))
        while todo:
            path = todo.pop()
            out.append(path)
            todo.extend(self.children.get(path, ()))
        return out

    def predict(self, fixtures: dict[str, str], workdir: str) -> Look:
        """The box once `fixtures` are unpacked into its empty work directory, known
        without a walk: what the walker's `-x` writes, fresh, owned by root."""
        work = workdir.rstrip("/") or "/"
        records = dict(self.base.records)
        added: dict[str, Record] = {}
        if work in records:
            kind, mode, uid, gid, size, _fresh, digest, target = records[work]
            added[work] = (kind, mode, uid, gid, size, True, digest, target)
        for rel, text in fixtures.items():
            parts = PurePosixPath(rel).parts
            for i in range(1, len(parts)):
                added[f"{work}/{'/'.join(parts[:i])}"] = ("dir", 0o755, 0, 0, 0, True, "", "")
            data = text.encode()
            digest = hashlib.sha256(data[:HASH_CAP]).hexdigest()
            if len(data) > HASH_CAP:
                digest += f":first{HASH_CAP}of{len(data)}"
            added[f"{work}/{'/'.join(parts)}"] = ("file", 0o644, 0, 0, len(data), True, digest, "")
        records.update(added)
        return Look(threshold=self.base.threshold, records=records, touched=set(added))

    @property
    def expected_procs(self) -> list[tuple[int, int]]:
        """Init and keepalive, as pid and start time: the same pair is the same process."""
        (mine,) = [p for p in self.base.others if p.pid == self.keepalive]
        return [*((p.pid, p.start) for p in _procs(self.base.procs)), (mine.pid, mine.start)]


def _procs(text: str) -> list[Proc]:
    return [_proc(p) for p in text.split(",") if p]


# A process asleep, running or waiting on the disk; not stopped, traced, dead or a zombie.
_WORKING = frozenset("SRDI")


def _unfreshed(r: Record) -> Record:
    return (r[0], r[1], r[2], r[3], r[4], False, r[6], r[7])


def _sum(values: Iterable[int]) -> int:
    return sum(values) % 2**64


async def baseline(c: Container, twin: Inside | None = None) -> Inside:
    """The first look, once exactly one process besides the init runs — its child, the
    keepalive our init started (nothing else has run in the box yet). A full walk hashes
    every file; with `twin`, a box of the same image, a delta rebuilt on the twin's tree
    that adds up serves instead (see `Inside.twin`)."""
    if twin is not None and len(twin.fresh) > MAX_LISTED:
        twin = None  # too much was fresh in it to tell a twin
    base = await look(
        c, wait=True, delta=twin is not None, hash_all=twin is None,
        listed=twin.fresh if twin is not None else (),
    )  # fmt: skip
    live = [p for p in base.others if p.state not in ("Z", "X")]
    if not (base.alive == 1 and len(live) == 1 and live[0].ppid == 1 and not base.zombies):
        raise BoxError(f"the keepalive of {c.id[:12]} did not start alone: {base.others}")
    if twin is None:
        return Inside(base=base, keepalive=live[0].pid)
    try:
        return twin.twin(base, keepalive=live[0].pid)
    except BoxError as err:  # the trees differ: walk it all
        log.debug("no twin for %s: %s", c.id[:12], err)
        return await baseline(c)


def why_dirty(inside: Inside, after: Look, workdir: str) -> str:
    """Empty when the look after a case proves the box as it started (its work directory
    emptied by that look); else the first thing that differs."""
    base = inside.base
    if after.alive or after.left or after.zombies:
        return "a process was left behind"
    running = _procs(after.procs)
    if [(p.pid, p.start) for p in running] != inside.expected_procs:
        return "the init or the keepalive changed"
    if any(p.state not in _WORKING for p in running):
        return "the init or the keepalive was stopped"
    if after.oom != base.oom or after.pids_max != base.pids_max:
        return "memory or process limit hit"
    if after.sysv:
        return "SysV IPC objects exist"
    if after.failed or base.failed:
        return "a directory could not be walked"
    if after.reset != "ok":
        return "work directory could not be reset"
    work = workdir.rstrip("/") or "/"
    if work == "/":
        return "the work directory is the root"
    below_work = work + "/"
    for path in sorted(after.touched):
        if path.startswith(below_work):
            continue
        now, then = after.records.get(path), base.records.get(path)
        if path == work and now is not None and then is not None:
            now, then = _unfreshed(now), _unfreshed(then)  # its times move with its files
        if now != then:
            return f"{path} changed"
    return ""


def fold_deletions(diff: dict[str, Change]) -> dict[str, Change]:
    """A folder deleted is one change, as a layer's whiteout (the host path) and `/changes`
    tell it: what was inside it is not listed again."""
    gone = {p for p, (kind, _) in diff.items() if kind == "deleted"}
    return {
        p: c for p, c in diff.items()
        if not (c[0] == "deleted" and (p.rpartition("/")[0] or "/") in gone and p != "/")
    }  # fmt: skip
