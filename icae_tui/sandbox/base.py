"""What a run needs of an engine, and nothing about Docker: the sandbox protocol.

A `Sandbox` is one engine a run uses (a backend looked up by name, `sandbox/registry.py`).
It makes images (a task's agent and oracle images; an agent installed into its image),
`Box`es (an image started with limits and labels: the agent's box, the build gate's) and
`CasePool`s (one side of the differential: a case in a fresh state each time, its output,
limits hit and side effects), and cleans up after runs (reaping by label and age).

A `Box` runs commands with separate streams, stdin, a timeout and an output cap; takes and
gives files; runs an agent's step with what it left behind (processes, a full disk, its own
death); pauses and resumes; freezes into an image (the delivery); and is removed. The run's
two channels into the agent's box (clarification, model gateway) are host Unix sockets the
box sees at a path (`Channel`): what listens on them is the run's business, not the
sandbox's.

Everything here is plain data and protocols; the `docker` backend (`sandbox/docker/`) is
the one that knows an engine. Failures come back as `icae_tui.errors.SandboxError`s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from icae_tui.domain.outcome import SideOutcome
from icae_tui.sandbox.tree import TreeBounds, TreeRead

ProgressFn = Callable[[str], None]
OutputCallback = Callable[[str, bytes], Awaitable[None] | None]

DISPLAY_CAP = 64 * 1024  # characters of each stream a case's record keeps
DEFAULT_DISK_BYTES = 1024**3  # a box's writable layer
MAX_FILE_BYTES = 256 * 1024**2  # the largest file a box's process may write


def file_limit(disk_bytes: int) -> int:
    """A box's RLIMIT_FSIZE: an eighth of its disk, at most MAX_FILE_BYTES (see
    `sandbox/docker/disk.py` on why a disk limit caps the file size)."""
    return max(1, min(MAX_FILE_BYTES, disk_bytes // 8))


def full_at(disk_bytes: int) -> int:
    """Bytes of layer past which a box is full: one file (and the file system's bookkeeping,
    1/128 of the disk) short of its limit, so a write the kernel refused shows as full."""
    return disk_bytes - file_limit(disk_bytes) - disk_bytes // 128


def wrapper_script(entry: str) -> bytes:
    """`/usr/local/bin/<tool>` in any box: exec the side's entry with the case's arguments."""
    return f'#!/bin/sh\nexec {entry} "$@"\n'.encode()


class DiskGuard(StrEnum):
    QUOTA = "quota"  # the kernel refuses writes past the limit
    WATCH = "watch"  # the host watches the layer's size and stops the box when it is full
    NONE = "none"  # not bounded from here (a remote engine)


@dataclass(frozen=True)
class DiskBound:
    """A box's disk: its limit and how it is kept (`layer`: where a quota applies)."""

    limit: int
    guard: DiskGuard
    layer: Path | None = None

    @property
    def full_at(self) -> int:
        return full_at(self.limit)


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 512 * 1024 * 1024
    pids: int = 256
    nano_cpus: int = 1_000_000_000
    ttl_s: int = 3600
    file_bytes: int = MAX_FILE_BYTES  # largest file a process may write
    # Bytes its writable layer may take; None: unbounded (image builds).
    disk_bytes: int | None = DEFAULT_DISK_BYTES

    @property
    def fsize(self) -> int:
        """The file-size limit: a bounded disk caps it (a box is full within one file)."""
        if self.disk_bytes is None:
            return self.file_bytes
        return min(self.file_bytes, file_limit(self.disk_bytes))


class CasePath(StrEnum):
    """How a case box is seen after its case, best first. A pool takes the best its engine
    allows, never a better one than asked (tests and benchmarks ask for each)."""

    SUPERVISED = "supervised"  # as HOST, each case run by our supervisor already in the box
    HOST = "host"  # a local engine: layers, processes and /dev read from this host
    INSIDE = "inside"  # our static walker run in the box (any engine: `docker/inbox.py`)
    CHANGES = "changes"  # the engine's `/changes` and a manifest by the image's python3


