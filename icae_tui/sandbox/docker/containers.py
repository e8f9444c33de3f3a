"""Containers we own: create with limits and labels, exec with separate streams, copy by tar.

Every container is labelled as ours and runs `sleep <ttl>` under an init as PID 1, so it
dies on its own if the console crashes. Callers use `container(...)` as an async context
manager: the container is removed in `finally`, even on cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import shlex
import socket
import tarfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import aiodocker

from icae_tui.sandbox.base import DiskBound, DiskGuard, ExecResult, Limits, OutputCallback
from icae_tui.sandbox.capture import DEFAULT_ENV, Capture, exec_result, feed_until
from icae_tui.sandbox.docker.disk import (
    LayerNotBounded,
    bound_layer,
    quota_works,
    raise_quota,
)
from icae_tui.sandbox.docker.engine import LABEL_TOOL, TOOL_NAME, local_data_root
from icae_tui.sandbox.docker.engine_api import write_stdin_and_close
from icae_tui.sandbox.docker.keepalive import BUSYBOX as KEEPALIVE_BUSYBOX
from icae_tui.sandbox.docker.keepalive import INIT as KEEPALIVE_INIT
from icae_tui.sandbox.docker.keepalive import KEEPALIVE_DIR
from icae_tui.sandbox.docker.procs import Proc, children
from icae_tui.util.aio import complete_despite_cancel

T = TypeVar("T")

log = logging.getLogger(__name__)

HOSTNAME = "sandbox"




class Container:
    """One running container of ours."""

    def __init__(
        self,
        docker: aiodocker.Docker,
        raw: aiodocker.containers.DockerContainer,
        disk: DiskBound | None = None,
    ):
        self.docker = docker
        self.raw = raw
        self.disk = disk  # its disk limit and how it is kept; None: unbounded
        # Its init and the keepalive the init runs, as this host sees them (a local engine):
        # the box lives while both do (the init exits with its keepalive), and the engine
        # takes a moment to notice when they do not.
        self.init: Proc | None = None
        self.keepalive: Proc | None = None
        self.on_remove: list[Callable[[], None]] = []  # what dies with it (a channel to it)

    async def running(self) -> bool | None:
        """Whether the engine says the container runs (a paused one does); None when it is
        gone. Just after the box's init died the engine may still say it runs."""
        try:
            info = await self.raw.show()
        except aiodocker.DockerError as err:
            if err.status == 404:
                return None
            raise
        return bool(info.get("State", {}).get("Running"))

    def doomed(self) -> bool | None:
        """Whether the box's init or its keepalive is gone or already killed (the box is
        stopping), seen from this host at once; None when it cannot see them (remote)."""
        if self.init is None:
            return None
        return self.init.doomed() or (self.keepalive is not None and self.keepalive.doomed())

    async def died(self, *, hint: bool = True) -> bool:
        """Whether every process of the box ended or is ending (its init and keepalive
        with them): it stops without being told to. Seen from the host when it can; else
        asked of the engine, only when `hint` says it may be so (a command ended by a
        signal, say)."""
        doomed = self.doomed()
        if doomed is not None:
            return doomed
        return hint and await self.running() is False

    async def make_room(self, extra: int) -> None:
        """Room past a bounded box's limit for the run's own files (the freeze's wrapper in
        a box the agent filled); the box's processes could take it too, so it is small."""
        disk = self.disk
        if disk is not None and disk.layer is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(raise_quota, disk.layer, disk.limit + extra)

    async def wait_stopped(self, timeout_s: float = 30.0) -> None:
        """Until the engine has seen the box stop (after its init died)."""
        with contextlib.suppress(aiodocker.DockerError, TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self.raw.wait()

    async def find_init(self, *, wait_s: float = 2.0) -> None:
        """Name the init and, once the init has started it, its keepalive (its child)."""
        with contextlib.suppress(aiodocker.DockerError, ValueError, TypeError, KeyError):
            self.init = Proc.of(int((await self.raw.show())["State"]["Pid"]))
        if self.init is None:
            return  # a remote engine: its processes are not ours to see
        deadline = time.monotonic() + wait_s
        while not (kids := children(self.init.pid)) and time.monotonic() < deadline:
            await asyncio.sleep(0.002)  # the init forks its keepalive right after it starts
        self.keepalive = Proc.of(kids[0]) if kids else None

    @property
    def id(self) -> str:
        return self.raw.id

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
        user: str = "",
        in_box_timeout: bool = True,
        wait_exit: bool = True,
        prefix: list[str] | None = None,
    ) -> ExecResult:
        """Run a command; stdout and stderr kept apart and byte-exact (up to `cap_bytes`).

        The timeout is enforced inside the container by coreutils `timeout` (killing the
        client would leave the process running) with a host watchdog a little later;
        `in_box_timeout=False` (our own static tools, never a program of the image): the
        watchdog only. `wait_exit=False`: the exit code is not asked of the engine (one
        round trip less; for a tool whose output says whether it completed), and is None.
        `prefix`: argv of our own that runs first and then `exec`s the command (a step of
        ours in the same round trip: `inbox.fixtures_prefix`).
        Past `kill_after_bytes` of output we stop reading and report `overflowed`: the
        caller must then discard the container, which kills what still runs in it.
        """
        wrapped = case_argv(command, timeout_s) if in_box_timeout else as_argv(command)
        wrapped = [*(prefix or []), *wrapped]
        merged_env = {**DEFAULT_ENV, **(env or {})}
        ex = await self.raw.exec(
            wrapped,
            stdin=stdin is not None,
            workdir=workdir,
            environment=merged_env,
            user=user,
        )
        out, err = Capture(cap_bytes), Capture(cap_bytes)
        started = time.monotonic()
        watchdog_fired = overflowed = False
        stream = ex.start(detach=False)
        try:
            async with asyncio.timeout(timeout_s + 8):
                async with stream:
                    if stdin is not None:
                        await write_stdin_and_close(stream, stdin)
                    while True:
                        msg = await stream.read_out()
                        if msg is None:
                            break
                        if feed_until(out, err, msg.stream, msg.data, kill_after_bytes):
                            overflowed = True
                            break
                        if on_output is not None:
                            res = on_output("stdout" if msg.stream == 1 else "stderr", msg.data)
                            if asyncio.iscoroutine(res):
                                await res
        except TimeoutError:
            watchdog_fired = True
        duration = time.monotonic() - started
        exit_code: int | None = None
        if not watchdog_fired and not overflowed and wait_exit:
            exit_code = await _exit_code(ex)
        return exec_result(
            out, err, exit_code, duration, timeout_s=timeout_s, watchdog_fired=watchdog_fired,
            overflowed=overflowed,
        )  # fmt: skip

    async def put_files(self, files: dict[str, bytes], *, mode: int = 0o644) -> None:
        """Write files given by absolute path (parents created, owned by root)."""
        await self.raw.put_archive("/", make_tar(files, mode=mode))

    async def get_tar(self, path: str) -> tarfile.TarFile:
        return await self.raw.get_archive(path)

    async def commit(self, repository: str, tag: str, labels: dict[str, str]) -> str:
        changes = [f"LABEL {k}={shlex.quote(v)}" for k, v in labels.items()]
        result = await self.raw.commit(repository=repository, tag=tag, changes=changes)
        return str(result.get("Id", ""))

    async def remove(self) -> None:
        """Force-remove; a cancel arriving meanwhile waits for the engine's answer first,
        so a cancelled run never leaves a container half-removed."""

        for hook in self.on_remove:
            hook()
        self.on_remove.clear()

        async def delete() -> None:
            with contextlib.suppress(aiodocker.DockerError):
                await self.raw.delete(force=True, v=True)

        await complete_despite_cancel(delete())


