"""The built-in model agent's loop made robust for small models (no Docker): its reply is
read whole (several blocks, questions beside commands, open heredocs, tool calls written as
JSON text), malformed turns are answered and bounded, and an opt-in reply constraint (GBNF or
a JSON schema) is sent, and dropped when the server refuses it.

The model is a scripted OpenAI-compatible server on 127.0.0.1 behind the run's real gateway
(its Unix socket, the agent's own client); the container and the user are a recording
stand-in context, so each test sees exactly what was run and asked, in order."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aiohttp import web

from icae_tui.agents.config import ModelAgentConfig, parse_entry
from icae_tui.agents.constrain import GBNF, GBNF_NO_ASK, SCHEMA, SCHEMA_NO_ASK, ReplyConstraint
from icae_tui.agents.endpoint import GatewayEndpoint
from icae_tui.agents.model_agent import MAX_ACTIONS, ModelAgent
from icae_tui.agents.replies import ActionKind, open_heredoc, read_reply
from icae_tui.domain.agent import AgentStop, CommandResult, Limits
from icae_tui.domain.events import Event, Progress
from icae_tui.domain.states import StopReason
from icae_tui.gateway import serving
from tests.gateway_upstream import ScriptedServer, chunk, completion, config

Step = str | int | dict[str, Any]


class Upstream(ScriptedServer):
    """Answers from `script`, in order: a str is the reply's text (streamed when asked), a
    dict a whole message (tool calls; not streamed), an int an error of that status; past
    the end it submits. Every body is kept in `seen`."""

    def __init__(self) -> None:
        self.script: list[Step] = []
        self.seen: list[dict[str, Any]] = []

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append(body)
        step = self.script.pop(0) if self.script else "SUBMIT: the end of the script"
        if isinstance(step, int):
            return web.json_response({"error": {"message": "grammar not supported"}},
                                     status=step)  # fmt: skip
        if isinstance(step, dict):
            reply = completion()
            reply["choices"][0]["message"] = step
            return web.json_response(reply)
        if not body.get("stream"):
            return web.json_response(completion(step))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        pieces = [chunk({"role": "assistant", "content": ""})]
        pieces += [chunk({"content": step[i : i + 9]}) for i in range(0, len(step), 9)]
        pieces.append(chunk({}, finish="stop"))
        for piece in pieces:
            await resp.write(f"data: {json.dumps(piece)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp


class Context:
    """The agent's context, recording: commands run, questions asked, events traced."""

    workspace = "/workspace"
    budget = 5
    env: dict[str, str] = {}

    def __init__(self, model: GatewayEndpoint, limits: Limits) -> None:
        self.model = model
        self.limits = limits
        self.steps = 0
        self.ran: list[str] = []
        self.asked: list[str] = []
        self.events: list[Event] = []
        self.said: list[str] = []

    async def step(self) -> None:
        self.steps += 1
        if self.limits.max_steps is not None and self.steps > self.limits.max_steps:
            raise AgentStop(StopReason.STEP_LIMIT, "step limit")

    async def trace(self, event: Event) -> None:
        self.events.append(event)

    async def say(self, text: str, *, streamed: bool = False) -> None:
        self.said.append(text)

    async def run(self, command: str, timeout_s: float = 60.0, **_: Any) -> CommandResult:
        self.ran.append(command)
        return CommandResult(0, f"ran #{len(self.ran)}\n".encode(), b"", 0.0)

    async def ask(self, question: str) -> str:
        self.asked.append(question)
        return f"answer #{len(self.asked)}\n[{self.budget - len(self.asked)} question(s) left]"

    async def read(self, path: str, limit: int) -> bytes | None:
        return None

    async def keep(self, name: str, data: bytes, *, append: bool = False) -> None:
        pass

    def remaining_s(self) -> float | None:
        return None

    async def write(self, path: str, content: str, mode: int = 0o644, *,
                    quiet: bool = False) -> None:  # fmt: skip
        pass


def _settings(**extra: Any) -> ModelAgentConfig:
    settings, problems = parse_entry("small", {"kind": "model", "model": "small-model",
                                               "base_url": "http://127.0.0.1:9/v1", **extra})  # fmt: skip
    assert settings is not None and not problems, problems
    assert isinstance(settings, ModelAgentConfig)
    return settings


