"""A CLI agent inside its container asks through `icae-ask` and the ICAE-EVAL wire shape."""

from __future__ import annotations

import json

import pytest

from icae_tui.domain.events import AgentOutput, QuestionAnswered, QuestionAsked
from icae_tui.domain.task import Level
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from tests.task_copies import add_solution, copy_mini, good_step, load_mini

pytestmark = pytest.mark.docker

ICAE_WIRE_CLIENT = r"""
import http.client, json, socket
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect("/run/icae/ask.sock")
c = C("localhost")
body = {"append_id": 7, "task_id": "some-other-task", "level": "ground", "budget": 999,
        "question": "How is the word count formatted?"}
c.request("POST", "/", json.dumps(body), {"Content-Type": "application/json"})
print(c.getresponse().read().decode())
c = C("localhost"); c.request("GET", "/v1/records"); print("records:", c.getresponse().status)
c = C("localhost"); c.request("GET", "/v1/status"); print("status:", c.getresponse().read().decode())
"""


def _cli_agent_task(tmp_path):
    folder = copy_mini(tmp_path)
    code = good_step(folder)["write"]["content"]
    steps = [
        {"run": 'icae-ask "How should unknown operations be reported?"'},
        {"run": "python3 - <<'EOF'\n" + ICAE_WIRE_CLIENT + "EOF"},
        {"run": "ls -la /run/icae; echo hi > /run/icae/x 2>&1 || echo read-only"},
        {
            "run": "test -e /opt/oracle || echo no-oracle; grep -rls 'error=unknown_op' /opt /data /etc /root /tmp || echo no-secrets"
        },
        {"write": {"path": "mini.py", "content": code}},
        {"submit": "done"},
    ]
    add_solution(folder, "cli", steps, pace_s=0)
    return load_mini(folder)


async def test_icae_ask_and_icae_wire_from_inside_the_container(tmp_path, store):
    task = _cli_agent_task(tmp_path)
    run = Run(RunConfig(task=task, agent="scripted:cli", level=Level.L1, pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status == "completed" and outcome.score.overall == 1.0
    events = store.events(run.run_id)
    asked = [e for e in events if isinstance(e, QuestionAsked)]
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [(a.via, a.text) for a in asked] == [
        ("icae-ask", "How should unknown operations be reported?"),
    ]  # the wire refused a forged append_id before any budget was used
    assert [a.record_ids for a in answered] == [["C001"]]
    output = "".join(e.text for e in events if isinstance(e, AgentOutput))
    assert "Print error=unknown_op and exit 2." in output  # icae-ask printed the answer
    assert "question(s) left" in output
    wire = json.loads(next(line for line in output.splitlines() if line.startswith('{"data"')))
    assert wire == {"data": "", "status": {"ok": False, "error": "invalid append_id"}}
    assert "records: 405" in output or "records: 404" in output
    assert '"budget": 3' in output and '"remaining": 2' in output
    assert "read-only" in output
    assert "no-oracle" in output and "no-secrets" in output  # no oracle, no cases in its view


async def test_secrets_reach_commands_per_exec_only(tmp_path, store, monkeypatch):
    monkeypatch.setenv("ICAE_TEST_SECRET", "s3cr3t-value")
    monkeypatch.setenv("ICAE_TEST_OTHER", "not-allowed")
    folder = copy_mini(tmp_path)
    steps = [
        {"run": 'echo "secret=${ICAE_TEST_SECRET:-none} other=${ICAE_TEST_OTHER:-none}"'},
        {"run": "cat /proc/1/environ | tr '\\0' '\\n' | grep -c ICAE_TEST || true"},
        {"write": {"path": "mini.py", "content": "print('x')\n"}},
        {"submit": "done"},
    ]
    add_solution(folder, "env", steps)
    task = load_mini(folder)
    run = Run(
        RunConfig(task=task, agent="scripted:env", pace_s=0, secret_env=("ICAE_TEST_SECRET",)),
        store,
    )
    await run.execute()
    output = "".join(e.text for e in store.events(run.run_id) if isinstance(e, AgentOutput))
    assert "secret=s3cr3t-value other=none" in output
    assert output.splitlines()[-1].strip() == "0"  # not in the container's own environment
