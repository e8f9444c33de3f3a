"""ICAE-EVAL's user-agent wire protocol, pure: what their agents send and what they get back.

Reproduced from github ALEX-nlp/ICAE-EVAL: `user_agent/main.py` (three apps, each a POST on
"/": init on 50001, interaction on 50002, stats on 50003), `harness/user_agent_client.py`
(the preflight: task_id "__preflight__", question "ping") and `user_agent/fuzzy_suffix.md`
with `harness/prd.py` (the Clarification section appended to the PRD).

Here a run is one append_id, one task and one budget, all fixed by the run: init mints
nothing (it answers with the run's own append_id and budget, whatever is asked), a task_id
other than the run's has "no prd" (so the preflight costs no question), and stats disclose
no grading metric (coverage, fallbacks, triggered records): those values are None.
Each handler returns the reply body, or None where their server fails with a plain
500 "Internal Server Error" (a body that is not a JSON object, a non-string question).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
INIT_PORT, QUERY_PORT, STATS_PORT = 50001, 50002, 50003
INIT_KEY = "zVtwLTkCKwoCWq4Jq9D2"  # theirs, public in their repo: their harness sends it
MAX_INTERACTIONS_REACHED = "max_interactions_reached"
DIFFICULTIES = ("normal", "medium", "easy")
SECTION = Path(__file__).parent / "assets" / "icae-clarification.md"  # their wording

Reply = dict[str, Any]


@dataclass(frozen=True)
class Identity:
    """What the run's PRD tells the agent: its append_id (32 hex, as theirs) and task."""

    append_id: str
    task_id: str

    @classmethod
    def new(cls, task_id: str) -> Identity:
        return cls(uuid.uuid4().hex, task_id)


def with_clarification(prd: str, ident: Identity, port: int = QUERY_PORT) -> str:
    """The PRD with their Clarification section appended, joined as their harness does."""
    section = SECTION.read_text(encoding="utf-8").format(
        host=HOST, query_port=port, append_id=ident.append_id, task_id=ident.task_id
    )
    return prd.rstrip() + "\n\n" + section.lstrip()


def parse(raw: bytes) -> dict[str, Any] | None:
    """Their `await req.json()` then `body.get(...)`: anything but a JSON object fails."""
    try:
        body = json.loads(raw)
    except ValueError:  # UnicodeDecodeError included
        return None
    return body if isinstance(body, dict) else None


def _fail(error: str, **status: Any) -> Reply:
    return {"data": "", "status": {"ok": False, "error": error, **status}}


def ask_refusal(body: dict[str, Any], ident: Identity) -> Reply | None:
    """Their checks, in their order, all before any budget is touched. None: ask it."""
    if body.get("append_id") != ident.append_id:
        return _fail("invalid append_id")
    task_id, question = body.get("task_id"), body.get("question", "")
    if not (task_id and question):
        return _fail("missing task_id/question")
    if task_id != ident.task_id:  # the preflight's "__preflight__" lands here: free
        return _fail(f"no prd for {task_id}")
    return None


def answered(text: str, remaining: int) -> Reply:
    # internal_log is their oracle's scoring notes (records hit): never the agent's to see;
    # {} is what their server itself sends when the oracle's notes do not parse
    status = {"ok": True, "remaining": remaining, "internal_log": {}, "parse_error": False}
    return {"data": text, "status": status}


def spent() -> Reply:
    return _fail(MAX_INTERACTIONS_REACHED, remaining=0)


def init_reply(body: dict[str, Any], ident: Identity, budget: int) -> Reply:
    def fail(error: str) -> Reply:
        return {"append_id": None, "status": {"ok": False, "error": error}}

    if body.get("key") != INIT_KEY:
        return fail("invalid key")
    model = body.get("model") or ""
    if not model:
        return fail("missing model")
    difficulty = body.get("difficulty", "normal")
    if difficulty not in DIFFICULTIES:
        return fail("difficulty must be 'normal', 'medium', or 'easy'")
    status = {"ok": True, "max_interactions": budget, "model": model,
              "difficulty": difficulty, "open_access": False}  # fmt: skip
    return {"append_id": ident.append_id, "status": status}


def _is_append_id(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)
    )


def stats_reply(
    body: dict[str, Any], ident: Identity, *, budget: int, used: int, asked: int
) -> Reply:
    """`asked` > 0 is their "a log exists"; `used` their turns answered within the budget."""
    append_id, task_id = body.get("append_id"), body.get("task_id")
    if not append_id:
        return {"status": {"ok": False, "error": "missing append_id"}}
    if not _is_append_id(append_id):
        return {"status": {"ok": False, "error": "invalid append_id format"}}
    logged = append_id == ident.append_id and asked > 0
    if task_id and not (logged and task_id == ident.task_id):
        return {"status": {"ok": False, "error": f"no log for {task_id}"}}
    if not logged:
        return {"status": {"ok": False, "error": "no log found for append_id"}}
    usage = round(100 * used / budget, 1) if budget else 0.0
    task: dict[str, Any] = {"task_id": ident.task_id, "model": None, "turns_used": used,
            "max_interactions": budget, "budget_usage_rate": usage, "fallbacks": None,
            "fallback_rate": None, "triggers_hit": [], "total_constraints": None,
            "constraint_coverage": None, "missed_constraints": [],
            "interaction_score": None}  # fmt: skip
    if task_id:
        return {"stats": task, "status": {"ok": True}}
    total = {"append_id": append_id, "model": None, "repos": 1, "turns_used": used,
             "max_interactions": budget, "budget_usage_rate": usage, "fallbacks": None,
             "fallback_rate": None, "constraint_coverage": None, "interaction_score": None,
             "per_repo": [task]}  # fmt: skip
    return {"stats": total, "status": {"ok": True}}