async def _build(
    upstream: Upstream, script: list[Step], **extra: Any
) -> tuple[Context, str | AgentStop]:
    """Run the agent on `script`: the context and the summary it submitted, or its stop."""
    upstream.script = list(script)
    async with serving(config(upstream)) as gateway:
        endpoint = GatewayEndpoint(gateway.socket_path, gateway.token)
        agent = ModelAgent("small", _settings(**extra))
        ctx = Context(endpoint, agent.limits)
        try:
            outcome: str | AgentStop = await agent.build("Build semver.py.", ctx)
        except AgentStop as stop:
            outcome = stop
        finally:
            await endpoint.close()
    return ctx, outcome


def _observation(upstream: Upstream, call: int) -> str:
    """What the model was shown after its reply `call` (0-based): the next request's last
    message."""
    message = upstream.seen[call + 1]["messages"][-1]
    return str(message["content"])


HEREDOC_WRITE = "cat > semver.py <<'EOF'\nprint('1.2.3')\nEOF"


# -- the reply that used to lose its questions ----------------------------------------------


async def test_questions_written_after_a_block_reach_the_user(upstream, key_env):
    # What Qwen2.5-Coder-1.5B wrote 60 times: a block, then questions, in one reply.
    reply = (f"I will start the file.\n```bash\n{HEREDOC_WRITE}\n```\n"
             "ASK: Should a leading 'v' be accepted?\nASK: What exit code on bad input?\n")  # fmt: skip
    ctx, outcome = await _build(upstream, [reply, "SUBMIT: semver.py done"])
    assert outcome == "semver.py done"
    assert ctx.ran == [HEREDOC_WRITE]
    assert ctx.asked == ["Should a leading 'v' be accepted?", "What exit code on bad input?"]
    shown = _observation(upstream, 0)
    assert shown.startswith("3 actions of your reply were taken, in order:")
    assert shown.index("[1] ran: cat > semver.py") < shown.index("ran #1")
    assert "[2] asked: Should a leading 'v' be accepted?\nThe user answers: answer #1" in shown
    assert "[3] asked: What exit code on bad input?\nThe user answers: answer #2" in shown


async def test_several_blocks_run_one_after_another_each_result_returned(upstream, key_env):
    reply = ("```bash\nmkdir -p src\n```\nthen\n```sh\nls src\n```\n"
             "```\necho three\n```")  # fmt: skip
    ctx, outcome = await _build(upstream, [reply, "SUBMIT: ok"])
    assert outcome == "ok"
    assert ctx.ran == ["mkdir -p src", "ls src", "echo three"]
    shown = _observation(upstream, 0)
    for i in (1, 2, 3):
        assert f"\nexit code 0\nran #{i}" in shown
    assert shown.index("ran #1") < shown.index("ran #2") < shown.index("ran #3")


async def test_a_submit_beside_other_actions_is_told_not_taken(upstream, key_env):
    ctx, outcome = await _build(
        upstream, [f"```bash\n{HEREDOC_WRITE}\n```\nSUBMIT: done early", "SUBMIT: done"]
    )
    assert outcome == "done" and ctx.ran == [HEREDOC_WRITE]
    assert "SUBMIT was not taken beside other actions" in _observation(upstream, 0)


async def test_a_question_written_twice_in_a_reply_is_asked_once(upstream, key_env):
    reply = "ASK: Which Python?\nI mean: ASK: which  python?\nASK: Which flags?"
    ctx, _ = await _build(upstream, [reply, "SUBMIT: ok"])
    assert ctx.asked == ["Which Python?", "Which flags?"]
    assert "note: the question 'which  python?' was written twice: asked once" in (
        _observation(upstream, 0)
    )


async def test_a_question_asked_again_is_answered_from_before_and_closes_questions(
    upstream, key_env
):
    # What Qwen2.5-Coder-1.5B did on semver through the product: the same six questions
    # round and round for 30 steps, never a line of code.
    script = ["ASK: What does parse do?", "ASK: What  does parse do?",
              f"```bash\n{HEREDOC_WRITE}\n```", "SUBMIT: ok"]  # fmt: skip
    ctx, outcome = await _build(upstream, script, constrain_reply="gbnf", stream=False)
    assert outcome == "ok" and ctx.asked == ["What does parse do?"]  # the budget spent once
    repeated = _observation(upstream, 1)
    assert "You asked this before; the user's answer was:\nanswer #1" in repeated
    assert [b["grammar"] for b in upstream.seen] == [GBNF, GBNF, GBNF_NO_ASK, GBNF_NO_ASK]


