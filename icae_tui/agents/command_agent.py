"""A CLI agent (Claude Code, Codex CLI, mini-swe-agent, Aider, …) run inside its container.

The agent gets a prompt file (the PRD and how to ask the user: `icae-ask`, or an `ASK:` line
for agents that cannot run commands themselves), its model through the run's gateway (the
loopback forwarder's URLs and the run's token — never a real key), the entry's fixed
variables and config files, and the host variables its entry allows. Its process is quiet:
its stdout lines and its log files go to the entry's trace parser, which turns them into
trace events; the raw output is kept beside the run's records. It ends when the process
exits: the parser says whether it submitted and with what message, or why it stopped.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
from pathlib import Path

from icae_tui.agents.base import AgentContext
from icae_tui.agents.config import CommandAgentConfig, model_need
from icae_tui.agents.network import network_note
from icae_tui.agents.parsers import AgentEnd, NativeTrace, parser_for
from icae_tui.domain.agent import AgentNeeds, AgentStop, ImageNeed, PauseMethod
from icae_tui.domain.events import AgentOutput, Event
from icae_tui.domain.states import StopReason, Stream

PROMPTS = Path(__file__).with_name("prompts")
ICAE_DIR = "/icae"  # the prompt, the answers and the agent's logs; removed before freezing
PROMPT_FILE = f"{ICAE_DIR}/task.md"
ANSWER_FILE = f"{ICAE_DIR}/answer.md"
LOG_DIR = f"{ICAE_DIR}/logs"
HOME = "/root"  # the agent runs as root: `~/` in an entry's file paths
PLACEHOLDERS = ("prompt_file", "answer_file", "workspace", "model", "openai_base_url",
                "anthropic_base_url", "log_dir", "budget", "version", "network")  # fmt: skip
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
DEFAULT_TIMEOUT_S = 3600.0  # an entry without a time limit still ends
FLOOD_BYTES = 64 * 1024 * 1024  # of output: past it the agent is stopped
LINE_CAP = 1024 * 1024  # of one stdout line handed to the parser
STDERR_TRACE_CAP = 256 * 1024  # of stderr shown in the trace
RAW_LOG_CAP = 32 * 1024 * 1024  # of stdout kept as the raw log
LOG_FILE_CAP = 64 * 1024 * 1024  # of a log file read for the parser
POLL_S = 1.0  # how often the agent's log files are read while it runs
_ASK_LINE = re.compile(r"^\s*ASK:\s*(.+?)\s*$", re.MULTILINE)


def render(template: str, values: dict[str, str]) -> str:
    """Fill the known {placeholders}; other braces (shell, JSON, TOML) stay as they are."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


