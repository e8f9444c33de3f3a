"""The built-in model agent: one readable loop, in the spirit of mini-swe-agent.

Each step asks the model (through the run's gateway, which holds the real key, records the
call and enforces the model limits) and does what its reply says:
- tool calls: `bash` runs a command in the agent's container, `ask_user` asks through the
  run's clarification channel, `submit` ends the phase;
- a text reply (models without tool calls): ```bash blocks, `ASK:` lines, `SUBMIT:` lines
  and tool calls written as JSON text (`replies.read_reply`). Small models write several in
  one reply, so all are taken, in the order written — every block run, every question asked,
  every result returned in one message — never silently cut; `SUBMIT:` only counts alone.
- anything else (no action, a fence never closed, an open heredoc, a malformed tool call) is
  answered with what went wrong, and the model gets another step; `max_malformed_turns`
  such replies in a row stop the agent (agent_error, saying why).
With `constrain_reply` the server constrains each reply to one well-formed action
(`constrain.py`); a server that refuses it (HTTP 400) is asked again without it.
Replies are streamed by default: the text goes to the trace as it comes (AgentStreamed
pieces), then whole (AgentSaid). It stops on submit, or when a limit is reached (steps and
wall clock by its context; model calls, tokens and cost at the gateway), or when the endpoint
fails after the gateway's retries — raising `AgentStop` with the reason, which the run
records. Prompts are templates in `agents/prompts/` (`system.md` with the reply format of the
mode, `reply-tools.md`, `reply-text.md` or `reply-json.md`, and `instance.md`); an entry's
`prompts` folder overrides them.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icae_tui.agents.base import AgentContext
from icae_tui.agents.config import ModelAgentConfig, model_need
from icae_tui.agents.constrain import REPLY_TEMPLATES, ReplyConstraint, extra_body
from icae_tui.agents.endpoint import EndpointRefused
from icae_tui.agents.network import network_note
from icae_tui.agents.replies import Action, ActionKind, Reading, check_command, read_reply
from icae_tui.domain.agent import AgentNeeds, AgentStop
from icae_tui.domain.events import AgentStreamed, Progress
from icae_tui.domain.states import StopReason

log = logging.getLogger(__name__)

PROMPTS = Path(__file__).with_name("prompts")
OBSERVATION_CHARS = 10_000  # of a command's output shown back to the model
COMMAND_TIMEOUT_S = 120.0
DEFAULT_MAX_STEPS = 50  # when the entry sets none: a model that never submits must end
STREAM_PIECE_CHARS = 80
STREAM_PIECE_S = 0.1
CONSTRAINT_REFUSED = (400, 422)  # how servers answer a field they do not support
MAX_ACTIONS = 8  # taken from one reply; more are told as not taken
OBSERVATION_MIN_CHARS = 2_000  # of each command's output when a reply ran several

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

NO_ACTION = ("Reply with a ```bash block, an `ASK: ...` line or a `SUBMIT: ...` line (or call "
             "a tool).")  # fmt: skip


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


@dataclass
class Turn:
    """What one reply came to: the summary when it submitted, else the messages answering
    it; `acted` is False when nothing was taken (a malformed reply), `problem` says why."""

    done: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    acted: bool = True
    problem: str = ""


@dataclass
class Asked:
    """The questions of one build and their answers. A question asked again is answered from
    here, not spent again; and it closes questions: a small model that repeats itself has
    nothing new to ask (seen: Qwen2.5-Coder-1.5B asked the same six for 30 steps, writing no
    code), so a constrained reply may no longer hold an `ASK:`."""

    answers: dict[str, str] = field(default_factory=dict)
    open: bool = True

    async def ask(self, question: str, ctx: AgentContext) -> tuple[str, bool]:
        """(the answer, whether it is the user's fresh one)."""
        key = _question_key(question)
        if key in self.answers:
            self.open = False
            return (f"You asked this before; the user's answer was:\n{self.answers[key]}\n"
                    "Ask nothing more: act on what you know (write the code, run it)."), False  # fmt: skip
        answer = await ctx.ask(question)
        self.answers[key] = answer
        return answer, True


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
        values = {"workspace": ctx.workspace, "budget": ctx.budget, "prd": prd,
                  "network": network_note(ctx.env)}  # fmt: skip
        reply = _template(REPLY_TEMPLATES[self.settings.constrain_reply], folder)
        values["reply_format"] = reply.format(**values).rstrip("\n")
        return [
            {"role": "system", "content": _template("system.md", folder).format(**values)},
            {"role": "user", "content": _template("instance.md", folder).format(**values)},
        ]

    async def build(self, prd: str, ctx: AgentContext) -> str:
        if ctx.model is None:
            raise AgentStop(StopReason.INFRA_ERROR, "no model endpoint for the model agent")
        messages = self._messages(prd, ctx)
        constraint = self.settings.constrain_reply  # None once the server refused it
        malformed = 0
        asked = Asked()
        while True:
            await ctx.step()  # stops at the step or time limit
            message, constraint = await self._ask_model(messages, ctx, constraint, asked.open)
            messages.append(message)
            turn = await self._take(message, ctx, asked)
            if turn.done is not None:
                return turn.done
            messages.extend(turn.messages)
            malformed = 0 if turn.acted else malformed + 1
            if malformed >= self.settings.max_malformed_turns:
                raise AgentStop(
                    StopReason.AGENT_ERROR,
                    f"{malformed} malformed replies in a row, no action taken "
                    f"(the last: {_short(turn.problem)})",
                )

    async def _ask_model(
        self, messages: list[dict[str, Any]], ctx: AgentContext,
        constraint: ReplyConstraint | None, may_ask: bool = True,
    ) -> tuple[dict[str, Any], ReplyConstraint | None]:  # fmt: skip
        """One model turn; its text goes to the trace, streamed as it comes when asked to.
        Returns the message and the constraint still in force."""
        assert ctx.model is not None
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if self.settings.constrain_reply is None:
            body["tools"] = TOOLS  # a constrained reply is text: servers refuse tools with it
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        if self.settings.max_reply_tokens is not None:
            body["max_tokens"] = self.settings.max_reply_tokens
        streamer = Streamer(ctx) if self.settings.stream else None
        try:
            constrained = {**body, **extra_body(constraint, may_ask)} if constraint else body
            reply = await ctx.model.complete(constrained, streamer)
        except EndpointRefused as err:
            if constraint is None or err.status not in CONSTRAINT_REFUSED:
                raise
            why = err.detail.removeprefix("model endpoint refused the request: ")
            note = (f"the model endpoint refused the {constraint} reply constraint (HTTP "
                    f"{err.status}: {why}); asking again without it, for the rest of the run")  # fmt: skip
            log.warning("model agent %s: %s", self.name, note)
            await ctx.trace(Progress(message=note))
            constraint = None
            reply = await ctx.model.complete(body, streamer)
        if streamer is not None:
            await streamer.flush()
        message = _first_message(reply)
        if message.get("content"):
            await ctx.say(str(message["content"]), streamed=bool(streamer and streamer.used))
        return message, constraint

    async def _take(self, message: dict[str, Any], ctx: AgentContext, asked: Asked) -> Turn:
        """Take what one reply asks for, in order."""
        content = str(message.get("content") or "")
        calls = message.get("tool_calls") or []
        if not calls:
            return await self._take_text(read_reply(content), ctx, asked)
        turn = Turn(acted=False)
        for call in calls:
            done, text, ok = await self._tool(call, ctx, asked)
            if done is not None:
                return Turn(done=done)
            turn.acted |= ok
            turn.problem = turn.problem or ("" if ok else text)
            turn.messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                  "content": text})  # fmt: skip
        if skipped := read_reply(content).actions:  # told, not lost
            turn.messages[-1]["content"] += (
                f"\n\nnote: your reply's text also held {_count(skipped)}, not taken: "
                "beside tool calls only the tool calls are taken"
            )
        return turn

    async def _tool(
        self, call: dict[str, Any], ctx: AgentContext, asked: Asked
    ) -> tuple[str | None, str, bool]:
        """(the summary on submit, the tool's result, whether the call was well-formed)."""
        fn = call.get("function") or {}
        name = fn.get("name", "")
        try:
            args = json.loads(fn.get("arguments") or "{}")
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError:
            return None, (f"error: the arguments of {name!r} must be a JSON object, got "
                          f"{str(fn.get('arguments'))[:200]!r}; try again"), False  # fmt: skip
        match name:
            case "bash" if isinstance(args.get("command"), str):
                if (why := check_command(args["command"])) is not None:
                    return None, f"error: {why}; try again", False
                return None, await _run(args["command"], ctx), True
            case "ask_user" if isinstance(args.get("question"), str):
                return None, (await asked.ask(args["question"], ctx))[0], True
            case "submit":
                return str(args.get("message", "done")), "", True
        return (
            None,
            f"error: unknown tool or missing argument in {name!r}; tools: bash, ask_user, submit",
            False,
        )

    async def _take_text(self, reading: Reading, ctx: AgentContext, asked: Asked) -> Turn:
        actions, notes = reading.actions, list(reading.problems)
        if reading.other_blocks:
            langs = ", ".join(f"```{lang}" for lang in dict.fromkeys(reading.other_blocks))
            notes.append(f"{langs} blocks are not run nor saved: only ```bash blocks run (to "
                         "write a file: cat > name <<'EOF' … EOF inside one)")  # fmt: skip
        submits = [a for a in actions if a.kind is ActionKind.SUBMIT]
        if submits and len(actions) == 1 and not notes:
            return Turn(done=submits[0].text)
        if submits:
            actions = [a for a in actions if a.kind is not ActionKind.SUBMIT]
            why = "beside other actions" if actions else "beside what went wrong"
            notes.append(f"SUBMIT was not taken {why}: submit in a reply of its own, once "
                         "you have seen the tool work")  # fmt: skip
        actions = _once(actions, notes)
        if len(actions) > MAX_ACTIONS:
            rest = actions[MAX_ACTIONS:]
            notes.append(f"only the first {MAX_ACTIONS} actions were taken; not taken: "
                         + "; ".join(_label(a) for a in rest))  # fmt: skip
            actions = actions[:MAX_ACTIONS]
        if any(a.as_json for a in actions) and self.settings.constrain_reply is None:
            notes.append("a tool call written as JSON text was taken as meant")
        if not actions:
            problem = "; ".join(notes) or "no action found"
            text = f"No action was taken: {problem}. {NO_ACTION}"
            return Turn(messages=[_user(text)], acted=False, problem=problem)
        cap = max(OBSERVATION_MIN_CHARS, OBSERVATION_CHARS // len(actions))
        results = [await self._act(a, ctx, cap, asked) for a in actions]
        if len(results) == 1:
            text = results[0]
        else:
            text = f"{len(results)} actions of your reply were taken, in order:\n\n"
            text += "\n\n".join(f"[{i}] {_label(a)}\n{r}"
                                for i, (a, r) in enumerate(zip(actions, results, strict=True), 1))  # fmt: skip
        if notes:
            text += "\n\nnote: " + "\nnote: ".join(notes)
        return Turn(messages=[_user(text)])

    async def _act(self, action: Action, ctx: AgentContext, cap: int, asked: Asked) -> str:
        if action.kind is ActionKind.ASK:
            answer, fresh = await asked.ask(action.text, ctx)
            return "The user answers: " + answer if fresh else answer
        return await _run(action.text, ctx, cap)


def _once(actions: list[Action], notes: list[str]) -> list[Action]:
    """The reply's actions with a question written again in the same reply asked once (a
    small model repeats itself; each asking spends the budget)."""
    seen: set[str] = set()
    kept = []
    for action in actions:
        if action.kind is ActionKind.ASK:
            key = _question_key(action.text)
            if key in seen:
                notes.append(f"the question {action.text!r} was written twice: asked once")
                continue
            seen.add(key)
        kept.append(action)
    return kept


def _question_key(question: str) -> str:
    """A question as compared for a repeat: case and spacing aside."""
    return " ".join(question.lower().split())


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _label(action: Action) -> str:
    first = action.text.strip().split("\n", 1)[0]
    first = first if len(first) <= 70 else first[:69] + "…"
    return {ActionKind.RUN: f"ran: {first}", ActionKind.ASK: f"asked: {first}",
            ActionKind.SUBMIT: f"SUBMIT: {first}"}[action.kind]  # fmt: skip


def _count(actions: list[Action]) -> str:
    return "1 action" if len(actions) == 1 else f"{len(actions)} actions"


def _first_message(reply: dict[str, Any]) -> dict[str, Any]:
    try:
        message = reply["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise AgentStop(StopReason.AGENT_ERROR, "the model's reply has no message") from None
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


async def _run(command: str, ctx: AgentContext, cap: int = OBSERVATION_CHARS) -> str:
    res = await ctx.run(command, COMMAND_TIMEOUT_S)
    out = res.output
    if len(out) > cap:
        out = out[:cap] + f"\n[… {len(out) - cap} more characters]"
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    return f"{status}\n{out}"
