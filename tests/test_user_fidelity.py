"""The fidelity benchmark itself: its corpus loads and is well formed, its scoring counts
what it says, and its model mode runs end to end through the `openai` package against a
local server — where a model that tries to leak (claims records it was not offered,
pastes text of its own) is held by the audit. No figure is asserted here: the figures are
the benchmark's to print."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.openai_stub import as_json, candidate_ids, serve

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import user_fidelity as uf  # noqa: E402


def test_the_corpus_is_well_formed():
    sets = uf.load_sets()
    assert len(sets) >= 8
    total = sum(len(s.questions) for s in sets)
    assert total >= 400
    for s in sets:
        ids = {r.constraint_id for r in s.data.hidden_constraints}
        ids |= {f"CP{i:03d}" for i in range(1, len(s.data.context_pointers) + 1)}
        seen = set()
        for q in s.questions:
            assert q.id not in seen and q.split in ("dev", "test"), q
            seen.add(q.id)
            assert q.expect <= ids, (q.id, q.expect - ids)
        splits = {q.split for q in s.questions}
        assert splits == {"dev", "test"}, s.name


def test_the_tally_counts_right_leaks_and_fallbacks():
    t = uf.Tally()
    q = lambda expect: uf.Question("q", "?", "direct", frozenset(expect), "dev")  # noqa: E731
    t.add(q({"C1"}), ["C1"], 1.0)  # right
    t.add(q({"C1", "C2"}), ["C2"], 1.0)  # right: one of the answers, nothing else
    t.add(q({"C1"}), ["C1", "C3"], 1.0)  # a leak, not right
    t.add(q({"C1"}), [], 1.0)  # false fallback
    t.add(q(set()), [], 1.0)  # correct fallback
    t.add(q(set()), ["C4"], 1.0)  # a leak
    assert (t.answerable, t.right, t.false_fallback, t.leaks) == (4, 2, 1, 2)
    assert (t.unanswerable, t.correct_fallback) == (2, 1)


def _hostile(request) -> str:
    """Claims the last record offered plus one it never saw, and 'rephrases' with words of
    its own and of the question."""
    ids = candidate_ids(request)
    question = request["messages"][-1]["content"]
    return as_json(ids[-1:] + ["C999"], question + " and the hidden answer is 42")


@pytest.mark.parametrize("behaviour", [_hostile, lambda _r: as_json([])], ids=["hostile", "none"])
async def test_model_mode_runs_and_the_audit_holds(behaviour):
    async with serve(behaviour) as stub:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "benchmarks" / "user_fidelity.py"),
            "--model", "stub", "--base-url", stub.base_url, "--sets", "semver,tidy",
            "--split", "dev", "--user-mode", "choose",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate()
    text = out.decode()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert "== model stub" in text and "\nALL " in text
    assert "audit, choose: " in text
    assert ", 0 with a record it may not give, 0 with text beyond their records" in text
    assert len(stub.requests) > 0
    if behaviour is not _hostile:  # a model that never chooses: never a leak
        model_part = text[text.index("== model stub"):]  # the matcher's table comes first
        row = next(line for line in model_part.splitlines() if line.startswith("ALL"))
        assert row.split()[3] == "0.0%"


def test_the_rank_ceiling_counts_questions_whose_right_record_ranks_first():
    from icae_tui.domain.task import HiddenConstraint, OracleData

    data = OracleData(
        hidden_constraints=[
            HiddenConstraint(
                constraint_id="C001",
                trigger_keywords=["output format json"],
                oracle_response="JSON lines.",
            ),  # fmt: skip
            HiddenConstraint(
                constraint_id="C002",
                trigger_keywords=["exit code on error"],
                oracle_response="Exit 2.",
            ),  # fmt: skip
        ],
        fallback_response="unspecified",
    )
    questions = [
        uf.Question("q1", "What output format, json?", "direct", frozenset({"C001"}), "test"),
        uf.Question("q2", "Which exit code on error?", "direct", frozenset({"C001"}), "test"),
        uf.Question("q3", "Which licence?", "off-topic", frozenset(), "test"),
        uf.Question("q4", "Which exit code on error?", "direct", frozenset({"C002"}), "dev"),
    ]
    line = uf.rank_ceiling([uf.RecordSet("tiny", data, questions)], "test")
    assert "1 of 2 answerable" in line and "(50.0%)" in line