async def test_closed_questions_drop_ask_from_the_json_schema_too(upstream, key_env):
    ask = '{"thought": "", "action": "ask", "input": "Which flags?"}'
    script = [ask, ask, '{"thought": "", "action": "submit", "input": "built"}']
    ctx, outcome = await _build(upstream, script, constrain_reply="json_schema")
    assert outcome == "built" and ctx.asked == ["Which flags?"]
    schemas = [b["response_format"]["json_schema"]["schema"] for b in upstream.seen]
    assert schemas == [SCHEMA, SCHEMA, SCHEMA_NO_ASK]
    assert SCHEMA_NO_ASK["properties"]["action"]["enum"] == ["bash", "submit"]


def test_the_closed_grammar_allows_no_question():
    closed = _gbnf_regex(GBNF_NO_ASK)
    assert not closed.fullmatch("ASK: Should a leading v be accepted?")
    assert closed.fullmatch(f"Write it.\n```bash\n{HEREDOC_WRITE}\n```")
    assert closed.fullmatch("SUBMIT: semver.py is built")


async def test_past_the_cap_the_actions_not_taken_are_named(upstream, key_env):
    reply = "\n".join(f"ASK: question {i}?" for i in range(MAX_ACTIONS + 2))
    ctx, _ = await _build(upstream, [reply, "SUBMIT: ok"])
    assert ctx.asked == [f"question {i}?" for i in range(MAX_ACTIONS)]
    shown = _observation(upstream, 0)
    assert f"only the first {MAX_ACTIONS} actions were taken; not taken: " in shown
    assert f"asked: question {MAX_ACTIONS}?; asked: question {MAX_ACTIONS + 1}?" in shown


# -- malformed turns -----------------------------------------------------------------------


async def test_an_open_heredoc_is_not_run_and_the_model_is_told(upstream, key_env):
    unclosed = "```bash\ncat > semver.py <<EOF\nprint('x')\n```"
    ctx, outcome = await _build(
        upstream, [unclosed, f"```bash\n{HEREDOC_WRITE}\n```", "SUBMIT: ok"]
    )
    assert outcome == "ok" and ctx.ran == [HEREDOC_WRITE]
    shown = _observation(upstream, 0)
    assert shown.startswith(
        "No action was taken: the heredoc `<<EOF` (in `cat > semver.py <<EOF`) is never closed"
    )
    assert "a line holding only `EOF`" in shown


async def test_an_unterminated_fence_and_no_action_are_answered(upstream, key_env):
    ctx, outcome = await _build(
        upstream, ["```bash\nls -la\n", "I think we should build it.", "SUBMIT: ok"]
    )
    assert outcome == "ok" and ctx.ran == []
    assert "the ```bash block has no closing ```" in _observation(upstream, 0)
    assert _observation(upstream, 1).startswith("No action was taken: no action found.")


async def test_a_tool_call_written_as_json_text_is_taken(upstream, key_env):
    replies = [
        '{"name": "bash", "arguments": {"command": "ls"}}',
        '<tool_call>\n{"name": "ask_user", "arguments": "{\\"question\\": \\"Which Python?\\"}"}'
        "\n</tool_call>",
        '```json\n{"name": "write_file", "arguments": {"path": "a.py"}}\n```',
        '{"name": "submit", "arguments": {"message": "built"}}',
    ]
    ctx, outcome = await _build(upstream, replies)
    assert outcome == "built"
    assert ctx.ran == ["ls"] and ctx.asked == ["Which Python?"]
    assert "a tool call written as JSON text was taken as meant" in _observation(upstream, 0)
    assert "'write_file' written as JSON names no tool" in _observation(upstream, 2)


async def test_malformed_replies_in_a_row_stop_the_agent_with_the_reason(upstream, key_env):
    # A good turn between resets the count: 2 bad, 1 good, then 3 bad stop it.
    bad = ["nothing to do", "```python\nprint(1)\n```", "```bash\nls\n```", "still nothing",
           "```bash\ncat <<EOF\nx\n```", "no action again", "never asked"]  # fmt: skip
    ctx, outcome = await _build(upstream, bad, max_malformed_turns=3)
    assert isinstance(outcome, AgentStop)
    assert outcome.reason is StopReason.AGENT_ERROR
    assert outcome.detail.startswith("3 malformed replies in a row, no action taken (the last: ")
    assert ctx.ran == ["ls"] and len(upstream.seen) == 6
    assert "```python blocks are not run nor saved" in _observation(upstream, 1)


