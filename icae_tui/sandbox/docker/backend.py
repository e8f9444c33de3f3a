"""The `docker` backend: the sandbox protocol (`sandbox/base.py`) on a Docker engine.

A local engine (a Unix socket, overlay2 layers readable here) gets the host-side proofs:
the writable layer, cgroups and processes of every box read from the host, boxes reused
between cases when provably untouched, disk limits by quota or by a watch. A remote engine
gets the same protocol the slower way (the engine's `/changes` and a manifest per case).
Engine errors leave this package as `icae_tui.errors` exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import aiodocker

from icae_tui.domain.task import Task
from icae_tui.errors import BoxError, ConfigError, EngineUnavailable
from icae_tui.sandbox.base import (
    Box,
    BoxSpec,
    CasePath,
    CasePool,
    Channel,
    DiskBound,
    DiskGuard,
    ExecResult,
    Limits,
    Network,
    OutputCallback,
    ProgressFn,
    ReapReport,
    Role,
    StepOutcome,
    TaskImages,
)
from icae_tui.sandbox.docker import agent_images, engine_api, fuzz, images, reaper
from icae_tui.sandbox.docker.containers import (
    Container,
    create_container,
    disk_guard,
    labels_for,
)
from icae_tui.sandbox.docker.disk import LayerWatch, full_bytes
from icae_tui.sandbox.docker.engine import connect, engine_url
from icae_tui.sandbox.docker.hostview import HostView, process_state
from icae_tui.sandbox.docker.pool import SidePool
from icae_tui.sandbox.docker.proof import kill_extras
from icae_tui.sandbox.docker.relay import ChannelRelay
from icae_tui.sandbox.tree import TarScanner, TreeBounds, TreeRead
from icae_tui.util.aio import complete_despite_cancel

# What an agent command leaves running counts as settled once unchanged this long (a server
# started on purpose); a detached fork bomb changes until it hits the pids limit.
LEFTOVER_SETTLE_S = 0.25
LEFTOVER_PATIENCE_S = 5.0
# Inside a box seen from no host: every process but its init (1), the init's `sleep` and
# this shell. (`kill -9 -1` would take the keepalive too, and the box with it.)
KILL_ALL_BUT_KEEPALIVE = (
    "for d in /proc/[0-9]*; do p=${d#/proc/}; [ $p = 1 ] || [ $p = $$ ] && continue; "
    "read -r _ c _ pp _ < $d/stat 2>/dev/null || continue; "
    '[ "$pp" = 1 ] && [ "$c" = "(sleep)" ] && continue; kill -9 $p 2>/dev/null; done; true'
)


class DockerBox:
    """A started container of ours, as the protocol's `Box`. `container` is the raw handle
    for this backend's own modules and its tests."""

    def __init__(self, container: Container, relayed: tuple[Channel, ...] = ()) -> None:
        """`relayed`: the run's channels, carried by the relay (a remote engine: nothing
        of this host is mounted in the box; `docker/relay.py`)."""
        self.container = container
        self._view: HostView | None = None
        self._probed = False
        self._relayed = relayed
        self._relay: ChannelRelay | None = None

    async def start_relay(self) -> None:
        """The relay in the box (again: a revived box, or one whose processes were killed,
        lost it); BoxError when it does not start."""
        await self._end_relay()
        relay = ChannelRelay(self.container, self._relayed)
        await relay.start()
        self._relay = relay

    async def _end_relay(self, *, forget_sockets: bool = False) -> None:
        """The relay stopped; `forget_sockets`: its sockets removed from the box too, so a
        frozen delivery holds none."""
        relay, self._relay = self._relay, None
        if relay is None:
            return
        await relay.close()
        if forget_sockets:
            paths = [box for _, box in relay.sockets]
            with contextlib.suppress(aiodocker.DockerError):
                await self.container.exec(["rm", "-f", *paths], timeout_s=10, user="0")

    @property
    def id(self) -> str:
        return self.container.id

    @property
    def disk(self) -> DiskBound | None:
        return self.container.disk

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
        try:
            return await self.container.exec(
                command, stdin=stdin, timeout_s=timeout_s, workdir=workdir, env=env,
                on_output=on_output, cap_bytes=cap_bytes, kill_after_bytes=kill_after_bytes,
            )  # fmt: skip
        except aiodocker.DockerError as err:
            raise BoxError(f"box {self.id[:12]}: {err.message}") from err

    async def put_files(self, files: dict[str, bytes], *, mode: int = 0o644) -> None:
        try:
            await self.container.put_files(files, mode=mode)
        except aiodocker.DockerError as err:
            raise BoxError(f"box {self.id[:12]}: {err.message}") from err

    async def read_file(self, path: str, limit: int) -> bytes | None:
        try:
            tar = await self.container.get_tar(path)
        except aiodocker.DockerError:
            return None
        with tar:
            member = next((m for m in tar.getmembers() if m.isfile()), None)
            if member is None:
                return None
            handle = tar.extractfile(member)
            return handle.read(limit) if handle is not None else None

    async def read_tree(
        self, path: str, bounds: TreeBounds, wanted: Callable[[str], bool]
    ) -> TreeRead | None:
        """The engine's archive of `path`, streamed: only the wanted files' first bytes are
        kept, and a bound stops the stream (the listing then says it was cut)."""
        scanner = TarScanner(bounds, wanted)
        streamed = 0
        started = time.monotonic()

        def feed(chunk: bytes) -> bool:
            nonlocal streamed
            streamed += len(chunk)
            if streamed > bounds.max_stream_bytes:
                return scanner.cut(f"more than {bounds.max_stream_bytes} bytes")
            return scanner.feed(chunk)

        try:
            found = await engine_api.stream_archive(
                self.container.docker, self.id, path, feed, timeout_s=bounds.timeout_s
            )
        except aiodocker.DockerError as err:
            raise BoxError(f"box {self.id[:12]}: {err.message}") from err
        if not found:
            return None
        if time.monotonic() - started > bounds.timeout_s:
            scanner.cut(f"not read within {bounds.timeout_s:g} s")
        return scanner.finish()

    async def pause(self) -> None:
        try:
            await self.container.raw.pause()
        except aiodocker.DockerError as err:
            raise BoxError(f"box {self.id[:12]}: {err.message}") from err

    async def resume(self) -> None:
        try:
            await self.container.raw.unpause()
        except aiodocker.DockerError as err:
            raise BoxError(f"box {self.id[:12]}: {err.message}") from err

    async def died(self, *, hint: bool = True) -> bool:
        return await self.container.died(hint=hint)

    async def revive(self) -> None:
        await self.container.wait_stopped()  # the engine starts only what it has seen stop
        try:
            await self.container.raw.start()
        except aiodocker.DockerError as err:
            raise BoxError(f"box {self.id[:12]} could not be started again: {err}") from None
        await self.container.find_init()
        if self._relayed:
            await self.start_relay()

    async def make_room(self, extra: int) -> None:
        await self.container.make_room(extra)

    async def freeze(self, image: str, *, run_id: str, ttl_s: int) -> None:
        """The engine finishes a commit it started even if we are cancelled meanwhile, so on
        any failure the image is removed again."""
        await self._end_relay(forget_sockets=True)  # the agent's channels end before its freeze
        repo, tag = image.split(":", 1)
        labels = labels_for(run_id, Role.DELIVERY, ttl_s=ttl_s)
        try:
            await complete_despite_cancel(self.container.commit(repo, tag, labels))
        except BaseException as err:
            await remove_image(self.container.docker, image)
            if isinstance(err, aiodocker.DockerError):
                raise BoxError(f"box {self.id[:12]} could not be frozen: {err.message}") from err
            raise

    async def remove(self) -> None:
        try:
            await self._end_relay()
        finally:
            await self.container.remove()

    # --- an agent's step -----------------------------------------------------------------

    async def _host_view(self) -> HostView | None:
        """The box's cgroups and layer, seen from the host (None with a remote engine)."""
        if not self._probed:
            self._probed = True
            with contextlib.suppress(aiodocker.DockerError):
                self._view = HostView.probe(await self.container.raw.show())
        return self._view

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
        view = await self._host_view()
        before = (view.procs() or set()) if view else set()
        hits = view.pids_limit_hits() if view else 0
        stop = (lambda: kill_extras(view, before)) if view is not None else (lambda: False)
        try:
            async with LayerWatch(view.upper if view else None, self.disk, stop) as watch:
                res = await self.container.exec(
                    command, timeout_s=timeout_s, workdir=workdir, env=env,
                    on_output=on_output, cap_bytes=cap_bytes, kill_after_bytes=kill_after_bytes,
                )  # fmt: skip
        except aiodocker.DockerError as err:
            if await self.died():  # the engine refuses a dead box's exec
                return StepOutcome(ExecResult(None, b"", b""), died=True)
            raise BoxError(f"box {self.id[:12]}: {err.message}") from err
        out = StepOutcome(res)
        if res.overflowed:  # it may still run: stop what it started (the caller says why)
            await self._stop_step(view, before)
            return out
        if view is not None and watch_processes:
            out.pids_capped, out.left_running, out.killed_left = await _aftermath(
                view, before, hits
            )
        out.died = await self.died(hint=res.exit_code is None or res.exit_code >= 126)
        if not out.died:
            out.disk_full = await self.disk_full(tripped=watch.tripped)
        return out

    async def disk_full(self, *, tripped: bool = False) -> int | None:
        """The bytes the box's layer takes when it is full (-1: a watch stopped it), else
        None."""
        bound, view = self.disk, await self._host_view()
        if bound is None or view is None:
            return None
        used = await asyncio.to_thread(full_bytes, view.upper, bound)
        if used is None and tripped:
            return -1
        return used

    async def _stop_step(self, view: HostView | None, before: set[int]) -> None:
        """Kill what a step started, never the box's init or keepalive (their end would end
        the box): from the host when it sees the box, else from inside it."""
        if view is not None:
            await asyncio.to_thread(kill_extras, view, before)
            return
        with contextlib.suppress(aiodocker.DockerError):
            await self.container.exec(KILL_ALL_BUT_KEEPALIVE, timeout_s=10)
        if self._relayed:  # it was killed with the rest
            await self.start_relay()


