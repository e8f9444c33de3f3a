"""ICAE-EVAL's user-agent wire, served by the run's ask server (no Docker: the real server on
its real Unix sockets, as the container's forwarders reach them). The expected replies are
those of ICAE-EVAL's user_agent/main.py and harness/user_agent_client.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from icae_tui.domain.events import Event, QuestionAnswered, QuestionAsked
from icae_tui.runs.config import RunConfig
from icae_tui.users.ask_server import icae_wire_routes, serving
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.icae_wire import INIT_KEY, Identity, with_clarification
from icae_tui.users.responders import Desk, SimulatedUser

QUESTION = "How should unknown operations be reported?"
ANSWER = "Print error=unknown_op and exit 2."
INIT, QUERY, STATS = 50001, 50002, 50003


@pytest.fixture
async def wire(mini_data):
    """(server, post, events): `post(body, port)` → (HTTP status, parsed or raw body), the
    port being the one the client connected to in the container (its Host header)."""
    events: list[Event] = []

    async def emit(ev: Event) -> None:
        events.append(ev)

    channel = ClarificationChannel(Desk(SimulatedUser(mini_data)), 3, emit)
    async with serving(channel, task_id="mini") as server:

        async def post(body: Any, port: int | None = QUERY, path: str = "/", method: str = "POST"):
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            connector = aiohttp.UnixConnector(path=str(server.socket_path))
            url = f"http://127.0.0.1:{port}{path}" if port else f"http://agent{path}"
            async with (
                aiohttp.ClientSession(connector=connector) as http,
                http.request(method, url, data=raw) as r,
            ):
                text = await r.text()
                is_json = r.content_type == "application/json"
                return r.status, json.loads(text) if is_json else text

        yield server, post, events


def _ask(server, question: Any = QUESTION, **fields: Any) -> dict[str, Any]:
    body = {"append_id": server.wire.append_id, "task_id": "mini", "question": question}
    return {**body, **fields}


async def test_an_answer_has_their_shape_and_counts_down_the_budget(wire):
    server, post, events = wire
    assert len(server.wire.append_id) == 32 and int(server.wire.append_id, 16) >= 0
    status, reply = await post(_ask(server))
    assert status == 200
    assert reply == {
        "data": ANSWER,
        "status": {"ok": True, "remaining": 2, "internal_log": {}, "parse_error": False},
    }
    asked = [e for e in events if isinstance(e, QuestionAsked)]
    assert [(a.via, a.text) for a in asked] == [("icae-wire", QUESTION)]


async def test_a_spent_budget_is_max_interactions_reached_not_prose(wire):
    server, post, events = wire
    remaining = [(await post(_ask(server, f"{QUESTION} {i}")))[1]["status"] for i in range(3)]
    assert [s["remaining"] for s in remaining] == [2, 1, 0] and all(s["ok"] for s in remaining)
    for _ in range(3):
        assert await post(_ask(server)) == (
            200,
            {
                "data": "",
                "status": {"ok": False, "error": "max_interactions_reached", "remaining": 0},
            },
        )
    assert server.channel.used == 3 and server.channel.over_budget == 3
    # the channel records the first refused question as a turn, as for any other shape
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [a.over_budget for a in answered] == [False, False, False, True]


async def test_a_burst_of_questions_never_exceeds_the_budget(wire):
    server, post, _ = wire
    replies = await asyncio.gather(*(post(_ask(server, f"{QUESTION} {i}")) for i in range(40)))
    ok = [r for status, r in replies if status == 200 and r["status"]["ok"]]
    assert sorted(r["status"]["remaining"] for r in ok) == [0, 1, 2]
    assert server.channel.used == 3 and server.channel.asked == 40


async def test_the_budget_is_shared_with_our_own_shape(wire):
    server, post, _ = wire
    status, ours = await post({"question": QUESTION}, path="/v1/ask")
    assert status == 200 and ours["remaining"] == 2 and ours["answer"] == ANSWER
    _, reply = await post(_ask(server))
    assert reply["status"]["remaining"] == 1


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"append_id": "0" * 32}, "invalid append_id"),
        ({"append_id": None}, "invalid append_id"),
        ({"append_id": 7, "task_id": None}, "invalid append_id"),  # checked first
        ({"task_id": None}, "missing task_id/question"),
        ({"task_id": ""}, "missing task_id/question"),
        ({"question": ""}, "missing task_id/question"),
        ({"question": None}, "missing task_id/question"),
        ({"task_id": "realcode@001"}, "no prd for realcode@001"),
    ],
)
async def test_refusals_are_200_ok_false_and_cost_nothing(wire, fields, error):
    server, post, events = wire
    body = {k: v for k, v in _ask(server, **fields).items() if v is not None}
    assert await post(body) == (200, {"data": "", "status": {"ok": False, "error": error}})
    assert server.channel.asked == 0 and events == []


async def test_their_preflight_ping_is_free_and_tells_a_registered_id(wire):
    server, post, events = wire
    ping = {"append_id": server.wire.append_id, "task_id": "__preflight__", "question": "ping"}
    for _ in range(5):
        _, reply = await post(ping)
        # their validate_append_id: only "invalid append_id" means unregistered
        assert "invalid append_id" not in reply["status"]["error"]
    assert reply == {"data": "", "status": {"ok": False, "error": "no prd for __preflight__"}}
    _, forged = await post({**ping, "append_id": "f" * 32})
    assert forged["status"]["error"] == "invalid append_id"
    assert server.channel.asked == 0 and events == []
    _, first = await post(_ask(server))
    assert first["status"]["remaining"] == 2  # the whole budget was still there


@pytest.mark.parametrize("body", [b"not json", b"", b"\xff\xfe", b"[1, 2]", b'"q"'])
async def test_a_body_that_is_not_a_json_object_crashes_as_theirs_does(wire, body):
    server, post, _ = wire
    for port in (INIT, QUERY, STATS):
        assert await post(body, port) == (500, "Internal Server Error")
    assert server.channel.asked == 0


async def test_a_question_that_is_not_a_string_crashes_and_costs_nothing(wire):
    server, post, _ = wire
    assert await post(_ask(server, ["a", "list"])) == (500, "Internal Server Error")
    assert server.channel.asked == 0


async def test_a_blank_question_is_theirs_to_answer_and_counted(wire):
    server, post, _ = wire
    status, reply = await post(_ask(server, "   "))  # truthy: their oracle is asked
    assert status == 200 and reply["status"]["ok"] and reply["status"]["remaining"] == 2


async def test_other_paths_and_methods_answer_as_their_server_does(wire):
    server, post, _ = wire
    assert await post(_ask(server), path="/api/ask") == (404, {"detail": "Not Found"})
    assert await post(b"", method="GET") == (405, {"detail": "Method Not Allowed"})
    assert await post({}, INIT, path="/init") == (404, {"detail": "Not Found"})
    assert server.channel.asked == 0


async def test_init_answers_with_the_runs_own_append_id_and_budget(wire):
    server, post, _ = wire
    body = {"key": INIT_KEY, "model": "DeepSeek-V3.2", "max_interactions": 999,
            "difficulty": "easy", "open_access": True}  # fmt: skip
    assert await post(body, INIT) == (
        200,
        {
            "append_id": server.wire.append_id,
            "status": {
                "ok": True,
                "max_interactions": 3,
                "model": "DeepSeek-V3.2",
                "difficulty": "easy",
                "open_access": False,
            },  # fmt: skip
        },
    )
    for fields, error in (
        ({"key": "guess"}, "invalid key"),
        ({"model": ""}, "missing model"),
        ({"difficulty": "hard"}, "difficulty must be 'normal', 'medium', or 'easy'"),
    ):
        _, reply = await post({**body, **fields}, INIT)
        assert reply == {"append_id": None, "status": {"ok": False, "error": error}}
    assert server.channel.budget == 3


async def test_stats_report_budget_use_and_disclose_no_grading_metric(wire):
    server, post, _ = wire
    own = server.wire.append_id

    async def stats(**body: Any) -> dict[str, Any]:
        status, reply = await post(body, STATS)
        assert status == 200
        return reply

    assert await stats() == {"status": {"ok": False, "error": "missing append_id"}}
    assert await stats(append_id="xyz") == {
        "status": {"ok": False, "error": "invalid append_id format"}
    }
    assert await stats(append_id=own) == {
        "status": {"ok": False, "error": "no log found for append_id"}
    }
    assert await stats(append_id=own, task_id="mini") == {
        "status": {"ok": False, "error": "no log for mini"}
    }
    await post(_ask(server))
    single = await stats(append_id=own, task_id="mini")
    assert single["status"] == {"ok": True}
    s = single["stats"]
    assert (s["task_id"], s["turns_used"], s["max_interactions"], s["budget_usage_rate"]) == (
        "mini", 1, 3, 33.3,
    )  # fmt: skip
    assert s["triggers_hit"] == [] and s["missed_constraints"] == []
    assert s["constraint_coverage"] is s["fallback_rate"] is s["total_constraints"] is None
    agg = (await stats(append_id=own))["stats"]
    assert (agg["append_id"], agg["repos"], agg["turns_used"], agg["per_repo"]) == (own, 1, 1, [s])
    assert await stats(append_id="a" * 32) == {
        "status": {"ok": False, "error": "no log found for append_id"}
    }
    assert await stats(append_id=own, task_id="other") == {
        "status": {"ok": False, "error": "no log for other"}
    }


def test_the_prd_gets_their_clarification_section_word_for_word():
    ident = Identity("0123456789abcdef0123456789abcdef", "mini")
    prd = with_clarification("# Mini (L1)\nWrite mini.py.\n\n\n", ident)
    assert prd == (
        "# Mini (L1)\nWrite mini.py.\n\n---\n\n## Clarification\n\n"
        "This PRD is intentionally incomplete. A requirements oracle can answer questions about "
        "hidden implementation details — including exact feature specs, interface contracts, "
        "and test cases.\n\n"
        "**Oracle** — POST `http://127.0.0.1:50002/`\n```\n"
        '{"append_id":"0123456789abcdef0123456789abcdef","task_id":"mini","question":"..."}\n'
        "```\nAnswer is in `data`. Budget shown in `status.remaining`.\n\n"
        "Features and test cases have been prepared. Ask before you code. "
        "Unasked questions become bugs.\n"
    )
    assert "http://127.0.0.1:6000/" in with_clarification("x", ident, 6000)


async def test_any_other_port_or_none_is_the_interaction(wire):
    server, post, _ = wire
    for port in (None, 8787, 50004):
        status, reply = await post(_ask(server, f"{QUESTION} {port}"), port)
        assert status == 200 and reply["status"]["ok"]
    assert server.channel.used == 3


async def test_init_and_stats_follow_a_configured_port(mini_data):
    async def emit(ev: Event) -> None:
        pass

    channel = ClarificationChannel(Desk(SimulatedUser(mini_data)), 2, emit)
    async with serving(channel, task_id="mini", icae_port=6000) as server:
        connector = aiohttp.UnixConnector(path=str(server.socket_path))
        async with aiohttp.ClientSession(connector=connector) as http:
            init = {"key": INIT_KEY, "model": "m"}
            async with http.post("http://127.0.0.1:5999/", json=init) as r:
                assert (await r.json())["append_id"] == server.wire.append_id
            async with http.post("http://127.0.0.1:6001/", json={"append_id": "x"}) as r:
                assert (await r.json())["status"]["error"] == "invalid append_id format"


def test_ports_are_theirs_by_default_and_configurable():
    assert icae_wire_routes() == dict.fromkeys((50001, 50002, 50003), "/run/icae/ask.sock")
    assert sorted(icae_wire_routes(6000)) == [5999, 6000, 6001]


def test_the_run_option_is_off_by_default_and_its_port_checked(fixture_catalog):
    task = fixture_catalog.tasks["mini"]
    config = RunConfig(task=task)
    assert (config.icae_wire, config.icae_wire_port) == (False, 50002)
    with pytest.raises(ValueError, match="icae_wire_port"):
        RunConfig(task=task, icae_wire=True, icae_wire_port=65535)