class Role(StrEnum):
    """What a box is for: its label, and what the reaper and the tests look for."""

    AGENT = "agent"
    ORACLE = "oracle"
    DELIVERY = "delivery"
    BUILD = "build"  # the build gate, and image builds
    AGENT_INSTALL = "agent-install"
    TEST = "test"
    SANITIZER = "sanitizer"  # the task's own output sanitizer (evaluation/sanitizer.py)


class Network(StrEnum):
    NONE = "none"  # every box the agent or a case can touch
    REGISTRIES = "registries"  # installing an agent into its image: package registries only


@dataclass(frozen=True)
class Channel:
    """A host folder holding a run's Unix socket, seen in the box at `box_path`."""

    host_path: Path
    box_path: str


@dataclass(frozen=True)
class BoxSpec:
    image: str
    run_id: str
    role: Role
    limits: Limits = Limits()
    workdir: str = "/"
    channels: tuple[Channel, ...] = ()
    network: Network = Network.NONE
    hardened: bool = True  # every capability dropped (all but image builds)


@dataclass
class ExecResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_sha256: str = ""
    stderr_sha256: str = ""
    stdout_tail: bytes = b""
    stderr_tail: bytes = b""
    timed_out: bool = False
    truncated: bool = False
    overflowed: bool = False  # stopped at `kill_after_bytes`; the process may still run
    duration_s: float = 0.0


@dataclass
class StepOutcome:
    """An agent's step and what it left: the pids limit hit, processes left running (and
    killed, at the limit, so the next step can start), the box dead by its hand, its disk
    full (the bytes taken, or -1 when a watch stopped it before it could tell)."""

    result: ExecResult
    pids_capped: bool = False
    left_running: int = 0
    killed_left: bool = False
    died: bool = False
    disk_full: int | None = None


CASE_SHELL = ("sh", "-c")


def prep_failure(res: ExecResult) -> str:
    """How a case's prep line failed ("" when it did not): CLI-Tool-Bench fails the case."""
    if res.exit_code == 0 and not res.timed_out:
        return ""
    last = res.stderr.decode(errors="replace").strip().splitlines()[-1:]
    why = "timed out" if res.timed_out else f"exit {res.exit_code}"
    return f"{why}: {last[0][:200]}" if last else why


@dataclass(frozen=True)
class CaseCall:
    """One case on one side: what runs, with what, under which bounds."""

    command: str
    stdin: bytes | None
    timeout_s: float
    workdir: str
    files: dict[str, str] = field(default_factory=dict)  # fixtures, relative to workdir
    prep: str | None = None
    compare_cap: int = 4 * 1024 * 1024  # bytes of each stream kept for comparison
    output_limit: int = 64 * 1024 * 1024  # both streams together; past it the case stops
    ignore: tuple[str, ...] = ()  # side-effect globs the task ignores

    # A case's lines run under `sh -c`, as the task docs and CLI-Tool-Bench say (Debian's sh
    # is dash): not bash, whose extensions would make a case test the shell.
    @property
    def argv(self) -> list[str]:
        return [*CASE_SHELL, self.command]

    @property
    def prep_argv(self) -> list[str] | None:
        return None if self.prep is None else [*CASE_SHELL, self.prep]


@dataclass(frozen=True)
class TaskImages:
    agent: str
    oracle: str
    sanitizer: str | None = None  # the task's [sanitizer] runs in a box of this image


@dataclass
class ReapReport:
    containers: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    kept: int = 0


