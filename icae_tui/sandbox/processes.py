"""The `processes` backend: boxes as processes over temporary folders, for the unit tests.

UNSAFE — no isolation worth the name: a box's commands run as this host's processes (no
network, pid or resource limits), see the host's files, and only their writes are kept
apart. The registry refuses it unless ICAE_ALLOW_UNSAFE_BACKEND=1, which only the tests
set. What it is for: a `Run`'s phases, cancel and error paths tested in seconds, with the
same protocol (`sandbox/base.py`) as the `docker` backend.

How: an image is a folder of what it adds to the host's root; a box is a private mount
namespace (held by a keepalive) where an overlay of its own upper folder (the image's
files copied in) over the host's root is its root, and each command enters that namespace
and root (`nsenter -m -r`), under coreutils `timeout`. (Overlayfs refuses lower layers
nested in one another, and every folder here is under the host's root: hence a copy, not a
stack of layers; test images are small.) Freezing a box copies its upper folder as an
image. A case's side effects are its upper folder before and after. Needs root (mounts),
the util-linux `unshare` and `nsenter`, and an overlayfs kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import SideRun
from icae_tui.domain.task import Task
from icae_tui.errors import BoxError, ImageBuildError
from icae_tui.sandbox.base import (
    DISPLAY_CAP,
    Box,
    BoxSpec,
    CaseCall,
    CasePath,
    CasePool,
    DiskBound,
    DiskGuard,
    ExecResult,
    Limits,
    OutputCallback,
    ProgressFn,
    ReapReport,
    Role,
    StepOutcome,
    TaskImages,
    prep_failure,
    wrapper_script,
)
from icae_tui.sandbox.capture import DEFAULT_ENV, Capture, exec_result
from icae_tui.sandbox.effects import Change, Entry, FileChanges, to_file_changes
from icae_tui.sandbox.tree import TreeBounds, TreeRead, walk_folder

HOST_LAYER = "/"  # the bottom of every image: the host's root, read-only through the overlay
READ_CHUNK = 64 * 1024


def _slug(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16]


@dataclass
class _Image:
    name: str
    tree: Path | None  # what it adds to the host's root; None: the host's root itself


class ProcessBox:
    """A mount namespace whose root is an overlay of the box's upper folder over its image."""

    def __init__(
        self,
        sandbox: ProcessSandbox,
        folder: Path,
        keepalive: asyncio.subprocess.Process,
        holder: int,
    ) -> None:
        self.sandbox = sandbox
        self.folder = folder
        self.upper = folder / "upper"
        self._keepalive = keepalive
        self._holder = holder  # the pid whose mount namespace is the box's
        self._groups: set[int] = set()  # process groups of commands that may still run

    @property
    def id(self) -> str:
        return self.folder.name

    @property
    def disk(self) -> DiskBound | None:
        return None

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
        argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
        environment = [f"{k}={v}" for k, v in {**DEFAULT_ENV, **(env or {})}.items()]
        # The keepalive's root is the box's: `-r` takes it (a path given to nsenter would be
        # opened in this namespace, where the overlay is not mounted); the shell goes to
        # the working directory inside.
        full = [
            "nsenter", "-t", str(self._holder), "-m", "-r", "-w", "--", "/usr/bin/env", "-i",
            *environment, "/bin/sh", "-c", 'cd "$1" || exit 125; shift; exec "$@"', "sh",
            workdir or "/", "timeout", "-k", "2", f"{timeout_s:g}", *argv,
        ]  # fmt: skip
        started = time.monotonic()  # before `timeout` starts: its clock never runs ahead
        proc = await asyncio.create_subprocess_exec(
            *full, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self._groups.add(proc.pid)
        out, err = Capture(cap_bytes), Capture(cap_bytes)
        overflowed = watchdog_fired = False

        async def pump(stream: asyncio.StreamReader, capture: Capture, name: str) -> None:
            nonlocal overflowed
            while chunk := await stream.read(READ_CHUNK):
                capture.feed(chunk)
                if kill_after_bytes is not None and out.total + err.total > kill_after_bytes:
                    overflowed = True
                    _kill_group(proc.pid)  # now: the other stream ends with it
                    return
                if on_output is not None:
                    res = on_output(name, chunk)
                    if asyncio.iscoroutine(res):
                        await res

        assert proc.stdout is not None and proc.stderr is not None
        try:
            async with asyncio.timeout(timeout_s + 8):
                if stdin is not None and proc.stdin is not None:
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        proc.stdin.write(stdin)
                        await proc.stdin.drain()
                    proc.stdin.close()
                await asyncio.gather(
                    pump(proc.stdout, out, "stdout"), pump(proc.stderr, err, "stderr")
                )
                if not overflowed:
                    await proc.wait()
        except TimeoutError:
            watchdog_fired = True
        if overflowed or watchdog_fired:
            _kill_group(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()
        self._groups.discard(proc.pid)
        code = None if overflowed or watchdog_fired else proc.returncode
        entry_failed = f"nsenter: cannot open /proc/{self._holder}/".encode()
        if code == 1 and not out.total and bytes(err.data).startswith(entry_failed):
            # the command never started: the box could not be entered (its holder had
            # ended) — the engine's failure, a side to retry, never the program's answer
            first = bytes(err.data).splitlines()[0].decode(errors="replace")
            raise BoxError(f"box {self.id}: could not enter it ({first})")
        return exec_result(
            out, err, code, time.monotonic() - started, timeout_s=timeout_s,
            watchdog_fired=watchdog_fired, overflowed=overflowed,
        )  # fmt: skip

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
        res = await self.exec(
            command, timeout_s=timeout_s, workdir=workdir, env=env, on_output=on_output,
            cap_bytes=cap_bytes, kill_after_bytes=kill_after_bytes,
        )  # fmt: skip
        return StepOutcome(res, died=await self.died())

    def _path(self, path: str) -> Path:
        """`path` of the box, in its upper folder (where the box's writes go)."""
        rel = Path(path.lstrip("/"))
        if ".." in rel.parts:
            raise BoxError(f"{path!r} leaves the box")
        return self.upper / rel

    async def put_files(self, files: dict[str, bytes], *, mode: int = 0o644) -> None:
        """Written through the box's own root (its keepalive's, the mounted overlay): a
        folder new to the box made in its upper folder directly is not seen by the mount."""
        root = Path(f"/proc/{self._holder}/root")
        for path, data in files.items():
            target = root / self._path(path).relative_to(self.upper)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)

    async def read_file(self, path: str, limit: int) -> bytes | None:
        res = await self.exec(["head", "-c", str(limit), path], timeout_s=30, cap_bytes=limit)
        return res.stdout if res.exit_code == 0 else None

    async def read_tree(
        self, path: str, bounds: TreeBounds, wanted: Callable[[str], bool]
    ) -> TreeRead | None:
        folder = self._path(path)
        if not folder.is_dir() or folder.is_symlink():
            return None
        return await asyncio.to_thread(walk_folder, folder, bounds, wanted)

    async def pause(self) -> None:
        for group in list(self._groups):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGSTOP)

    async def resume(self) -> None:
        for group in list(self._groups):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGCONT)

    async def died(self, *, hint: bool = True) -> bool:
        return self._keepalive.returncode is not None

    async def revive(self) -> None:
        raise BoxError("a processes box that died stays dead")

    async def make_room(self, extra: int) -> None:
        return None

    async def disk_full(self) -> int | None:
        return None

    async def freeze(self, image: str, *, run_id: str, ttl_s: int) -> None:
        await self.sandbox.freeze_box(self, image)

    async def remove(self) -> None:
        """Everything in the box's mount namespace dies (a daemon that left its session
        too), then its folder goes."""
        self.sandbox.forget(self)
        for group in list(self._groups):
            _kill_group(group)
        _kill_namespace(self._holder)
        _kill_group(self._keepalive.pid)  # the keepalive and its `unshare`
        with contextlib.suppress(ProcessLookupError):
            await self._keepalive.wait()
        await asyncio.to_thread(shutil.rmtree, self.folder, True)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _kill_namespace(holder: int) -> None:
    """SIGKILL every process in `holder`'s mount namespace (but never our own)."""
    try:
        ns = os.stat(f"/proc/{holder}/ns/mnt").st_ino
    except OSError:
        return
    mine = os.stat("/proc/self/ns/mnt").st_ino
    if ns == mine:
        return
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry.name}/ns/mnt").st_ino == ns:
                os.kill(int(entry.name), signal.SIGKILL)


