"""The session of an agent driven from the host: its hands in the container, its voice.

Every action becomes an event: what it says, the files it writes, each command with its
output (the first TRACE_CAP_PER_COMMAND bytes) and how it ended — including whether it hit
the container's process limit and what it left running — and every question it asks, which
goes through the run's budgeted clarification channel.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiodocker

from icae_tui.agents.base import ChatEndpoint, OnOutput
from icae_tui.agents.pause import PauseGate
from icae_tui.domain.agent import AgentStop, CommandResult, Limits
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentWrote,
    Event,
)
from icae_tui.domain.states import StopReason, Stream
from icae_tui.evaluation.sides import kill_extras
from icae_tui.sandbox.containers import Container, ExecResult
from icae_tui.sandbox.disk import LayerWatch, full_bytes
from icae_tui.sandbox.hostview import HostView, process_state
from icae_tui.users.channel import ClarificationChannel

Emit = Callable[[Event], Awaitable[None]]

TRACE_CAP_PER_COMMAND = 256 * 1024  # bytes of one command's output shown in the trace
# What an agent command leaves running counts as settled once unchanged this long (a server
# started on purpose); a detached fork bomb changes until it hits the pids limit.
LEFTOVER_SETTLE_S = 0.25
LEFTOVER_PATIENCE_S = 5.0
QUIET_KEEP_BYTES = 1024 * 1024  # of a quiet command's output kept in its result (it streams)
BOX_DIED = "its box died: every process in it ended, its init's keepalive included"
# Inside a box seen from no host: every process but its init (1), the init's `sleep` and
# this shell. (`kill -9 -1` would take the keepalive too, and the box with it.)
KILL_ALL_BUT_KEEPALIVE = (
    "for d in /proc/[0-9]*; do p=${d#/proc/}; [ $p = 1 ] || [ $p = $$ ] && continue; "
    "read -r _ c _ pp _ < $d/stat 2>/dev/null || continue; "
    '[ "$pp" = 1 ] && [ "$c" = "(sleep)" ] && continue; kill -9 $p 2>/dev/null; done; true'
)


class AgentSession:
    """AgentContext for agents driven from the host: every action becomes an event."""

    def __init__(
        self,
        emit: Emit,
        box: Container,
        workspace: str,
        channel: ClarificationChannel,
        *,
        secret_env: tuple[str, ...] = (),
        limits: Limits | None = None,
        records_dir: Path | None = None,
        gate: PauseGate | None = None,
    ) -> None:
        self._emit = emit
        self._secret_env = secret_env
        self.box = box
        self.workspace = workspace
        self.channel = channel
        self.limits = limits = limits or Limits()
        self.records_dir = records_dir  # where raw logs are kept beside the run's records
        self.gate = gate or PauseGate()  # the operator's pause: waited on before each step
        self.steps = 0
        self._deadline = (
            asyncio.get_running_loop().time() + limits.max_seconds if limits.max_seconds else None
        )
        self._view: HostView | None = None
        self.model: ChatEndpoint | None = None  # the run's gateway, for a model agent
        self.extra_env: dict[str, str] = {}  # the gateway's address and the run's token
        self.budget = channel.budget  # questions the agent may ask in all
        self._probed = False

    async def _host_view(self) -> HostView | None:
        """The agent container's cgroups, seen from the host (None with a remote engine)."""
        if not self._probed:
            self._probed = True
            with contextlib.suppress(aiodocker.DockerError):
                self._view = HostView.probe(await self.box.raw.show())
        return self._view

    async def _aftermath(
        self, view: HostView, before: set[int], hits: int
    ) -> tuple[bool, int, bool]:
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

    async def step(self) -> None:
        await self.gate.wait()
        if self.limits.max_steps is not None and self.steps >= self.limits.max_steps:
            raise AgentStop(StopReason.STEP_LIMIT, f"step limit of {self.limits.max_steps} reached")
        if self._deadline is not None and self._now() >= self._deadline:
            raise AgentStop(StopReason.TIME_LIMIT, f"time limit of {self.limits.max_seconds:g} s")
        self.steps += 1

    async def trace(self, event: Event) -> None:
        await self._emit(event)

    async def say(self, text: str, *, streamed: bool = False) -> None:
        await self._emit(AgentSaid(text=text, streamed=streamed))

    async def ask(self, question: str) -> str:
        answer = await self.channel.ask(question)
        return f"{answer.text}\n[{answer.remaining} question(s) left]"

    async def write(
        self, path: str, content: str, mode: int = 0o644, *, quiet: bool = False
    ) -> None:
        data = content.encode()
        try:
            await self.box.put_files({path: data}, mode=mode)
        except aiodocker.DockerError:
            await self._raise_if_box_died()
            raise
        if not quiet:
            await self._emit(AgentWrote(path=path, size=len(data)))
        await self._raise_if_disk_full()

    async def run(
        self,
        command: str,
        timeout_s: float = 60.0,
        *,
        env: dict[str, str] | None = None,
        on_output: OnOutput | None = None,
        flood_bytes: int | None = None,
    ) -> CommandResult:
        if on_output is not None:
            return await self._quiet(command, timeout_s, env or {}, on_output, flood_bytes)
        await self._emit(AgentCommand(command=command))
        decoders = {
            s: codecs.getincrementaldecoder("utf-8")("replace") for s in ("stdout", "stderr")
        }
        shown = 0

        async def traced(stream: str, chunk: bytes) -> None:
            nonlocal shown
            if shown >= TRACE_CAP_PER_COMMAND:
                return
            chunk = chunk[: TRACE_CAP_PER_COMMAND - shown]
            shown += len(chunk)
            text = decoders[stream].decode(chunk)
            if shown >= TRACE_CAP_PER_COMMAND:
                text += "\n[… output truncated in the trace …]\n"
            if text:
                await self._emit(AgentOutput(stream=Stream(stream), text=text))

        view = await self._host_view()
        before = (view.procs() or set()) if view else set()
        hits = view.pids_limit_hits() if view else 0
        async with self._disk_watch(view, before) as watch:
            res = await self._exec(
                command, timeout_s=timeout_s, workdir=self.workspace, on_output=traced,
                env=self._env(env or {}), kill_after_bytes=flood_bytes,
            )  # fmt: skip
        capped, left, killed = (
            await self._aftermath(view, before, hits) if view else (False, 0, False)
        )
        await self._emit(
            AgentCommandDone(
                command=command,
                exit_code=res.exit_code,
                duration_s=round(res.duration_s, 3),
                timed_out=res.timed_out,
                pids_capped=capped,
                left_running=left,
                killed_left=killed,
            )
        )
        await self._after_step(res, watch)
        return _result(res)

    async def _quiet(
        self,
        command: str,
        timeout_s: float,
        env: dict[str, str],
        on_output: OnOutput,
        flood_bytes: int | None,
    ) -> CommandResult:
        """A CLI agent's own process: its output goes to its parser, not to the trace."""

        async def passed(stream: str, chunk: bytes) -> None:
            await on_output(Stream(stream), chunk)

        view = await self._host_view()
        before = (view.procs() or set()) if view else set()
        async with self._disk_watch(view, before) as watch:
            res = await self._exec(
                command, timeout_s=timeout_s, workdir=self.workspace, on_output=passed,
                env=self._env(env), cap_bytes=QUIET_KEEP_BYTES, kill_after_bytes=flood_bytes,
            )  # fmt: skip
        if res.overflowed:  # it may still run: stop what it started (the agent says why)
            await self._stop_step(view, before)
            return _result(res)
        await self._after_step(res, watch)
        return _result(res)

    async def _stop_step(self, view: HostView | None, before: set[int]) -> None:
        """Kill what a step started, never the box's init or keepalive (their end would end
        the box): from the host when it sees the box, else from inside it."""
        if view is not None:
            await asyncio.to_thread(kill_extras, view, before)
            return
        with contextlib.suppress(aiodocker.DockerError):
            await self.box.exec(KILL_ALL_BUT_KEEPALIVE, timeout_s=10)

    async def _exec(self, command: str | list[str], **kwargs: Any) -> ExecResult:
        """One command in the box. The engine refuses it once the agent killed its own box:
        then the agent's phase ends, its box died (the run freezes what it wrote)."""
        try:
            return await self.box.exec(command, **kwargs)
        except aiodocker.DockerError:
            await self._raise_if_box_died()
            raise

    async def _raise_if_box_died(self, *, hint: bool = True) -> None:
        if await self.box.died(hint=hint):
            raise AgentStop(StopReason.BOX_DIED, BOX_DIED)

    def _disk_watch(self, view: HostView | None, keep: set[int]) -> LayerWatch:
        """With the watch guard: a step that fills the box's disk is stopped at once (what
        it started is killed; what ran before it is kept)."""
        bound = self.box.disk
        upper = view.upper if view is not None else None
        return LayerWatch(upper, bound, lambda: view is not None and kill_extras(view, keep))

    async def _after_step(self, res: ExecResult, watch: LayerWatch) -> None:
        """A step that killed the box ends the agent's phase (the engine is asked only after
        an exit code that says so: a signal's, an exec it could not start, or none); so does
        a full disk."""
        await self._raise_if_box_died(hint=res.exit_code is None or res.exit_code >= 126)
        await self._raise_if_disk_full(watch.tripped)

    async def _raise_if_disk_full(self, tripped: bool = False) -> None:
        bound, view = self.box.disk, await self._host_view()
        if bound is None or view is None:
            return
        used = await asyncio.to_thread(full_bytes, view.upper, bound)
        if used is None and not tripped:
            return
        mib = 2**20
        taken = f"{used // mib} MiB" if used is not None else "more than its limit allows"
        raise AgentStop(
            StopReason.DISK_LIMIT,
            f"its box's disk is full: {taken} written, limit {bound.limit // mib} MiB "
            f"({bound.guard} guard)",
        )

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        """The run's allowed host variables, the gateway's address and token, then the
        command's own."""
        passed = {k: os.environ[k] for k in self._secret_env if k in os.environ}
        return passed | self.extra_env | extra

    async def read(self, path: str, limit: int) -> bytes | None:
        try:
            tar = await self.box.get_tar(path)
        except aiodocker.DockerError:
            return None
        with tar:
            member = next((m for m in tar.getmembers() if m.isfile()), None)
            if member is None:
                return None
            handle = tar.extractfile(member)
            return handle.read(limit) if handle is not None else None

    async def keep(self, name: str, data: bytes, *, append: bool = False) -> None:
        if self.records_dir is None:
            return
        path = self.records_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab" if append else "wb") as out:
            out.write(data)

    def remaining_s(self) -> float | None:
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - self._now())

    def _now(self) -> float:
        """The loop's clock less the time spent paused: what the time limit counts."""
        return asyncio.get_running_loop().time() - self.gate.paused_total_s


def _result(res: ExecResult) -> CommandResult:
    return CommandResult(
        exit_code=res.exit_code, stdout=res.stdout, stderr=res.stderr,
        duration_s=res.duration_s, timed_out=res.timed_out, flooded=res.overflowed,
    )  # fmt: skip


def _alive(view: HostView, keep: set[int]) -> frozenset[int]:
    """Processes in the container's cgroup, other than `keep`, that are not exiting."""
    procs = (view.procs() or set()) - keep
    return frozenset(p for p in procs if process_state(p) not in ("Z", "X", ""))