async def _aftermath(view: HostView, before: set[int], hits: int) -> tuple[bool, int, bool]:
    """Whether a command hit the pids limit, how many processes it left running, and
    whether those were killed.

    A detached fork bomb reaches the limit only after its command returned, so what it
    left is watched until it hits the limit, ends, or stays unchanged for a moment.
    At the limit no further step could start (the engine's exec fails with 125), so what
    the command left is killed from the host; processes of earlier steps are kept.
    Below the limit nothing is killed: an agent may start a server on purpose."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LEFTOVER_PATIENCE_S
    alive, since = _alive(view, before), loop.time()
    while alive and view.pids_limit_hits() == hits:
        if loop.time() - since >= LEFTOVER_SETTLE_S or loop.time() > deadline:
            break
        await asyncio.sleep(0.02)  # the watch's poll interval
        now = _alive(view, before)
        if now != alive:
            alive, since = now, loop.time()
    capped = view.pids_limit_hits() > hits
    left = len(_alive(view, before)) if capped else len(alive)
    killed = False
    if capped and left:
        killed = await asyncio.to_thread(kill_extras, view, before)
    return capped, left, killed


def _alive(view: HostView, keep: set[int]) -> frozenset[int]:
    """Processes in the container's cgroup, other than `keep`, that are not exiting."""
    procs = (view.procs() or set()) - keep
    return frozenset(p for p in procs if process_state(p) not in ("Z", "X", ""))