async def test_the_malformed_bound_is_three_by_default(upstream, key_env):
    ctx, outcome = await _build(upstream, ["hmm"] * 5)
    assert isinstance(outcome, AgentStop) and len(upstream.seen) == 3


def _calls(content: str, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"c{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}  # fmt: skip


async def test_text_actions_beside_tool_calls_are_told_not_taken(upstream, key_env):
    reply = _calls("ASK: is this lost?", ("bash", {"command": "ls"}), ("bash", {"command": "pwd"}))
    ctx, outcome = await _build(upstream, [reply, "SUBMIT: ok"], stream=False)
    assert outcome == "ok" and ctx.ran == ["ls", "pwd"] and ctx.asked == []
    first, second = upstream.seen[1]["messages"][-2:]
    assert (first["role"], first["tool_call_id"], first["content"]) == (
        "tool",
        "c0",
        "exit code 0\nran #1\n",
    )
    assert second["tool_call_id"] == "c1" and second["content"].endswith(
        "note: your reply's text also held 1 action, not taken: beside tool calls only the "
        "tool calls are taken"
    )


async def test_an_open_heredoc_in_a_bash_tool_call_is_answered_and_counted(upstream, key_env):
    bad = _calls("", ("bash", {"command": "cat > a.py <<'EOF'\nprint(1)\n"}))
    ctx, outcome = await _build(upstream, [bad, bad, bad], stream=False)
    assert ctx.ran == [] and isinstance(outcome, AgentStop)
    assert "the heredoc `<<'EOF'` (in `cat > a.py <<'EOF'`) is never closed" in outcome.detail
    assert upstream.seen[1]["messages"][-1]["content"].startswith("error: the heredoc")


# -- reply constraints ---------------------------------------------------------------------


async def test_no_constraint_by_default_and_tools_offered(upstream, key_env):
    await _build(upstream, ["SUBMIT: ok"])
    [body] = upstream.seen
    assert "grammar" not in body and "response_format" not in body
    assert [t["function"]["name"] for t in body["tools"]] == ["bash", "ask_user", "submit"]


async def test_gbnf_is_sent_when_enabled(upstream, key_env):
    _, outcome = await _build(upstream, ["ok\nSUBMIT: done"], constrain_reply="gbnf")
    assert outcome == "done"
    [body] = upstream.seen
    assert body["grammar"] == GBNF and "tools" not in body
    assert "exactly one action" in body["messages"][0]["content"]


async def test_max_reply_tokens_is_sent_as_max_tokens(upstream, key_env):
    await _build(upstream, ["SUBMIT: done"], constrain_reply="gbnf", max_reply_tokens=64)
    assert upstream.seen[0]["max_tokens"] == 64


async def test_a_json_schema_is_sent_and_its_replies_taken(upstream, key_env):
    replies = ['{"thought": "look", "action": "bash", "input": "ls"}',
               '{"thought": "done", "action": "submit", "input": "built"}']  # fmt: skip
    ctx, outcome = await _build(upstream, replies, constrain_reply="json_schema")
    assert outcome == "built" and ctx.ran == ["ls"]
    for body in upstream.seen:
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    assert _observation(upstream, 0) == "exit code 0\nran #1\n"  # no note: the expected form


@pytest.mark.parametrize("status", [400, 422])
async def test_a_server_refusing_the_constraint_is_asked_again_without_it(
    upstream, key_env, status
):
    ctx, outcome = await _build(
        upstream, [status, "```bash\nls\n```", "SUBMIT: ok"], constrain_reply="gbnf", stream=False
    )
    assert outcome == "ok" and ctx.ran == ["ls"]
    assert ["grammar" in b for b in upstream.seen] == [True, False, False]  # once, then never
    assert all("tools" not in b for b in upstream.seen)
    [note] = [e for e in ctx.events if isinstance(e, Progress)]
    assert "refused the gbnf reply constraint" in note.message
    assert f"HTTP {status}" in note.message and "without it" in note.message


async def test_a_400_without_a_constraint_still_stops_the_agent(upstream, key_env):
    _, outcome = await _build(upstream, [400])
    assert isinstance(outcome, AgentStop) and outcome.reason is StopReason.AGENT_ERROR
    assert len(upstream.seen) == 1


def test_the_setting_is_validated():
    assert _settings().constrain_reply is None
    assert _settings(constrain_reply="json_schema").constrain_reply is ReplyConstraint.JSON_SCHEMA
    _, problems = parse_entry("x", {"kind": "model", "model": "m", "constrain_reply": "regex"})
    assert [loc for loc, _ in problems] == [("constrain_reply",)]
    _, problems = parse_entry("x", {"kind": "model", "model": "m", "max_malformed_turns": 0})
    assert [loc for loc, _ in problems] == [("max_malformed_turns",)]


# -- the reading itself, pure --------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "opened"),
    [
        ("cat > a <<'EOF'\nx\nEOF", None),
        ("cat > a <<EOF\nx\n", "<<EOF"),
        ('cat > a << "END"\nx\nEND\ncat > b <<-EOF\n\tx\n\tEOF', None),
        ("cat > a <<'A'\nA\ncat > b <<'B'\nx", "<<'B'"),
        ("cat > a <<EOF\nEOF \n", None),  # trailing blanks end it too
        ("grep x <<< 'here-string'", None),
        ("echo $((1 << 2))", None),
    ],
)
def test_open_heredocs_are_found(command, opened):
    assert open_heredoc(command) == opened