class ProcessSandbox:
    """Images and boxes under one temporary folder of this host."""

    name = "processes"

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "images").mkdir(parents=True, exist_ok=True)
        (root / "boxes").mkdir(parents=True, exist_ok=True)
        self._images: dict[str, _Image] = {}
        self._boxes: dict[str, tuple[ProcessBox, BoxSpec]] = {}

    @property
    def disk_guard(self) -> DiskGuard:
        return DiskGuard.NONE

    async def close(self) -> None:
        for box, _spec in list(self._boxes.values()):
            await box.remove()
        self._boxes.clear()

    async def ping(self) -> None:
        return None

    # --- images ---------------------------------------------------------------------------

    def _image(self, name: str) -> _Image:
        if name in self._images:
            return self._images[name]
        tree = self.root / "images" / _slug(name) / "tree"
        if not tree.is_dir():
            if name.startswith("icae-base:"):
                return _Image(name, None)  # the host's root is every image's base
            raise BoxError(f"no image {name!r}")
        self._images[name] = image = _Image(name, tree)
        return image

    async def base_image(self, progress: ProgressFn = lambda _m: None, *,
                         name: str | None = None) -> str:  # fmt: skip
        return name or "icae-base:host"

    async def _commit(self, box: ProcessBox, name: str) -> None:
        """The box's upper folder (its image's files and its own writes) as image `name`."""
        folder = self.root / "images" / _slug(name)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        await _copy_tree(box.upper, folder / "tree")
        self._images[name] = _Image(name, folder / "tree")

    async def _build(self, base: str, name: str, work: Any) -> str:
        box = await self.create(BoxSpec(image=base, run_id="image-build", role=Role.BUILD))
        try:
            await work(box)
            await self._commit(box, name)
        finally:
            await self.remove_box(box)
        return name

    async def task_images(self, task: Task, progress: ProgressFn = lambda _m: None) -> TaskImages:
        base = await self.base_image(progress, name=task.spec.image.base)
        agent = f"icae-agent-{task.id}:processes"
        oracle = f"icae-oracle-{task.id}:processes"

        async def setup(box: ProcessBox, lines: list[str], what: str) -> None:
            for line in lines:
                progress(f"{what}: $ {line}")
                res = await box.exec(line, timeout_s=600)
                if res.exit_code != 0:
                    tail = (res.stderr or res.stdout).decode(errors="replace")[-2000:]
                    raise ImageBuildError(f"{what}: `{line}` exited {res.exit_code}:\n{tail}")

        async def agent_work(box: ProcessBox) -> None:
            await setup(box, list(task.spec.image.setup), agent)
            ws, wd = task.spec.delivery.workspace, task.spec.cases.workdir
            await setup(box, [f"mkdir -p {ws} {wd}"], agent)

        spec = task.spec.oracle

        async def oracle_work(box: ProcessBox) -> None:
            assert spec is not None
            oracle_dir = Path(task.root) / "oracle"
            files = {
                f"{spec.path}/{p.relative_to(oracle_dir).as_posix()}": p.read_bytes()
                for p in sorted(oracle_dir.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts
            }
            await box.put_files(files)
            await setup(box, list(spec.install), oracle)
            wrapper = wrapper_script(spec.entry)
            await box.put_files({f"/usr/local/bin/{task.spec.interface.tool}": wrapper}, mode=0o755)

        await self._build(base, agent, agent_work)
        if spec is None:  # judged against the stored expected outputs: no oracle to build
            return TaskImages(agent=agent, oracle=agent)
        await self._build(agent, oracle, oracle_work)
        return TaskImages(agent=agent, oracle=oracle)

    async def agent_image(
        self, base: str, agent: str, version: str, lines: list[str], progress: ProgressFn,
        *, run_id: str,
    ) -> str:  # fmt: skip
        raise ImageBuildError(f"agent {agent}: the processes backend installs no agent")

    async def remove_image(self, image: str) -> None:
        self._images.pop(image, None)
        await asyncio.to_thread(shutil.rmtree, self.root / "images" / _slug(image), True)

    # --- boxes ----------------------------------------------------------------------------

    async def create_box(self, spec: BoxSpec) -> Box:
        return await self.create(spec)

    async def create(self, spec: BoxSpec) -> ProcessBox:
        """A box, typed as this backend's own (its folder, its upper layer)."""
        image = self._image(spec.image)
        folder = self.root / "boxes" / f"{spec.run_id}-{spec.role}-{secrets.token_hex(4)}"
        for part in ("upper", "work", "root"):
            (folder / part).mkdir(parents=True)
        if image.tree is not None:
            await _copy_tree(image.tree, folder / "upper")
        for channel in spec.channels:  # seen in the box as the run's socket folders
            (folder / "upper" / channel.box_path.lstrip("/")).mkdir(parents=True, exist_ok=True)
        lower = HOST_LAYER
        root = folder / "root"
        binds = "".join(
            f" && mount --bind {c.host_path} {root}{c.box_path}" for c in spec.channels
        )
        script = (
            f"mount -t overlay overlay -o lowerdir={lower},upperdir={folder / 'upper'},"
            f"workdir={folder / 'work'} {root} && mount --rbind /dev {root}/dev && "
            f"mount -t proc proc {root}/proc{binds} && "
            # `ready` from inside the new root: once it is read, the keepalive's root (what
            # each command's nsenter -r takes) is the box's, never the host's
            f"exec chroot {root} /bin/sh -c 'echo ready && exec sleep infinity'"
        )
        keepalive = await asyncio.create_subprocess_exec(
            "unshare", "-m", "--propagation", "private", "--fork", "sh", "-c", script,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        assert keepalive.stdout is not None and keepalive.stderr is not None
        line = await keepalive.stdout.readline()
        if line.strip() != b"ready":
            why = (await keepalive.stderr.read()).decode(errors="replace").strip()
            with contextlib.suppress(ProcessLookupError):
                keepalive.kill()
            shutil.rmtree(folder, ignore_errors=True)
            raise BoxError(f"a processes box of {spec.image}: {why or 'no namespace'}")
        holder = _child_of(keepalive.pid)
        box = ProcessBox(self, folder, keepalive, holder)
        self._boxes[box.id] = (box, spec)
        return box

    async def remove_box(self, box: ProcessBox) -> None:
        await box.remove()

    def forget(self, box: ProcessBox) -> None:
        self._boxes.pop(box.id, None)

    async def freeze_box(self, box: ProcessBox, image: str) -> None:
        await self._commit(box, image)

    def case_pool(
        self, image: str, *, run_id: str, role: Role, size: int, limits: Limits, workdir: str,
        path: CasePath = CasePath.SUPERVISED,
    ) -> CasePool:  # fmt: skip
        return ProcessCasePool(self, image, run_id=run_id, role=role)

    async def sweep(self) -> ReapReport:
        return ReapReport()

    async def remove_run_boxes(self, run_id: str) -> list[str]:
        removed = []
        for box, spec in list(self._boxes.values()):
            if spec.run_id == run_id:
                await self.remove_box(box)
                removed.append(box.id)
        return removed

    def shell_argv(self, image: str, workdir: str) -> list[str]:
        return ["bash", "-l"]


def _child_of(pid: int) -> int:
    """`unshare --fork` runs the script in its child: the namespace is that process's."""
    for _ in range(200):
        with contextlib.suppress(OSError):
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            if kids:
                return int(kids[0])
        time.sleep(0.005)  # the fork has not happened yet
    return pid


async def _copy_tree(source: Path, target: Path) -> None:
    """`cp -a`: overlay whiteouts (character devices) and xattrs kept."""
    proc = await asyncio.create_subprocess_exec("cp", "-a", f"{source}/.", str(target))
    if await proc.wait() != 0:
        raise BoxError(f"could not copy {source}")


def _walk(upper: Path) -> dict[str, Entry]:
    """A box's writes, by absolute path: whiteouts are deletions."""
    out: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(upper):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            st = path.lstat()
            key = "/" + path.relative_to(upper).as_posix()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                out[key] = ("deleted", 0, 0, "", "")
            elif stat.S_ISLNK(st.st_mode):
                out[key] = ("link", mode, 0, "", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[key] = ("dir", mode, 0, "", "")
            elif stat.S_ISREG(st.st_mode):
                out[key] = ("file", mode, st.st_size, hashlib.sha256(path.read_bytes()).hexdigest(), "")
            else:
                out[key] = ("other", mode, 0, "", "")
    return out


def _diff(before: dict[str, Entry], after: dict[str, Entry]) -> dict[str, Change]:
    out: dict[str, Change] = {}
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None or new[0] == "deleted":
            out[path] = ("deleted", old or ("deleted", 0, 0, "", ""))
        elif old is None:
            out[path] = ("added", new)
        elif not (new[0] == old[0] == "dir" and new[1] == old[1]):
            out[path] = ("modified", new)
    return out


@dataclass
class ProcessCasePool:
    """Each case in a new box of the side's image; nothing reused."""

    sandbox: ProcessSandbox
    image: str
    run_id: str
    role: Role
    boxes: list[ProcessBox] = field(default_factory=list)

    def __init__(self, sandbox: ProcessSandbox, image: str, *, run_id: str, role: Role) -> None:
        self.sandbox, self.image, self.run_id, self.role = sandbox, image, run_id, role

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def run(self, call: CaseCall) -> SideOutcome:
        spec = BoxSpec(image=self.image, run_id=self.run_id, role=self.role)
        box = await self.sandbox.create(spec)
        try:
            if call.files:
                await box.put_files(
                    {f"{call.workdir}/{p}": t.encode() for p, t in call.files.items()}
                )
            prep = ""
            if call.prep:
                prep = prep_failure(
                    await box.exec(call.prep_argv or [], workdir=call.workdir, timeout_s=30)
                )
            before = await asyncio.to_thread(_walk, box.upper)
            res = await box.exec(
                call.argv, stdin=call.stdin, workdir=call.workdir, timeout_s=call.timeout_s,
                cap_bytes=call.compare_cap, kill_after_bytes=call.output_limit,
            )  # fmt: skip
            after = await asyncio.to_thread(_walk, box.upper)
        finally:
            await self.sandbox.remove_box(box)
        changes: FileChanges = to_file_changes(
            _diff(before, after), workdir=call.workdir, ignore=call.ignore
        )

        def text(data: bytes) -> str:
            return data.decode("utf-8", errors="replace")[:DISPLAY_CAP]

        side = SideRun(
            exit_code=res.exit_code, stdout=text(res.stdout), stderr=text(res.stderr),
            stdout_bytes=res.stdout_bytes, stderr_bytes=res.stderr_bytes,
            stdout_sha256=res.stdout_sha256, stderr_sha256=res.stderr_sha256,
            timed_out=res.timed_out, overflowed=res.overflowed,
            duration_s=round(res.duration_s, 4), changes=changes,
            changes_total=changes.total, changes_sha256=changes.sha256, state="fresh",
            prep_failed=prep,
        )  # fmt: skip
        return SideOutcome(side, res.stdout)


async def open_processes(options: dict[str, Any]) -> ProcessSandbox:
    """The registry's factory: `root` (optional) is where images and boxes go."""
    root = options.get("root") or tempfile.mkdtemp(prefix="icae-processes-")
    return ProcessSandbox(Path(root))
