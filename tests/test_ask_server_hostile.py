"""The clarification socket against a hostile client (no Docker: the real server on a real
Unix socket, as the agent's container reaches it). These held when first attacked; they
stay in the hostile suite so they keep holding."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from icae_tui.users.ask_server import serving
from icae_tui.users.channel import ClarificationChannel
from icae_tui.users.responders import Desk, SimulatedUser

QUESTION = "How should unknown operations be reported?"


async def _serve(mini_data, budget: int):
    async def emit(ev):
        pass

    channel = ClarificationChannel(Desk(SimulatedUser(mini_data)), budget, emit)
    return channel, serving(channel)


def _session(server) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(server.socket_path)))


async def test_concurrent_and_rapid_questions_never_exceed_the_budget(mini_data):
    channel, ctx = await _serve(mini_data, budget=5)
    async with ctx as server, _session(server) as http:

        async def ask(i: int) -> dict:
            async with http.post("http://agent/v1/ask", json={"question": f"{QUESTION} {i}"}) as r:
                assert r.status == 200
                return await r.json()

        burst = await asyncio.gather(*(ask(i) for i in range(100)))
        rapid = [await ask(100 + i) for i in range(200)]
        async with http.get("http://agent/v1/status") as r:
            status = await r.json()
    answered = [a for a in burst + rapid if not a["over_budget"]]
    assert len(answered) == 5
    assert sorted(a["question_id"] for a in burst + rapid) == list(range(1, 301))
    assert all("budget of 5 is spent" in a["answer"] for a in burst + rapid if a["over_budget"])
    assert status == {"budget": 5, "used": 5, "remaining": 0}
    assert channel.used == 5


async def test_bodies_that_are_too_big_not_json_or_not_a_question_are_refused(mini_data):
    channel, ctx = await _serve(mini_data, budget=3)
    async with ctx as server, _session(server) as http:
        huge = json.dumps({"question": "x" * (10 << 20)})
        async with http.post("http://agent/v1/ask", data=huge) as r:
            assert r.status == 413
        for body in (b"not json", b"\xff\xfe", b"[1, 2]", b'{"question": ""}', b'{"q": "x"}'):
            async with http.post("http://agent/v1/ask", data=body) as r:
                assert r.status == 400, body
                assert "error" in json.loads(await r.text())
        for path in ("/v1/records", "/../../etc/passwd", "/v1/ask/../../cases", "/%2e%2e/oracle"):
            async with http.get("http://agent" + path) as r:
                assert r.status in (404, 405), path
        # The ICAE wire (POST /) asks only with the run's own append_id: a forged one, another
        # task, a level or a budget of its own get a refusal and use up nothing.
        body = {"append_id": "7", "task_id": "other", "level": "ground", "budget": 999,
                "question": QUESTION}  # fmt: skip
        async with http.post("http://agent/", json=body) as r:
            forged = await r.json()
        async with http.post("http://agent/../../api/ask", json=body) as r:
            assert r.status == 404  # only / is the wire, as in ICAE-EVAL
        async with http.post("http://agent/v1/ask", json={"question": QUESTION}) as r:
            assert (await r.json())["remaining"] == 2
    assert forged == {"data": "", "status": {"ok": False, "error": "invalid append_id"}}
    assert channel.used == 1 and channel.budget == 3
