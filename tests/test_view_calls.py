"""What the model calls screen shows of a call (icae_tui.display.calls): its row, its
request's new messages, its response — printable and bounded (pure, no Textual)."""

from __future__ import annotations

import json

from icae_tui.display import calls as c
from icae_tui.display.wording import plain
from icae_tui.domain.events import ModelCallMade
from icae_tui.gateway import BODY_CAP
from tests.ui.helpers import model_recording, model_run


def text(segs) -> str:
    return plain(segs)


def test_a_row_per_call_with_its_figures():
    calls = [ev for ev in model_run() if isinstance(ev, ModelCallMade)]
    rows = [[cell for cell, _ in c.call_cells(ev)] for ev in calls]
    assert len(rows[0]) == len(c.COLUMNS)
    assert rows[1][8] == "2 of 3"
    assert dict(zip(c.COLUMNS, rows[2], strict=True))["error"] == "max_cost_usd"
    assert c.call_cells(calls[2])[2] == ("limit", "error")


def test_the_new_messages_are_those_after_the_models_last_reply():
    history = [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "tool"},
               {"role": "tool"}]  # fmt: skip
    assert c.new_messages(history) == (history[3:], 3)
    assert c.new_messages(history[:2]) == (history[:2], 0)  # the first call: all of it
    many = [{"role": "user", "content": str(i)} for i in range(10)]
    assert c.new_messages(many) == (many[-c.NEW_MESSAGES :], 10 - c.NEW_MESSAGES)


def test_a_request_cut_at_the_cap_shows_its_end():
    body = json.dumps({"messages": [{"role": "user", "content": "x" * BODY_CAP}]})[:BODY_CAP]
    shown = text(c.request_segments(body, truncated=True))
    assert "cut at the recording's cap" in shown
    assert len(shown) < c.RAW_REQUEST_LIMIT + 200


def test_a_huge_response_is_bounded_and_literal():
    body = "\x1b[2J[bold]" + "y" * BODY_CAP
    shown = text(c.response_segments(body))
    assert shown.startswith(f"body, {len(body)} characters\n\\x1b[2J[bold]yyy")
    assert f"… [+{len(body) - c.BODY_LIMIT} chars]" in shown
    assert "\x1b" not in shown and len(shown) < c.BODY_LIMIT + 200


def test_a_streamed_response_is_read_back_into_its_reply():
    chunks = [
        {"choices": [{"delta": {"content": "Hel"}}]},
        {"choices": [{"delta": {"content": "lo \x1b[31m"}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "bash"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0,
                                                "function": {"arguments": '{"command"'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ': "ls"}'}}]},
                      "finish_reason": "tool_calls"}]},
        "not json",
    ]  # fmt: skip
    body = "".join(f"data: {json.dumps(x) if isinstance(x, dict) else x}\n\n" for x in chunks)
    body += "data: [DONE]\n\n"
    shown = text(c.response_segments(body))
    assert shown.startswith("reply (finish: tool_calls)\nHello \\x1b[31m\n")
    assert '→ bash({"command": "ls"})' in shown


def test_odd_bodies_do_not_break_the_detail():
    for body in ["", "[]", "{}", '{"choices": "x"}', '{"choices": [{"message": 3}]}', "data: 1",
                 'data: {"choices": [{"delta": 5}]}', "\x00" * 10]:  # fmt: skip
        assert text(c.response_segments(body)).count("body, ") == 1
    for body in [
        "",
        "[]",
        '{"messages": 3}',
        '{"messages": [1, "two", {"content": [{"type": "image"}]}]}',
    ]:
        assert text(c.request_segments(body))


def test_a_call_missing_from_the_recording_is_not_recorded():
    ev = next(ev for ev in model_run() if isinstance(ev, ModelCallMade))
    assert "request and response not recorded — no such file" in text(
        c.call_detail(ev, None, "no such file")
    )
    assert "reading" in text(c.call_detail(ev, None, reading=True))
    detail = text(c.call_detail(ev, model_recording()[0]))
    assert "request · 1 tool(s)" in detail and "2 message(s)" in detail
