"""The `tidy` sample task, checked on the host (no Docker).

Every stored case is re-run against the oracle (twice, for determinism); the scripted
solutions' files are run on the same cases; the task files validate against the models; the
good solution's questions reach the records they are meant for.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from icae_tui.domain.solution import Ask
from icae_tui.domain.task import CaseFile, Level, TaskSpec
from icae_tui.users.matching import match
from tests.tasks.task_files import TaskFiles

TASK = Path(__file__).resolve().parents[2] / "tasks" / "tidy"

FILES = TaskFiles(TASK, "tidy.py")
load_cases, load_solution, written_file = FILES.cases, FILES.solution, FILES.written_file
user_agent, prd = FILES.user_agent, FILES.prd
ORACLE = TASK / "oracle" / "tidy.py"
SPLITS = ("public", "hidden", "enhanced")
LEVEL_FILES = {Level.L1: "L1", Level.L2: "L2", Level.L3: "L3", Level.GROUND: "ground"}

Outcome = tuple[int, str, str, dict[str, str]]


# --- loading ----------------------------------------------------------------------------------


CASES = load_cases()


# --- running one case -------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, str]:
    tree: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                tree[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                tree[rel] = "dir"
            else:
                tree[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return tree


def run_case(case: dict, script: Path) -> Outcome:
    """Fixtures in a fresh dir, `prep`, then `sh -c command` with `tidy` -> script."""
    with tempfile.TemporaryDirectory(prefix="tidy-test-") as tmp:
        base = Path(tmp)
        bindir, data = base / "bin", base / "w" / "x" / "data"
        bindir.mkdir()
        data.mkdir(parents=True)
        wrapper = bindir / "tidy"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "{script}" "$@"\n')
        wrapper.chmod(0o755)
        for rel, content in case.get("files", {}).items():
            p = data / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode("utf-8"))
        env = {
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(base),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
        }
        if case.get("prep"):
            subprocess.run(["sh", "-c", case["prep"]], cwd=data, env=env, check=True)
        proc = subprocess.run(
            ["sh", "-c", case["command"]], cwd=data, env=env, capture_output=True, timeout=20
        )
        return (
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
            snapshot(data),
        )


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Outcome]]:
    """Every case against the oracle (twice), good.yaml's file, and partial.yaml's file."""
    with tempfile.TemporaryDirectory(prefix="tidy-solutions-") as tmp:
        scripts = {"oracle": ORACLE, "oracle2": ORACLE}
        for name in ("good", "partial"):
            path = Path(tmp) / f"{name}.py"
            path.write_text(written_file(name), encoding="utf-8")
            scripts[name] = path
        jobs = [
            (who, cid, case)
            for who in scripts
            for cid, case in CASES
            if who != "partial" or cid.startswith("hidden/")
        ]
        with ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1)) as pool:
            results = list(pool.map(lambda j: run_case(j[2], scripts[j[0]]), jobs))
    out: dict[str, dict[str, Outcome]] = {who: {} for who in scripts}
    for (who, cid, _), result in zip(jobs, results, strict=True):
        out[who][cid] = result
    return out


# --- the task files ---------------------------------------------------------------------------


def test_task_files_validate() -> None:
    spec = TaskSpec.model_validate(tomllib.loads((TASK / "task.toml").read_text()))
    assert spec.id == "tidy"
    assert spec.interface.kind == "command" and spec.interface.tool == "tidy"
    assert spec.oracle.entry == "python3 /opt/oracle/tidy.py"
    assert spec.delivery.entry == "python3 /workspace/tidy.py"
    assert spec.delivery.build == "python3 -m py_compile /workspace/tidy.py"
    for split in SPLITS:
        for path in (TASK / "cases" / split).glob("*.json"):
            CaseFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    for name in ("good", "partial", "broken"):
        assert load_solution(name).pace_s == 0.4
    for level in Level:
        assert user_agent(level).oracle_data.task_id == "tidy"


def test_case_counts_and_shape() -> None:
    counts = {s: sum(1 for cid, _ in CASES if cid.startswith(s + "/")) for s in SPLITS}
    assert counts["public"] >= 4 and counts["hidden"] >= 20 and counts["enhanced"] >= 5
    patterns = {case["pattern"] for _, case in CASES}
    assert 4 <= len(patterns) <= 7
    for cid, case in CASES:
        assert case["command"].strip() and "tidy" in case["command"], cid
        assert "input" not in case, cid


def test_public_cases_are_the_ground_examples() -> None:
    ground = (TASK / "prd" / "ground.md").read_text(encoding="utf-8")
    for cid, case in CASES:
        if cid.startswith("public/"):
            assert f"`{case['command']}`" in ground, cid
            assert "```\n" + case["expected_output"] + "```" in ground, cid


def test_prd_levels() -> None:
    texts = {
        lv: (TASK / "prd" / f"{LEVEL_FILES[lv]}.md").read_text(encoding="utf-8") for lv in Level
    }
    assert len(set(texts.values())) == 4
    assert (
        len(texts[Level.L1])
        < len(texts[Level.L2])
        < len(texts[Level.L3])
        < len(texts[Level.GROUND])
    )
    for level, text in texts.items():
        assert "/workspace/tidy.py" in text, level
        assert "tidy <subcommand> ..." in text, level
        assert user_agent(level).fuzzy_prd == text, level


def test_user_agent_records() -> None:
    l1 = user_agent(Level.L1).oracle_data
    task_records = [r for r in l1.hidden_constraints if not r.generic]
    assert len(task_records) >= 6
    for r in task_records:
        assert r.constraint_id.startswith("C")
        assert 4 <= len(r.trigger_keywords) <= 6, r.constraint_id
    assert len(l1.context_pointers) == 2
    l1_prd = " ".join((TASK / "prd" / "L1.md").read_text(encoding="utf-8").split())
    for p in l1.context_pointers:
        assert p.vague_reference in l1_prd
    by_id = {r.constraint_id: r for r in l1.hidden_constraints}
    previous = set(by_id)
    for level in (Level.L2, Level.L3):
        data = user_agent(level).oracle_data
        ids = {r.constraint_id for r in data.hidden_constraints}
        assert ids < previous, level  # each level hides strictly less
        for r in data.hidden_constraints:
            assert r == by_id[r.constraint_id]  # same record, same id, at every level
        prd = " ".join((TASK / "prd" / f"{LEVEL_FILES[level]}.md").read_text().split())
        for p in data.context_pointers:
            assert p.vague_reference in prd
        previous = ids
    ground = user_agent(Level.GROUND).oracle_data
    assert ground.hidden_constraints == [] and ground.context_pointers == []
    fallback = l1.fallback_response.lower()
    assert "specified" in fallback


def test_good_questions_reach_every_record() -> None:
    data = user_agent(Level.L1).oracle_data
    wanted = {r.constraint_id for r in data.hidden_constraints if not r.generic}
    wanted |= {f"CP{i:03d}" for i in range(1, len(data.context_pointers) + 1)}
    reached = []
    for step in load_solution("good").steps:
        if isinstance(step, Ask):
            result = match(step.ask, data)
            assert result.chosen, f"falls back: {step.ask}"
            reached.append(result.chosen[0].record_id)
    assert len(reached) == len(set(reached)), reached  # each question has its own record
    assert set(reached) == wanted


def test_partial_asks_half_and_one_falls_back() -> None:
    data = user_agent(Level.L1).oracle_data
    asks = [s.ask for s in load_solution("partial").steps if isinstance(s, Ask)]
    results = [match(q, data) for q in asks]
    assert sum(r.fallback for r in results) == 1
    reached = {r.chosen[0].record_id for r in results if r.chosen}
    task_ids = {r.constraint_id for r in data.hidden_constraints if not r.generic}
    assert 0.3 * len(task_ids) <= len(reached & task_ids) <= 0.7 * len(task_ids)


# --- behaviour --------------------------------------------------------------------------------


def test_oracle_reproduces_every_case(runs: dict[str, dict[str, Outcome]]) -> None:
    wrong = [cid for cid, case in CASES if runs["oracle"][cid][1] != case["expected_output"]]
    assert not wrong


def test_oracle_is_deterministic(runs: dict[str, dict[str, Outcome]]) -> None:
    unstable = [cid for cid, _ in CASES if runs["oracle"][cid] != runs["oracle2"][cid]]
    assert not unstable, {cid: (runs["oracle"][cid], runs["oracle2"][cid]) for cid in unstable[:2]}


def fixture_tree(files: dict[str, str]) -> dict[str, str]:
    tree = {}
    for rel, content in files.items():
        tree[rel] = hashlib.sha256(content.encode("utf-8")).hexdigest()
        parts = rel.split("/")
        for i in range(1, len(parts)):
            tree["/".join(parts[:i])] = "dir"
    return tree


def test_cases_have_side_effects_and_errors(runs: dict[str, dict[str, Outcome]]) -> None:
    changed = 0
    codes = set()
    for cid, case in CASES:
        code, _, _, tree = runs["oracle"][cid]
        codes.add(code)
        if not case.get("prep") and tree != fixture_tree(case.get("files", {})):
            changed += 1
    assert changed >= 30
    assert {0, 2, 3} <= codes


def test_good_matches_oracle_on_every_case(runs: dict[str, dict[str, Outcome]]) -> None:
    diffs = [cid for cid, _ in CASES if runs["good"][cid] != runs["oracle"][cid]]
    assert not diffs


def test_partial_fails_some_hidden_cases(runs: dict[str, dict[str, Outcome]]) -> None:
    hidden = [cid for cid, _ in CASES if cid.startswith("hidden/")]
    failing = [cid for cid in hidden if runs["partial"][cid] != runs["oracle"][cid]]
    assert len(failing) >= 3
    assert len(hidden) - len(failing) >= len(hidden) / 2


def test_broken_fails_the_build_gate(tmp_path: Path) -> None:
    FILES.assert_build_gate(tmp_path)