def test_a_reply_is_read_in_the_order_written():
    reading = read_reply(
        "ASK: first?\n```bash\nls\n```\n```python\nx = 1\n```\n"
        '{"name": "bash", "arguments": {"command": "pwd"}}\nSUBMIT: done'
    )
    assert [(a.kind, a.text) for a in reading.actions] == [
        (ActionKind.ASK, "first?"), (ActionKind.RUN, "ls"), (ActionKind.RUN, "pwd"),
        (ActionKind.SUBMIT, "done"),
    ]  # fmt: skip
    assert reading.other_blocks == ["python"] and not reading.problems
    assert read_reply('echo \'{"name": "x"}\' is just prose').actions == []
    # a question ending a line of prose is taken; a submit must start its line
    reading = read_reply("I need to know one thing. ASK: `Which format?`\nI will SUBMIT: later")
    assert [(a.kind, a.text) for a in reading.actions] == [(ActionKind.ASK, "Which format?")]
    assert read_reply("- SUBMIT: **done**").actions[0].text == "done"


# -- the GBNF, checked as the regular language it is ---------------------------------------


def _gbnf_regex(grammar: str) -> re.Pattern[str]:
    """The grammar's `root` as a Python regex: each rule is substituted in (the grammar is
    not recursive); literals, classes, groups, `|`, `?`, `*`, `+` as in llama.cpp's GBNF."""
    rules: dict[str, str] = {}
    for line in grammar.strip().splitlines():
        name, _, rhs = line.partition(" ::= ")
        rules[name] = rhs
    token = re.compile(r'\s*("(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[()|?*+]|[a-z][a-z0-9-]*)')

    def convert(rhs: str) -> str:
        out, pos = "", 0
        while pos < len(rhs.rstrip()):
            m = token.match(rhs, pos)
            assert m, rhs[pos:]
            tok, pos = m.group(1), m.end()
            if tok.startswith('"'):
                out += re.escape(json.loads(tok))
            elif tok.startswith("["):
                out += tok.replace("\\n", "\n")
            elif tok in "()|?*+":
                out += "(?:" if tok == "(" else tok
            else:
                out += f"(?:{convert(rules[tok])})"
        return out

    return re.compile(convert(rules["root"]), re.DOTALL)


@pytest.mark.parametrize(
    ("reply", "ok"),
    [
        (f"Write it.\n```bash\n{HEREDOC_WRITE}\npython3 semver.py\n```", True),
        ("ASK: Should a leading v be accepted?", True),
        ("SUBMIT: semver.py is built", True),
        ('```bash\ncat > a <<"EOF"\n\nif x << 2:\nEOFX\nEOF\nls -l < a\n```', True),
        ("```bash\ncat > a.py <<'EOF'\nprint(1)\n```", False),  # the heredoc left open
        # a fence inside an open heredoc: what led a small model to blank lines without end
        ("```bash\ncat > a.md <<'EOF'\n```\nEOF\n```", False),
        ("```bash\nls\n```\nASK: and then?", False),  # two actions
        ("```bash\nls\n```\n```bash\npwd\n```", False),  # two blocks
        ("```bash\nls\n", False),  # the fence never closed
        ("Just thinking out loud.", False),  # no action
    ],
)
def test_the_grammar_allows_one_well_formed_action_only(reply, ok):
    assert bool(_gbnf_regex(GBNF).fullmatch(reply)) is ok
    if ok:  # and what it allows, the reader takes as exactly one action
        assert len(read_reply(reply).actions) == 1 and not read_reply(reply).problems