def as_argv(command: str | list[str]) -> list[str]:
    return ["bash", "-c", command] if isinstance(command, str) else list(command)


def case_argv(command: str | list[str], timeout_s: float) -> list[str]:
    """A command under its in-box coreutils `timeout` (SIGKILL 2 s after its SIGTERM)."""
    return ["timeout", "-k", "2", f"{timeout_s:g}", *as_argv(command)]


async def _exit_code(ex: aiodocker.execs.Exec, *, wait_s: float = 5.0) -> int | None:
    """The exit code once the engine has reaped the process: output can close a moment
    before that, and an early inspect says `Running` with no code. None when it never
    came (the container died with the process)."""
    deadline = time.monotonic() + wait_s
    delay = 0.002
    while True:
        try:
            info = await ex.inspect()
        except aiodocker.DockerError as err:
            if err.status in (404, 409):  # its container died, the exec with it: no code
                return None
            raise
        if not info.get("Running") or time.monotonic() > deadline:
            return info.get("ExitCode") if not info.get("Running") else None
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


def make_tar(files: dict[str, bytes], *, mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    made_dirs: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, content in files.items():
            rel = path.lstrip("/")
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in made_dirs:
                    made_dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    info.mtime = int(time.time())
                    tar.addfile(info)
            info = tarfile.TarInfo(rel)
            info.size = len(content)
            info.mode = mode
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def labels_for(run_id: str, role: str, ttl_s: int) -> dict[str, str]:
    """Ownership labels: the reaper removes only what is ours and dead or expired."""
    return {
        LABEL_TOOL: TOOL_NAME,
        "icae.run": run_id,
        "icae.role": role,
        "icae.owner-pid": str(os.getpid()),
        "icae.owner-host": socket.gethostname(),
        "icae.expires": str(int(time.time()) + ttl_s),
    }


async def create_container(
    docker: aiodocker.Docker,
    image: str,
    *,
    run_id: str,
    role: str,
    limits: Limits = Limits(),
    workdir: str = "/",
    binds: list[str] | None = None,
    tmpfs: dict[str, str] | None = None,
    hardened: bool = True,
    keepalive: Path | None = None,
    keepalive_volume: str | None = None,
    network: str = "none",
) -> Container:
    """A started container. `hardened` (all but image builds) drops every capability.

    `network` stays "none" for everything but installing agents into images ("bridge").
    `keepalive` (a local engine only): the host folder of `keepalive.py`; its static
    init and busybox `sleep` then run instead of the engine's init and the image's `sleep`.
    `keepalive_volume` (any engine): the same binaries from a volume of that engine
    (`sandbox.docker.inbox`), mounted read-only in the same place.
    """
    host_config: dict[str, object] = {
        "NetworkMode": network,
        "Memory": limits.memory_bytes,
        "MemorySwap": limits.memory_bytes,
        "PidsLimit": limits.pids,
        "NanoCpus": limits.nano_cpus,
        "Init": True,
        "IpcMode": "shareable",  # its /dev/shm is then a host folder the evaluator can check
        "SecurityOpt": ["no-new-privileges"],
        "Ulimits": [
            {"Name": "nofile", "Soft": 1024, "Hard": 1024},
            {"Name": "fsize", "Soft": limits.fsize, "Hard": limits.fsize},
            {"Name": "core", "Soft": 0, "Hard": 0},
        ],
    }
    if hardened:
        host_config["CapDrop"] = ["ALL"]
    if binds:
        host_config["Binds"] = binds
    if tmpfs:
        host_config["Tmpfs"] = tmpfs
    config: dict[str, Any] = {
        "Image": image,
        "Cmd": ["sleep", str(limits.ttl_s)],
        "Labels": labels_for(run_id, role, limits.ttl_s),
        "WorkingDir": workdir,
        "Env": [f"{k}={v}" for k, v in DEFAULT_ENV.items()],
        "NetworkDisabled": network == "none",
        "Hostname": HOSTNAME,  # not the container id: both sides of a case see the same name
        "HostConfig": host_config,
    }
    mount: dict[str, object] | None = None
    if keepalive is not None:
        mount = {"Type": "bind", "Source": str(keepalive)}
    elif keepalive_volume is not None:
        mount = {"Type": "volume", "Source": keepalive_volume}
    if mount is not None:
        host_config["Init"] = False  # our own init: the engine's docker-init is ptrace-able
        host_config["Mounts"] = [{**mount, "Target": KEEPALIVE_DIR, "ReadOnly": True}]
        config["Entrypoint"] = [KEEPALIVE_INIT, "--", KEEPALIVE_BUSYBOX]

    guard = await disk_guard(docker) if limits.disk_bytes else DiskGuard.NONE

    async def create_and_start() -> Container:
        container = Container(docker, await docker.containers.create(config))
        try:
            if limits.disk_bytes:
                container.disk = await _bound_disk(container, limits.disk_bytes, guard)
            await container.raw.start()
            await container.find_init()
        except BaseException:
            await container.remove()
            raise
        return container

    # Made even if we are cancelled meanwhile (the engine goes on), then removed at once.
    pending = asyncio.ensure_future(create_and_start())
    try:
        return await complete_despite_cancel(pending)
    except asyncio.CancelledError:
        if pending.done() and not pending.cancelled() and pending.exception() is None:
            await pending.result().remove()
        raise


_guards: dict[tuple[str, str], DiskGuard] = {}


async def disk_guard(docker: aiodocker.Docker) -> DiskGuard:
    """How this engine's boxes are kept to their disk (disk.py); found once."""
    root = await local_data_root(docker)
    key = (str(docker.docker_host), str(root))
    if key not in _guards:
        if root is None:
            guard = DiskGuard.NONE
        elif await asyncio.to_thread(quota_works, root):
            guard = DiskGuard.QUOTA
        else:
            guard = DiskGuard.WATCH
        _guards[key] = guard
    return _guards[key]


async def _bound_disk(container: Container, limit: int, guard: DiskGuard) -> DiskBound:
    """Between create and start: the layer becomes a subvolume with a quota (the quota
    guard); where that fails the box is watched instead."""
    if guard is DiskGuard.QUOTA:
        info = await container.raw.show()
        upper = ((info.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir")
        try:
            if not upper:
                raise LayerNotBounded("the engine names no upper directory")
            await asyncio.to_thread(bound_layer, Path(upper), limit)
            return DiskBound(limit=limit, guard=guard, layer=Path(upper).parent)
        except LayerNotBounded as err:
            log.warning("container %s: no disk quota (%s): watched instead", container.id[:12], err)
            guard = DiskGuard.WATCH
    return DiskBound(limit=limit, guard=guard)


_P = ParamSpec("_P")


def _removed_after(
    create: Callable[_P, Awaitable[Container]],
) -> Callable[_P, contextlib.AbstractAsyncContextManager[Container]]:
    @contextlib.asynccontextmanager
    async def managed(*args: _P.args, **kwargs: _P.kwargs) -> AsyncIterator[Container]:
        c = await create(*args, **kwargs)
        try:
            yield c
        finally:
            # Shielded so a cancelled run still removes what it created.
            await asyncio.shield(c.remove())

    return managed


# `create_container` as an async context manager: the container is removed when it ends.
container = _removed_after(create_container)
