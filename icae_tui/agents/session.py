"""The session of an agent driven from the host: its hands in the container, its voice.

Every action becomes an event: what it says, the files it writes, each command with its
output (the first TRACE_CAP_PER_COMMAND bytes) and how it ended — including whether it hit
the container's process limit and what it left running — and every question it asks, which
goes through the run's budgeted clarification channel.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

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
from icae_tui.errors import BoxError
from icae_tui.sandbox.base import Box, ExecResult, StepOutcome
from icae_tui.users.channel import ClarificationChannel

Emit = Callable[[Event], Awaitable[None]]

TRACE_CAP_PER_COMMAND = 256 * 1024  # bytes of one command's output shown in the trace
QUIET_KEEP_BYTES = 1024 * 1024  # of a quiet command's output kept in its result (it streams)
BOX_DIED = "its box died: every process in it ended, its init's keepalive included"


class AgentSession:
    """AgentContext for agents driven from the host: every action becomes an event."""

    def __init__(
        self,
        emit: Emit,
        box: Box,
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
        self.model: ChatEndpoint | None = None  # the run's gateway, for a model agent
        self.env: dict[str, str] = {}  # the gateway's address and the run's token, if any
        self.budget = channel.budget  # questions the agent may ask in all

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
        except BoxError:
            await self._raise_if_box_died()
            raise
        if not quiet:
            await self._emit(AgentWrote(path=path, size=len(data)))
        self._raise_if_disk_full(await self.box.disk_full())

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

        out = await self.box.step(
            command, timeout_s=timeout_s, workdir=self.workspace, on_output=traced,
            env=self._env(env or {}), kill_after_bytes=flood_bytes,
        )  # fmt: skip
        res = out.result
        await self._emit(
            AgentCommandDone(
                command=command,
                exit_code=res.exit_code,
                duration_s=round(res.duration_s, 3),
                timed_out=res.timed_out,
                pids_capped=out.pids_capped,
                left_running=out.left_running,
                killed_left=out.killed_left,
            )
        )
        self._after_step(out)
        return _result(res)

    async def _quiet(
        self,
        command: str,
        timeout_s: float,
        env: dict[str, str],
        on_output: OnOutput,
        flood_bytes: int | None,
    ) -> CommandResult:
        """A CLI agent's own process: its output goes to its parser, not to the trace. Past
        `flood_bytes` it is stopped; the agent says why (the result is `flooded`)."""

        async def passed(stream: str, chunk: bytes) -> None:
            await on_output(Stream(stream), chunk)

        out = await self.box.step(
            command, timeout_s=timeout_s, workdir=self.workspace, on_output=passed,
            env=self._env(env), cap_bytes=QUIET_KEEP_BYTES, kill_after_bytes=flood_bytes,
            watch_processes=False,
        )  # fmt: skip
        self._after_step(out)
        return _result(out.result)

    async def _raise_if_box_died(self) -> None:
        if await self.box.died():
            raise AgentStop(StopReason.BOX_DIED, BOX_DIED)

    def _after_step(self, out: StepOutcome) -> None:
        """A step that killed the box, or filled its disk, ends the agent's phase (the run
        freezes what it wrote)."""
        if out.died:
            raise AgentStop(StopReason.BOX_DIED, BOX_DIED)
        self._raise_if_disk_full(out.disk_full)

    def _raise_if_disk_full(self, used: int | None) -> None:
        bound = self.box.disk
        if used is None or bound is None:
            return
        mib = 2**20
        taken = f"{used // mib} MiB" if used >= 0 else "more than its limit allows"
        raise AgentStop(
            StopReason.DISK_LIMIT,
            f"its box's disk is full: {taken} written, limit {bound.limit // mib} MiB "
            f"({bound.guard} guard)",
        )

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        """The run's allowed host variables, the gateway's address and token, then the
        command's own."""
        passed = {k: os.environ[k] for k in self._secret_env if k in os.environ}
        return passed | self.env | extra

    async def read(self, path: str, limit: int) -> bytes | None:
        return await self.box.read_file(path, limit)

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
