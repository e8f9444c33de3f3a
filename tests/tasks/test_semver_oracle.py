"""The `semver` sample task, checked on the host (no Docker).

Every stored case is re-run against the oracle (twice, for determinism) the way the
dispatcher feeds it (the case's `input` as JSON on stdin); the scripted solutions' files are
run on the same cases; the task files validate against the models; each PRD level hides
exactly what its user-agent records reveal; the good solution's questions reach the records
they are meant for.
"""

from __future__ import annotations

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

TASK = Path(__file__).resolve().parents[2] / "tasks" / "semver"

FILES = TaskFiles(TASK, "semver.py")
load_cases, load_solution, written_file = FILES.cases, FILES.solution, FILES.written_file
user_agent, prd = FILES.user_agent, FILES.prd
ORACLE = TASK / "oracle" / "semver.py"
SPLITS = ("public", "hidden", "enhanced")
LEVEL_FILES = {Level.L1: "L1", Level.L2: "L2", Level.L3: "L3", Level.GROUND: "ground"}
ENTRY = "python3 /workspace/semver.py"

# A phrase that appears in a PRD exactly when the level reveals the record (whitespace
# normalised): the PRDs and the user-agent records must not drift apart.
TELLS = {
    "ARCH001": "standard library",
    "C001": "status 2",
    "C002": "invalid_version",
    "C003": "major=",
    "C004": "`-1`",
    "C005": "lowercase `v`",
    "C006": "gives `1.2.3`",
    "C007": "defaults to `rc`",
    "C008": "on the same",
    "C009": "`none`",
    "like npm does": "node-semver",
    "the way our old release script did": "`(X+1).0.0`",
}

Outcome = tuple[int, str, str]  # exit code, stdout, stderr


# --- loading ----------------------------------------------------------------------------------


def flat(text: str) -> str:
    return " ".join(text.replace("**", "").split())


CASES = load_cases()


# --- running cases -----------------------------------------------------------------------------

# Runs a script once per payload inside one interpreter, as `__main__` with fresh globals, the
# payload on stdin and stdout/stderr captured: the same observable result as a fresh process
# (checked against real processes on the public cases), at a fraction of the start-up cost.
DRIVER = r"""
import io, json, sys, traceback
script = sys.argv[1]
with open(script, encoding="utf-8") as f:
    code_obj = compile(f.read(), script, "exec")
payloads = json.loads(sys.stdin.buffer.read())
real_out = sys.stdout
results = []
for data in payloads:
    out, err = io.BytesIO(), io.BytesIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(data.encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    code = 0
    try:
        exec(code_obj, {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__})
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    results.append([code, out.getvalue().decode("utf-8", "replace"),
                    err.getvalue().decode("utf-8", "replace")])
real_out.write(json.dumps(results))
"""

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"}


def payload(case: dict) -> str:
    """What the dispatcher writes on the tool's stdin."""
    return json.dumps(case["input"], ensure_ascii=False)


def run_all(script: Path, cases: list[dict]) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="semver-test-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", DRIVER, str(script)],
            input=json.dumps([payload(c) for c in cases]).encode(),
            cwd=tmp,
            env={**ENV, "HOME": tmp},
            capture_output=True,
            timeout=120,
            check=True,
        )
    return [tuple(r) for r in json.loads(proc.stdout)]