class Box(Protocol):
    """One started box of ours."""

    @property
    def id(self) -> str: ...

    @property
    def disk(self) -> DiskBound | None: ...

    async def exec(
        self,
        command: str | list[str],
        *,
        stdin: bytes | None = None,
        timeout_s: float = 60.0,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        on_output: OutputCallback | None = None,
        cap_bytes: int = 4 * 1024 * 1024,
        kill_after_bytes: int | None = None,
    ) -> ExecResult:
        """A command, stdout and stderr apart and byte-exact (up to `cap_bytes`), under a
        timeout enforced inside the box; past `kill_after_bytes` of output it is stopped
        (`overflowed`)."""
        ...

    async def step(
        self,
        command: str,
        *,
        timeout_s: float,
        workdir: str,
        env: dict[str, str],
        on_output: OutputCallback | None = None,
        cap_bytes: int = 4 * 1024 * 1024,
        kill_after_bytes: int | None = None,
        watch_processes: bool = True,
    ) -> StepOutcome:
        """An agent's step: the command, then what it left (`watch_processes`: the pids
        limit and leftover processes are looked at), the box's death and a full disk."""
        ...

    async def put_files(self, files: dict[str, bytes], *, mode: int = 0o644) -> None: ...

    async def read_file(self, path: str, limit: int) -> bytes | None:
        """A file's first `limit` bytes, None when there is no such file."""
        ...

    async def read_tree(
        self, path: str, bounds: TreeBounds, wanted: Callable[[str], bool]
    ) -> TreeRead | None:
        """The folder `path` as a bounded listing, with the first bytes of the files
        `wanted` names, read without running anything in the box and never following a
        link (`sandbox/tree.py`); None when there is no such folder."""
        ...

    async def pause(self) -> None: ...

    async def resume(self) -> None: ...

    async def died(self, *, hint: bool = True) -> bool:
        """Whether every process of the box ended (or is ending) without being told to."""
        ...

    async def revive(self) -> None:
        """Start a box that died again: its files as they were, new processes."""
        ...

    async def make_room(self, extra: int) -> None:
        """Room past the box's disk limit for the run's own files."""
        ...

    async def disk_full(self) -> int | None:
        """The bytes the box's layer takes when it is full, else None (not full, or not
        known from here)."""
        ...

    async def freeze(self, image: str, *, run_id: str, ttl_s: int) -> None:
        """Commit the box as `image`, a delivery of run `run_id` that the reaper may remove
        `ttl_s` after (or once its owner is gone); a half-made image is removed again."""
        ...

    async def remove(self) -> None:
        """Remove the box; what runs in it dies. Finishes even if cancelled meanwhile."""
        ...


class CasePool(Protocol):
    """One side of the differential (oracle or delivery): each case in a fresh state."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def run(self, call: CaseCall) -> SideOutcome:
        """The case, with its output, the limits it hit and its side effects. BoxError when
        the engine could not run or inspect it (the caller may retry)."""
        ...


class Sandbox(Protocol):
    """One engine, as a run uses it."""

    name: str

    @property
    def disk_guard(self) -> DiskGuard:
        """How this engine's boxes are kept to their disk."""
        ...

    async def close(self) -> None: ...

    async def ping(self) -> None:
        """EngineUnavailable when the engine no longer answers."""
        ...

    async def base_image(self, progress: ProgressFn = ..., *, name: str | None = None) -> str: ...

    async def task_images(self, task: Any, progress: ProgressFn = ...) -> TaskImages: ...

    async def agent_image(
        self, base: str, agent: str, version: str, lines: list[str], progress: ProgressFn,
        *, run_id: str,
    ) -> str:  # fmt: skip
        """The agent's image: `base` with the install lines run once (package registries
        reachable then, never later), reused by later runs."""
        ...

    async def create_box(self, spec: BoxSpec) -> Box: ...

    def case_pool(
        self, image: str, *, run_id: str, role: Role, size: int, limits: Limits, workdir: str,
        path: CasePath = CasePath.SUPERVISED,
    ) -> CasePool: ...  # fmt: skip

    async def remove_image(self, image: str) -> None: ...

    async def sweep(self) -> ReapReport:
        """Remove what dead or expired runs left (ours only, judged by their labels)."""
        ...

    async def remove_run_boxes(self, run_id: str) -> list[str]:
        """Every box labelled with this run, whatever its state."""
        ...

    def shell_argv(self, image: str, workdir: str) -> list[str]:
        """A command line that opens a shell in a throwaway box of `image`."""
        ...