async def remove_image(docker: aiodocker.Docker, image: str) -> None:
    """Gone even if we are cancelled meanwhile (the engine finishes what it started)."""

    async def delete() -> None:
        with contextlib.suppress(aiodocker.DockerError):
            await docker.images.delete(image, force=True)

    await complete_despite_cancel(delete())


_NETWORKS = {Network.NONE: "none", Network.REGISTRIES: "bridge"}


class DockerSandbox:
    """One Docker engine (a client that answered), as the protocol's `Sandbox`."""

    name = "docker"

    def __init__(
        self, docker: aiodocker.Docker, guard: DiskGuard, host: str | None = None,
        *, remote: bool | None = None,
    ) -> None:  # fmt: skip
        """`remote`: mount nothing of this host into boxes (the channels are relayed); None:
        so when the engine is not on a Unix socket here."""
        self.docker = docker
        self._guard = guard
        self._host = host  # None: the engine $DOCKER_HOST names, whenever it is asked
        self.remote = (not str(docker.docker_host).startswith("unix://")) if remote is None else remote

    @classmethod
    async def open(
        cls, *, host: str | None = None, timeout_s: float = 10.0, remote: bool | None = None
    ) -> DockerSandbox:
        """The engine at `host` (a DOCKER_HOST-style URL; default: $DOCKER_HOST or the
        local socket), or EngineUnavailable naming where it looked."""
        docker = await connect(timeout_s=timeout_s, url=host)
        try:
            guard = await disk_guard(docker)
        except aiodocker.DockerError as err:
            await docker.close()
            raise EngineUnavailable(f"Docker engine at {docker.docker_host}: {err}") from None
        return cls(docker, guard, host, remote=remote)

    @property
    def disk_guard(self) -> DiskGuard:
        return self._guard

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.docker.close()

    async def ping(self) -> None:
        """A fresh connection, as the engine's liveness: the run's own may be what broke."""
        probe = await connect(timeout_s=3, url=self._host)
        await probe.close()

    async def base_image(self, progress: ProgressFn = lambda _m: None, *,
                         name: str | None = None) -> str:  # fmt: skip
        return await images.ensure_base_image(self.docker, progress, name=name or images.BASE_IMAGE)

    async def task_images(self, task: Task, progress: ProgressFn = lambda _m: None) -> TaskImages:
        built = await images.ensure_task_images(self.docker, task, progress)
        if task.spec.sanitizer is None:
            return built
        requires = task.spec.sanitizer.requires
        sanitizer = await fuzz.ensure_task_code_image(self.docker, requires, progress)
        return TaskImages(agent=built.agent, oracle=built.oracle, sanitizer=sanitizer)

    async def agent_image(
        self, base: str, agent: str, version: str, lines: list[str], progress: ProgressFn,
        *, run_id: str,
    ) -> str:  # fmt: skip
        return await agent_images.ensure_agent_image(
            self.docker, base, agent, version, lines, progress, run_id=run_id
        )

    async def create_box(self, spec: BoxSpec) -> Box:
        """A started box; its channels bind-mounted from this host, or relayed over the
        engine's connection when the engine is remote (network `none` either way)."""
        binds = None if self.remote else [f"{c.host_path}:{c.box_path}:ro" for c in spec.channels]
        try:
            container = await create_container(
                self.docker, spec.image, run_id=spec.run_id, role=spec.role,
                limits=spec.limits, workdir=spec.workdir, hardened=spec.hardened,
                binds=binds or None, network=_NETWORKS[spec.network],
            )  # fmt: skip
        except aiodocker.DockerError as err:
            raise BoxError(f"a {spec.role} box of {spec.image}: {err.message}") from err
        if not (self.remote and spec.channels):
            return DockerBox(container)
        box = DockerBox(container, relayed=spec.channels)
        try:
            await box.start_relay()
        except BaseException:
            await container.remove()
            raise
        return box

    def case_pool(
        self, image: str, *, run_id: str, role: Role, size: int, limits: Limits, workdir: str,
        path: CasePath = CasePath.SUPERVISED,
    ) -> CasePool:  # fmt: skip
        return SidePool(
            self.docker, image, run_id=run_id, role=role, size=size, limits=limits,
            fast=path in (CasePath.SUPERVISED, CasePath.HOST), in_box=path is not CasePath.CHANGES,
            supervised=path is CasePath.SUPERVISED, workdir=workdir,
        )  # fmt: skip

    async def remove_image(self, image: str) -> None:
        await remove_image(self.docker, image)

    async def image_exists(self, image: str) -> bool:
        return await images.image_exists(self.docker, image)

    async def sweep(self) -> ReapReport:
        return await reaper.reap(self.docker)

    async def remove_run_boxes(self, run_id: str) -> list[str]:
        return await reaper.remove_run_containers(self.docker, run_id)

    def shell_argv(self, image: str, workdir: str) -> list[str]:
        """`docker run` of a throwaway container of `image` with a shell, no network,
        removed on exit (against this engine: `-H` the URL it was opened with, unless that
        is the one the docker CLI takes anyway; aiodocker's own `docker_host` names a Unix
        socket `unix://localhost`, which the CLI cannot use)."""
        host = self._host or engine_url()
        target = ["-H", host] if host != engine_url() else []
        return ["docker", *target, "run", "--rm", "-it", "--network", "none",
                "--hostname", "sandbox", "-w", workdir, image, "bash", "-l"]  # fmt: skip


async def open_docker(options: dict[str, Any]) -> DockerSandbox:
    """The registry's factory: `host` (optional) names the engine, or `context` a docker
    context (the `docker` package reads it: `docker context ls`); `remote = true` treats a
    Unix socket as another machine's (a socket forwarded over ssh, say)."""
    host = options.get("host")
    if host is None and (context := options.get("context")) is not None:
        host = context_host(str(context))
    remote = options.get("remote")
    return await DockerSandbox.open(host=host, remote=bool(remote) if remote is not None else None)


def context_host(name: str) -> str:
    """The engine URL of the docker context `name`; ConfigError when there is none (or it
    needs TLS, which the engine client here is not given)."""
    from docker.context import ContextAPI
    from docker.errors import ContextNotFound

    try:
        context = ContextAPI.get_context(name)
    except ContextNotFound:
        context = None
    if context is None or not context.Host:
        raise ConfigError(f"docker context {name!r}: not found (see `docker context ls`)")
    if context.TLSConfig is not None:
        raise ConfigError(f"docker context {name!r}: uses TLS, which icae does not support yet")
    return str(context.Host)