def run_process(script: Path, case: dict) -> Outcome:
    """One case in a fresh process, exactly as the dispatcher runs it."""
    with tempfile.TemporaryDirectory(prefix="semver-test-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(script)],
            input=payload(case).encode(),
            cwd=tmp,
            env={**ENV, "HOME": tmp},
            capture_output=True,
            timeout=20,
        )
    return (
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("semver-solutions")
    out = {"oracle": ORACLE}
    for name in ("good", "partial"):
        path = tmp / f"{name}.py"
        path.write_text(written_file(name), encoding="utf-8")
        out[name] = path
    return out


@pytest.fixture(scope="module")
def runs(scripts: dict[str, Path]) -> dict[str, dict[str, Outcome]]:
    """Every case against the oracle (twice), good.yaml's file, and partial.yaml's file."""
    jobs = {
        "oracle": (scripts["oracle"], CASES),
        "oracle2": (scripts["oracle"], CASES),
        "good": (scripts["good"], CASES),
        "partial": (
            scripts["partial"],
            [(cid, c) for cid, c in CASES if cid.startswith("hidden/")],
        ),
    }
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {
            who: pool.submit(run_all, script, [c for _, c in cases])
            for who, (script, cases) in jobs.items()
        }
        return {
            who: dict(zip([cid for cid, _ in jobs[who][1]], futures[who].result(), strict=True))
            for who in jobs
        }


# --- the task files ---------------------------------------------------------------------------


def test_task_files_validate() -> None:
    spec = TaskSpec.model_validate(tomllib.loads((TASK / "task.toml").read_text()))
    assert spec.id == "semver"
    assert spec.image.base == "icae-base:bookworm"
    assert spec.interface.kind == "dispatcher" and spec.interface.tool == "semver"
    assert spec.oracle.entry == "python3 /opt/oracle/semver.py"
    assert spec.delivery.entry == ENTRY
    assert spec.delivery.build == "python3 -m py_compile /workspace/semver.py"
    for split in SPLITS:
        for path in (TASK / "cases" / split).glob("*.json"):
            CaseFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    for name in ("good", "partial", "broken"):
        assert load_solution(name).pace_s == 0.4
    for level in Level:
        data = user_agent(level)
        assert data.oracle_data.task_id == "semver"
        assert data.fuzzy_prd == prd(level), level


def test_case_counts_and_shape() -> None:
    counts = {s: sum(1 for cid, _ in CASES if cid.startswith(s + "/")) for s in SPLITS}
    assert counts["public"] >= 4 and counts["hidden"] >= 20 and counts["enhanced"] >= 5
    ops = {"parse", "compare", "bump", "satisfies", "sort", "max_satisfying"}
    hidden_ops = {c["input"]["op"] for cid, c in CASES if cid.startswith("hidden/")}
    assert hidden_ops == ops
    for cid, case in CASES:
        assert set(case) <= {"input", "expected_output", "pattern"}, cid
        assert "command" not in case, cid
        if "pattern" in case:  # set only where it should differ from the op
            assert isinstance(case["input"], dict), cid
            assert case["pattern"] != case["input"].get("op"), cid


def test_public_cases_are_the_ground_examples() -> None:
    ground = prd(Level.GROUND)
    examples = ground.count(f"| {ENTRY}\n")
    public = [case for cid, case in CASES if cid.startswith("public/")]
    assert examples == len(public)
    for case in public:
        shown = f"$ echo '{json.dumps(case['input'])}' | {ENTRY}\n{case['expected_output']}"
        assert shown in ground, case["input"]


def test_prd_levels_differ_and_state_the_interface() -> None:
    texts = {level: prd(level) for level in Level}
    assert len(set(texts.values())) == 4
    assert (
        len(texts[Level.L1])
        < len(texts[Level.L2])
        < len(texts[Level.L3])
        < len(texts[Level.GROUND])
    )
    for level, text in texts.items():
        assert "/workspace/semver.py" in text, level
        assert "one JSON object on stdin" in flat(text), level


def test_each_level_hides_exactly_its_records() -> None:
    for level in Level:
        data = user_agent(level).oracle_data
        hidden = {r.constraint_id for r in data.hidden_constraints}
        hidden |= {p.vague_reference for p in data.context_pointers}
        text = flat(prd(level))
        for record, tell in TELLS.items():
            if record in hidden:
                assert tell not in text, f"{level}: PRD reveals {record} ({tell!r})"
            else:
                assert tell in text, f"{level}: {record} is neither in the PRD nor a record"


def test_user_agent_records() -> None:
    l1 = user_agent(Level.L1).oracle_data
    task_records = [r for r in l1.hidden_constraints if not r.generic]
    assert len(task_records) >= 6
    for r in l1.hidden_constraints:
        assert r.constraint_id.startswith(("C0", "ARCH")), r.constraint_id
        assert 4 <= len(r.trigger_keywords) <= 6, r.constraint_id
        assert r.oracle_response.strip(), r.constraint_id
    assert len(l1.context_pointers) == 2
    l1_prd = flat(prd(Level.L1))
    for p in l1.context_pointers:
        assert p.vague_reference in l1_prd
    by_id = {r.constraint_id: r for r in l1.hidden_constraints}
    pointers = {p.vague_reference: p for p in l1.context_pointers}
    previous = set(by_id)
    for level in (Level.L2, Level.L3):
        data = user_agent(level).oracle_data
        ids = {r.constraint_id for r in data.hidden_constraints}
        assert ids < previous, level  # each level hides strictly less
        for r in data.hidden_constraints:
            assert r == by_id[r.constraint_id]  # same record, same id, at every level
        for p in data.context_pointers:
            assert p == pointers[p.vague_reference]
            assert p.vague_reference in flat(prd(level))
        assert data.fallback_response == l1.fallback_response
        previous = ids
    ground = user_agent(Level.GROUND).oracle_data
    assert ground.hidden_constraints == [] and ground.context_pointers == []
    assert "specified" in l1.fallback_response.lower()


def test_good_questions_reach_every_record() -> None:
    data = user_agent(Level.L1).oracle_data
    wanted = {r.constraint_id for r in data.hidden_constraints}
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


def test_revealed_records_fall_back_at_higher_levels() -> None:
    """A question about something the level's PRD states gets the fallback, not a record."""
    l1 = user_agent(Level.L1).oracle_data
    asks = [s.ask for s in load_solution("good").steps if isinstance(s, Ask)]
    for level in (Level.L2, Level.L3, Level.GROUND):
        data = user_agent(level).oracle_data
        still_hidden = {r.constraint_id for r in data.hidden_constraints}
        for q in asks:
            intended = match(q, l1).chosen[0].record_id
            result = match(q, data)
            if intended in still_hidden:
                assert result.chosen and result.chosen[0].record_id == intended, (level, q)
            elif not intended.startswith("CP"):
                assert result.fallback, (level, q)


# --- behaviour --------------------------------------------------------------------------------


def test_oracle_reproduces_every_case(runs: dict[str, dict[str, Outcome]]) -> None:
    wrong = [cid for cid, case in CASES if runs["oracle"][cid][1] != case["expected_output"]]
    assert not wrong


def test_oracle_is_deterministic(runs: dict[str, dict[str, Outcome]]) -> None:
    unstable = [cid for cid, _ in CASES if runs["oracle"][cid] != runs["oracle2"][cid]]
    assert not unstable


def test_oracle_exit_codes_and_silent_stderr(runs: dict[str, dict[str, Outcome]]) -> None:
    codes = set()
    for cid, _ in CASES:
        code, out, err = runs["oracle"][cid]
        assert err == "", cid
        assert code == (2 if out.startswith("error=") else 0), cid
        codes.add(code)
    assert codes == {0, 2}


def test_real_processes_agree_with_the_driver(
    scripts: dict[str, Path], runs: dict[str, dict[str, Outcome]]
) -> None:
    sample = [(cid, c) for cid, c in CASES if cid.startswith("public/")]
    jobs = [(who, cid, c) for who in ("oracle", "good") for cid, c in sample]
    with ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda j: run_process(scripts[j[0]], j[2]), jobs))
    for (who, cid, case), result in zip(jobs, results, strict=True):
        assert result == runs[who][cid], (who, cid)
        assert result[1] == case["expected_output"], (who, cid)


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