class CommandAgent:
    def __init__(self, name: str, settings: CommandAgentConfig) -> None:
        self.name = name
        self.settings = settings
        self.limits = settings.limits
        s = settings
        self.needs = AgentNeeds(
            model=model_need(s),
            image=ImageNeed(s.version, tuple(s.install)) if s.install else None,
            pause=PauseMethod.FREEZE_BOX,  # it runs in its box: the box is frozen
            memory_mb=s.memory_mb,
            pids=s.pids,
        )

    def _values(self, ctx: AgentContext) -> dict[str, str]:
        env = ctx.env
        return {
            "prompt_file": PROMPT_FILE, "answer_file": ANSWER_FILE, "workspace": ctx.workspace,
            "model": self.settings.model, "log_dir": LOG_DIR, "budget": str(ctx.budget),
            "openai_base_url": env.get("OPENAI_BASE_URL", ""),
            "anthropic_base_url": env.get("ANTHROPIC_BASE_URL", ""),
            "version": self.settings.version, "network": network_note(env),
        }  # fmt: skip

    def _prompt(self, prd: str, values: dict[str, str]) -> str:
        default = "command-no-shell.md" if self.settings.resume else "command.md"
        path = Path(self.settings.prompt) if self.settings.prompt else PROMPTS / default
        if not path.is_absolute() and not path.is_file():
            path = PROMPTS / path
        try:
            template = path.read_text(encoding="utf-8")
        except OSError as err:
            raise AgentStop(StopReason.AGENT_ERROR, f"{self.name}: prompt {path}: {err}") from None
        return render(template.replace("{prd}", "\0PRD\0"), values).replace("\0PRD\0", prd)

    def _env(self, values: dict[str, str]) -> dict[str, str]:
        env = {k: render(v, values) for k, v in self.settings.vars.items()}
        env |= {k: os.environ[k] for k in self.settings.env if k in os.environ}
        return env

    async def build(self, prd: str, ctx: AgentContext) -> str:
        values = self._values(ctx)
        files = {PROMPT_FILE: self._prompt(prd, values)}
        for path, text in self.settings.files.items():
            path = render(path, values)
            files[HOME + path[1:] if path.startswith("~/") else path] = render(text, values)
        await _write_all(ctx, files)
        await ctx.run(f"mkdir -p {LOG_DIR}", 30, on_output=_ignore)
        parser = parser_for(self.settings.parser)
        command = render(self.settings.run, values)
        try:
            end = await self._attempt(ctx, parser, command, values)
            while (question := self._question(end)) is not None:
                answer = await ctx.ask(question)
                await _write_all(ctx, {ANSWER_FILE: answer})
                assert self.settings.resume is not None
                end = await self._attempt(ctx, parser, render(self.settings.resume, values), values)
        finally:
            # best effort: a cancelled run's container may be frozen (paused) or gone
            with contextlib.suppress(Exception):
                await self._keep_logs(ctx, parser)
                await ctx.run(f"rm -rf {ICAE_DIR}", 30, on_output=_ignore)
        if end.submitted:
            return end.final_message or "done"
        raise AgentStop(end.reason or StopReason.AGENT_ERROR, end.detail or "stopped")

    def _question(self, end: AgentEnd) -> str | None:
        """An agent that cannot ask by itself ends its reply with an ASK: line."""
        if self.settings.resume is None or not end.final_message:
            return None
        asks = _ASK_LINE.findall(end.final_message)
        return asks[-1] if asks else None

    async def _attempt(
        self, ctx: AgentContext, parser: NativeTrace, command: str, values: dict[str, str]
    ) -> AgentEnd:
        """One run of the agent's process, its output parsed into events as it comes."""
        await ctx.step()
        lines = _LineSplitter()
        shown_err = 0

        async def on_output(stream: Stream, chunk: bytes) -> None:
            nonlocal shown_err
            if stream is Stream.STDOUT:
                await _keep_raw(ctx, chunk, lines)
                for line in lines.feed(chunk):
                    await _trace_all(ctx, parser.line(line))
            elif shown_err < STDERR_TRACE_CAP:
                text = chunk[: STDERR_TRACE_CAP - shown_err].decode("utf-8", "replace")
                shown_err += len(chunk)
                await ctx.trace(AgentOutput(stream=Stream.STDERR, text=text))

        remaining = ctx.remaining_s()
        timeout = DEFAULT_TIMEOUT_S if remaining is None else max(1.0, remaining - 2.0)
        poller = asyncio.create_task(self._poll(ctx, parser))
        try:
            res = await ctx.run(
                command, timeout, env=self._env(values), on_output=on_output,
                flood_bytes=FLOOD_BYTES,
            )  # fmt: skip
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
        for line in lines.rest():
            await _trace_all(ctx, parser.line(line))
        await self._read_files(ctx, parser)
        if res.flooded:
            raise AgentStop(StopReason.AGENT_ERROR,
                            f"{self.name} flooded its output (over {FLOOD_BYTES // 2**20} MiB); stopped")  # fmt: skip
        if res.timed_out:
            raise AgentStop(StopReason.TIME_LIMIT, f"{self.name} ran out of time ({timeout:g} s)")
        end = parser.end(res.exit_code)
        if not end.submitted and end.reason is None and res.exit_code not in (0, None):
            return AgentEnd(False, end.final_message, StopReason.AGENT_ERROR,
                            f"{self.name} exited with code {res.exit_code}")  # fmt: skip
        return end

    async def _poll(self, ctx: AgentContext, parser: NativeTrace) -> None:
        """Log files (a trajectory rewritten every step, a chat history appended) are read
        while the agent runs, so its steps show as they happen."""
        while parser.files:
            await asyncio.sleep(POLL_S)
            await self._read_files(ctx, parser)

    async def _read_files(self, ctx: AgentContext, parser: NativeTrace) -> None:
        for name in parser.files:
            data = await ctx.read(f"{LOG_DIR}/{name}", LOG_FILE_CAP)
            if data is not None:
                await _trace_all(ctx, parser.file(name, data))

    async def _keep_logs(self, ctx: AgentContext, parser: NativeTrace) -> None:
        for name in parser.files:
            data = await ctx.read(f"{LOG_DIR}/{name}", LOG_FILE_CAP)
            if data is not None:
                await ctx.keep(f"agent_logs/{name}", data)


class _LineSplitter:
    """Bytes in, decoded lines out; a line longer than LINE_CAP is cut there."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        self.kept = 0  # bytes of raw output kept so far

    def feed(self, chunk: bytes) -> list[str]:
        text = self._pending + self._decoder.decode(chunk)
        *lines, self._pending = text.split("\n")
        if len(self._pending) > LINE_CAP:
            lines.append(self._pending[:LINE_CAP])
            self._pending = ""
        return [line[:LINE_CAP].rstrip("\r") for line in lines]

    def rest(self) -> list[str]:
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        return [text[:LINE_CAP]] if text else []


async def _keep_raw(ctx: AgentContext, chunk: bytes, lines: _LineSplitter) -> None:
    if lines.kept >= RAW_LOG_CAP:
        return
    part = chunk[: RAW_LOG_CAP - lines.kept]
    lines.kept += len(part)
    await ctx.keep("agent_logs/stdout.log", part, append=True)


async def _trace_all(ctx: AgentContext, events: list[Event]) -> None:
    for ev in events:
        await ctx.trace(ev)


async def _write_all(ctx: AgentContext, files: dict[str, str]) -> None:
    for path, text in files.items():
        await ctx.write(path, text, quiet=True)


async def _ignore(_stream: Stream, _chunk: bytes) -> None:
    return None
