"""An agent written for ICAE-EVAL, unchanged, inside its container (network `none`): it reads
the Clarification section of the PRD it is given, preflights, asks over TCP on its loopback
(127.0.0.1:50002, ICAE-EVAL's user-agent port), gets answers until the budget is spent and
then their `max_interactions_reached`; init (50001) and stats (50003) answer too.

The agent is a command agent whose "CLI" is a python3 stdlib client written from ICAE-EVAL's
protocol (their user_agent/main.py, harness/user_agent_client.py, user_agent/fuzzy_suffix.md);
it reads the PRD from its prompt file, as their agents read start.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icae_tui.domain.events import AgentOutput, QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run

pytestmark = pytest.mark.docker

CLIENT = r"""
import json, re, socket, sys, urllib.error, urllib.request

prd = open(sys.argv[1], encoding="utf-8").read()
found = re.search(r"POST `http://([^:/`]+):(\d+)/`\s*```\s*(\{.*?\})\s*```", prd, re.S)
host, port = (found.group(1), int(found.group(2))) if found else ("127.0.0.1", 50002)
ids = json.loads(found.group(3)) if found else {}
append_id, task_id = ids.get("append_id"), ids.get("task_id")


def show(step, reply):
    print("WIRE " + json.dumps({"step": step, "reply": reply}), flush=True)


def post(step, body, to=None):
    url = "http://%s:%d/" % (host, to or port)
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            reply = json.loads(resp.read())
    except urllib.error.HTTPError as err:
        reply = {"http": err.code, "body": err.read().decode()}
    show(step, reply)
    return reply


show("section", {"found": bool(found), "host": host, "port": port, "ids": ids})
post("preflight", {"append_id": append_id, "task_id": "__preflight__", "question": "ping"})
post("forged", {"append_id": "0" * 32, "task_id": task_id, "question": "ping"})
post("init", {"key": "zVtwLTkCKwoCWq4Jq9D2", "model": "DeepSeek-V3.2",
              "max_interactions": 99}, to=50001)
for question in ("How should unknown operations be reported?",
                 "How is the word count formatted?",
                 "What does the note op write?",
                 "Anything else?"):
    post("ask", {"append_id": append_id, "task_id": task_id, "question": question})
post("stats", {"append_id": append_id, "task_id": task_id}, to=50003)
routes = sorted({line.split()[0] for line in open("/proc/net/route").read().splitlines()[1:]}
                | {line.split()[-1] for line in open("/proc/net/ipv6_route").read().splitlines()})
show("network", {"interfaces": sorted(__import__("os").listdir("/sys/class/net")),
                 "routes via": routes})
"""


def _agents(tmp_path: Path) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(
        '[agents.icae-eval]\nkind = "command"\nmodel = "m"\n'
        'base_url = "http://127.0.0.1:9/v1"\nparser = "plain"\n'
        'run = "python3 /opt/icae-eval-agent.py {prompt_file}"\n'
        f"files = {{ {json.dumps('/opt/icae-eval-agent.py')} = {json.dumps(CLIENT)} }}\n"
    )  # a JSON string is a TOML basic string
    return path


def _wire(events: list) -> list[tuple[str, Any]]:
    out = "".join(e.text for e in events if isinstance(e, AgentOutput))
    lines = [json.loads(ln[5:]) for ln in out.splitlines() if ln.startswith("WIRE ")]
    return [(w["step"], w["reply"]) for w in lines]


async def test_an_icae_eval_client_asks_over_its_loopback_with_no_network(
    fixture_catalog, store, tmp_path
):
    task = fixture_catalog.tasks["mini"]  # budget 3 at L1
    config = RunConfig(task=task, agent="command:icae-eval", agent_files=(_agents(tmp_path),),
                       icae_wire=True)  # fmt: skip
    run = Run(config, store)
    outcome = await run.execute()
    assert outcome.status == "completed", outcome.error
    events = store.events(run.run_id)
    steps = _wire(events)
    assert [s for s, _ in steps] == [
        "section", "preflight", "forged", "init", "ask", "ask", "ask", "ask", "stats", "network",
    ]  # fmt: skip
    replies = [r for _, r in steps]
    section, preflight, forged, init, *asks, stats, network = replies
    append_id = section["ids"]["append_id"]
    assert section == {
        "found": True, "host": "127.0.0.1", "port": 50002,
        "ids": {"append_id": append_id, "task_id": "mini", "question": "..."},
    }  # fmt: skip
    assert len(append_id) == 32
    assert preflight["status"] == {"ok": False, "error": "no prd for __preflight__"}
    assert forged["status"] == {"ok": False, "error": "invalid append_id"}
    assert init["append_id"] == append_id and init["status"]["max_interactions"] == 3
    ok = {"ok": True, "internal_log": {}, "parse_error": False}
    assert asks[:3] == [
        {"data": "Print error=unknown_op and exit 2.", "status": {**ok, "remaining": 2}},
        {"data": "Print words=<n>.", "status": {**ok, "remaining": 1}},
        {"data": asks[2]["data"], "status": {**ok, "remaining": 0}},
    ]
    assert asks[2]["data"]
    assert asks[3] == {
        "data": "",
        "status": {"ok": False, "error": "max_interactions_reached", "remaining": 0},
    }
    assert stats["status"] == {"ok": True}
    assert (stats["stats"]["turns_used"], stats["stats"]["max_interactions"]) == (3, 3)
    # no interface but the loopback, and no route on any other: nothing leaves the box
    assert network == {"interfaces": ["lo"], "routes via": ["lo"]}

    # every question went through the run's channel: recorded, answered by its desk
    asked = [e for e in events if isinstance(e, QuestionAsked)]
    assert [a.via for a in asked] == ["icae-wire"] * 4
    assert [a.text for a in asked][:2] == [
        "How should unknown operations be reported?",
        "How is the word count formatted?",
    ]
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [a.over_budget for a in answered] == [False, False, False, True]
    assert [a.record_ids for a in answered][:2] == [["C001"], ["C002"]]
    # the stored PRD is the task's; the agent's carried the section with this run's id only
    [started] = [e for e in events if isinstance(e, RunStarted)]
    assert "Clarification" not in started.prd and append_id not in started.prd
