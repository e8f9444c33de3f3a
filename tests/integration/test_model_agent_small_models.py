"""The built-in model agent, driven the way a small model drives it (Qwen2.5-Coder-1.5B:
text only, a command and questions in one reply, tool calls as JSON text, heredocs left
open), builds the mini task through a real run: its real container, the run's gateway, the
simulated user. The reply that used to lose its questions now gets them answered; replies
with no action stop the agent with the reason in the run's events; a server refusing the
reply grammar is asked again without it, and the run replays from its recording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from icae_tui.domain.events import (
    AgentCommandDone,
    AgentStopped,
    ModelCallMade,
    Progress,
    QuestionAnswered,
    QuestionAsked,
)
from tests.integration.test_model_agent import (
    KEY,
    KEY_VAR,
    _agents_file,
    _good_code,
    _run,
    upstream,
)

pytestmark = pytest.mark.docker

Q_UNKNOWN = "How should unknown operations be reported?"
Q_COUNT = "What does count print?"


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _write_then_ask() -> str:
    """One reply: the code written in a block, then two questions (what used to lose them)."""
    return (f"Here is mini.py.\n```bash\ncat > mini.py <<'EOF'\n{_good_code()}EOF\n```\n"
            f"ASK: {Q_UNKNOWN}\nASK: {Q_COUNT}\n")  # fmt: skip


TRY = 'echo \'{"op": "upper", "text": "x"}\' | python3 mini.py'


async def test_questions_beside_a_command_reach_the_user_through_a_real_run(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    script = [
        _text(_write_then_ask()),
        _text("```bash\ncat > notes.txt <<EOF\nunfinished\n```"),  # left open: not run
        _text(json.dumps({"name": "bash", "arguments": {"command": TRY}})),
        _text("SUBMIT: mini.py is done"),
    ]
    async with upstream(script) as up:
        run, outcome = await _run(fixture_catalog, store, _agents_file(tmp_path, up.base_url))
    assert outcome.status == "completed", outcome.error
    assert outcome.score.overall == 1.0
    events = store.events(run.run_id)
    asked = [e.text for e in events if isinstance(e, QuestionAsked)]
    assert asked == [Q_UNKNOWN, Q_COUNT]
    answers = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [a.record_ids for a in answers] == [["C001"], ["C002"]]
    # The write and the JSON-text call ran; the open heredoc never did.
    commands = [e.command for e in events if e.kind == "agent_command"]
    assert commands[0].startswith("cat > mini.py") and commands[1] == TRY
    assert len(commands) == 2
    assert [d.exit_code for d in events if isinstance(d, AgentCommandDone)] == [0, 0]
    # What the model was shown: both answers in the message after its first reply.
    shown = up.requests[1][1]["messages"][-1]["content"]
    assert "Print error=unknown_op and exit 2." in shown and "Print words=<n>." in shown
    assert "never closed" in up.requests[2][1]["messages"][-1]["content"]
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "submitted" and stopped.steps == 4


async def test_replies_with_no_action_stop_the_agent_with_the_reason(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    script = [_text("I will think about it."), _text("```bash\nls\n"), _text("Still thinking.")]
    async with upstream(script) as up:
        run, outcome = await _run(fixture_catalog, store, _agents_file(tmp_path, up.base_url))
    assert outcome.status == "completed", outcome.error  # what is there is judged
    events = store.events(run.run_id)
    [stopped] = [e for e in events if isinstance(e, AgentStopped)]
    assert stopped.reason == "agent_error"
    assert stopped.detail.startswith("3 malformed replies in a row, no action taken")
    assert len(up.requests) == 3 and not outcome.score.build_ok


async def test_a_refused_grammar_is_dropped_and_the_run_replays(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_VAR, KEY)
    write = f"```bash\ncat > mini.py <<'EOF'\n{_good_code()}EOF\n```"
    script = [400, _text(write), _text("SUBMIT: done")]
    extra = 'constrain_reply = "gbnf"\n'
    async with upstream(script) as up:
        agents = _agents_file(tmp_path, up.base_url, extra=extra)
        run, outcome = await _run(fixture_catalog, store, agents)
    assert outcome.status == "completed", outcome.error
    assert outcome.score.overall == 1.0
    assert ["grammar" in body for _, body in up.requests] == [True, False, False]
    events = store.events(run.run_id)
    assert [c.call_kind for c in events if isinstance(c, ModelCallMade)] == [
        "agent_error", "ok", "ok"
    ]  # fmt: skip
    assert any("refused the gbnf reply constraint" in e.message
               for e in events if isinstance(e, Progress))  # fmt: skip
    # Replayed with no upstream: the recorded 400 is served again, and the retry.
    monkeypatch.delenv(KEY_VAR)
    agents = _agents_file(tmp_path, "http://127.0.0.1:9/v1", extra=extra)
    _, again = await _run(fixture_catalog, store, agents, model_replay=run.run_id)
    assert again.status == "completed", again.error
    assert again.score.overall == 1.0
