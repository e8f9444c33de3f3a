"""The built-in model agent: one readable loop, in the spirit of mini-swe-agent.

Each step asks the model (through the run's gateway, which holds the real key, records the
call and enforces the model limits) and does one thing:
- a tool call: `bash` runs a command in the agent's container, `ask_user` asks through the
  run's clarification channel, `submit` ends the phase;
- a text-only reply (models without tool calls): a ```bash block, an `ASK:` line or a
  `SUBMIT:` line — the same three actions;
- anything else (no action, a malformed tool call) is answered with what went wrong, and the
  model gets another step.
Replies are streamed by default: the text goes to the trace as it comes (AgentStreamed
pieces), then whole (AgentSaid). It stops on submit, or when a limit is reached (steps and
wall clock by its context; model calls, tokens and cost at the gateway), or when the endpoint
fails after the gateway's retries — raising `AgentStop` with the reason, which the run
records. Prompts are templates in
`agents/prompts/` (`system.md`, `instance.md`); an entry's `prompts` folder overrides them.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from icae_tui.agents.base import AgentContext
from icae_tui.agents.config import ModelAgentConfig, model_need
from icae_tui.domain.agent import AgentNeeds, AgentStop
from icae_tui.domain.events import AgentStreamed
from icae_tui.domain.states import StopReason

PROMPTS = Path(__file__).with_name("prompts")
OBSERVATION_CHARS = 10_000  # of a command's output shown back to the model
COMMAND_TIMEOUT_S = 120.0
DEFAULT_MAX_STEPS = 50  # when the entry sets none: a model that never submits must end
STREAM_PIECE_CHARS = 80
STREAM_PIECE_S = 0.1

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run one shell command in the working directory; returns its output.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ask_user",
            "description": "Ask the user one clarification question; returns the answer.",
            "parameters": {
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Finish: the tool is built. Give a short summary.",
            "parameters": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            },
        },
    },
]

_BASH_BLOCK = re.compile(r"```(?:bash|sh)?\s*\n(.*?)```", re.DOTALL)
_ASK = re.compile(r"^ASK:\s*(.+)$", re.MULTILINE)
_SUBMIT = re.compile(r"^SUBMIT:\s*(.*)$", re.MULTILINE)


class Streamer:
    """Passes the streamed reply on to the trace in pieces worth an event: a line, or
    STREAM_PIECE_CHARS characters, or what came within STREAM_PIECE_S."""

    def __init__(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        self._buf: list[str] = []
        self._size = 0
        self._since = time.monotonic()
        self.used = False

    async def __call__(self, piece: str) -> None:
        self._buf.append(piece)
        self._size += len(piece)
        now = time.monotonic()
        if "\n" in piece or self._size >= STREAM_PIECE_CHARS or now - self._since >= STREAM_PIECE_S:
            await self.flush()

    async def flush(self) -> None:
        if self._buf:
            self.used = True
            await self._ctx.trace(AgentStreamed(text="".join(self._buf)))
            self._buf, self._size = [], 0
        self._since = time.monotonic()


def _template(name: str, folder: Path | None) -> str:
    for base in (folder, PROMPTS):
        if base is not None and (base / name).is_file():
            return (base / name).read_text(encoding="utf-8")
    raise FileNotFoundError(f"prompt template {name} not found")


class ModelAgent:
    def __init__(self, name: str, settings: ModelAgentConfig) -> None:
        self.name = name
        self.settings = settings
        limits = settings.limits
        if limits.max_steps is None:
            limits = limits.model_copy(update={"max_steps": DEFAULT_MAX_STEPS})
        self.limits = limits
        self.needs = AgentNeeds(model=model_need(settings))  # driven from the host

    def _messages(self, prd: str, ctx: AgentContext) -> list[dict[str, Any]]:
        folder = Path(self.settings.prompts) if self.settings.prompts else None
        values = {"workspace": ctx.workspace, "budget": ctx.budget, "prd": prd}
        return [
            {"role": "system", "content": _template("system.md", folder).format(**values)},
            {"role": "user", "content": _template("instance.md", folder).format(**values)},
        ]

    async def build(self, prd: str, ctx: AgentContext) -> str:
        if ctx.model is None:
            raise AgentStop(StopReason.INFRA_ERROR, "no model endpoint for the model agent")
        messages = self._messages(prd, ctx)
        while True:
            await ctx.step()  # stops at the step or time limit
            message = await self._ask_model(messages, ctx)
            messages.append(message)
            calls = message.get("tool_calls") or []
            if calls:
                for call in calls:
                    done, text = await self._tool(call, ctx)
                    if done is not None:
                        return done
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                     "content": text})  # fmt: skip
                continue
            done, text = await self._text_action(str(message.get("content") or ""), ctx)
            if done is not None:
                return done
            messages.append({"role": "user", "content": text})

    async def _ask_model(self, messages: list[dict[str, Any]], ctx: AgentContext) -> dict[str, Any]:
        """One model turn; its text goes to the trace, streamed as it comes when asked to."""
        assert ctx.model is not None
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages,
                                "tools": TOOLS}  # fmt: skip
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        streamer = Streamer(ctx) if self.settings.stream else None
        reply = await ctx.model.complete(body, streamer)
        if streamer is not None:
            await streamer.flush()
        message = _first_message(reply)
        if message.get("content"):
            await ctx.say(str(message["content"]), streamed=bool(streamer and streamer.used))
        return message

    async def _tool(self, call: dict[str, Any], ctx: AgentContext) -> tuple[str | None, str]:
        fn = call.get("function") or {}
        name = fn.get("name", "")
        try:
            args = json.loads(fn.get("arguments") or "{}")
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError:
            return None, (f"error: the arguments of {name!r} must be a JSON object, got "
                          f"{str(fn.get('arguments'))[:200]!r}; try again")  # fmt: skip
        match name:
            case "bash" if isinstance(args.get("command"), str):
                return None, await _run(args["command"], ctx)
            case "ask_user" if isinstance(args.get("question"), str):
                return None, await ctx.ask(args["question"])
            case "submit":
                return str(args.get("message", "done")), ""
        return (
            None,
            f"error: unknown tool or missing argument in {name!r}; tools: bash, ask_user, submit",
        )

    async def _text_action(self, text: str, ctx: AgentContext) -> tuple[str | None, str]:
        if block := _BASH_BLOCK.search(text):
            return None, await _run(block.group(1).strip(), ctx)
        if ask := _ASK.search(text):
            return None, "The user answers: " + await ctx.ask(ask.group(1).strip())
        if submit := _SUBMIT.search(text):
            return submit.group(1).strip() or "done", ""
        return None, ("No action found. Reply with a ```bash block, an `ASK: ...` line or a "
                      "`SUBMIT: ...` line (or call a tool).")  # fmt: skip


def _first_message(reply: dict[str, Any]) -> dict[str, Any]:
    try:
        message = reply["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise AgentStop(StopReason.AGENT_ERROR, "the model's reply has no message") from None
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


async def _run(command: str, ctx: AgentContext) -> str:
    res = await ctx.run(command, COMMAND_TIMEOUT_S)
    out = res.output
    if len(out) > OBSERVATION_CHARS:
        out = out[:OBSERVATION_CHARS] + f"\n[… {len(out) - OBSERVATION_CHARS} more characters]"
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    return f"{status}\n{out}"
