"""The sample tasks, checked on the host (no Docker): `semver` (a dispatcher: the case's `input`
as JSON on stdin), `tidy` (a command on a folder of fixture files, judged on its effects too)
and `wordfreq` (a command in JavaScript: its oracle and solutions run with the host's Node.js,
and its checks are skipped where there is none; the engine runs it in its Debian runtime).

Every stored case is re-run against the oracle (twice, for determinism); the scripted
solutions' files are run on the same cases; the task files validate against the models; each
PRD level states what its user-agent records do not; the good solution's questions reach the
records they are meant for.

No file that is executed is written while cases run: the `tidy` wrappers are written once,
before the first process starts. (A wrapper written per case in a worker thread was the cause
of a flake: a process forked meanwhile by another thread inherits the wrapper's open write
descriptor until it execs, and executing the wrapper during that window fails with ETXTBSY,
`sh: 1: tidy: Text file busy`, exit 126, on whichever case it hits; load widens the window.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import pytest

from icae_tui.domain.solution import Ask
from icae_tui.domain.task import CaseFile, Level, TaskSpec
from icae_tui.users.matching import match
from tests.tasks.task_files import SPLITS, TaskFiles

TASKS = Path(__file__).resolve().parents[2] / "tasks"
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"}
CASE_TIMEOUT_S = 60  # one case, one process: generous, so that load is never a failure


class Outcome(NamedTuple):
    code: int
    stdout: str
    stderr: str
    tree: dict[str, str] | None = None  # the work folder afterwards (command tasks)


Cases = list[tuple[str, dict]]
Runs = dict[str, dict[str, Outcome]]  # who (oracle, oracle2, good, partial) -> case id -> outcome


@dataclass(frozen=True)
class Sample:
    """A sample task and what its checks need that differs between tasks."""

    id: str
    kind: str  # the interface: "dispatcher" or "command"
    interface_phrase: str  # every PRD level states the interface with it (whitespace-flattened)
    good_asks_generic: bool  # the good solution also asks for the generic records
    # A phrase that appears in a PRD exactly when the level reveals the record (flattened):
    # the PRDs and the user-agent records must not drift apart.
    tells: dict[str, str] = field(default_factory=dict)
    language: str = "python"  # or "javascript": the file's suffix and what runs it

    @property
    def root(self) -> Path:
        return TASKS / self.id

    @property
    def suffix(self) -> str:
        return ".js" if self.language == "javascript" else ".py"

    @property
    def interpreter(self) -> str:
        """What runs a script of the task in its images."""
        return "node" if self.language == "javascript" else "python3"

    @property
    def files(self) -> TaskFiles:
        return TaskFiles(self.root, f"{self.id}{self.suffix}")

    @property
    def oracle(self) -> Path:
        return self.root / "oracle" / f"{self.id}{self.suffix}"

    @property
    def entry(self) -> str:
        return f"{self.interpreter} /workspace/{self.id}{self.suffix}"

    @property
    def build_gate(self) -> str:
        if self.language == "javascript":
            return f"node --check /workspace/{self.id}.js"
        return f"python3 -m py_compile /workspace/{self.id}.py"

    def host_command(self, script: Path) -> list[str]:
        """The host's command that runs `script` (the wrappers and the driver use it)."""
        if self.language == "javascript":
            node = shutil.which("node") or shutil.which("nodejs")
            if node is None:
                pytest.skip(f"{self.id}: no Node.js on this host to run its oracle and solutions")
            return [node, str(script)]
        return [sys.executable, "-I", "-S", str(script)]

    @cached_property
    def cases(self) -> Cases:
        return self.files.cases()


SAMPLES = {
    "semver": Sample(
        id="semver",
        kind="dispatcher",
        interface_phrase="one JSON object on stdin",
        good_asks_generic=True,
        tells={
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
        },
    ),
    "tidy": Sample(
        id="tidy",
        kind="command",
        interface_phrase="tidy <subcommand> ...",
        good_asks_generic=False,
    ),
    "wordfreq": Sample(
        id="wordfreq",
        kind="command",
        interface_phrase="wordfreq <subcommand> ...",
        good_asks_generic=False,
        language="javascript",
        tells={
            "C001": "made only of digits",
            "C002": "always printed in lower case",
            "C003": "default `N` = 10",
            "C004": "a last line `<lines> <words> <distinct words> total`",
            "C005": "nothing is printed and the exit status is `1`",
            "C006": "wordfreq: cannot read FILE",
            "C007": "exactly `-`, standard input",
            "C008": "first non-space character is `#`",
            "C009": "`--` ends the options",
            "like wc does": "`<lines> <words> <distinct words> <name>`",
            "the usual stop-list format": "lines whose first non-space character",
        },
    ),
}


def flat(text: str) -> str:
    return " ".join(text.replace("**", "").split())


def in_split(cases: Cases, split: str) -> Cases:
    return [(cid, c) for cid, c in cases if cid.startswith(split + "/")]


# --- running cases: dispatcher tasks ----------------------------------------------------------

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


def payload(case: dict) -> str:
    """What the dispatcher writes on the tool's stdin."""
    return json.dumps(case["input"], ensure_ascii=False)


def run_driver(script: Path, cases: list[dict]) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="task-test-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", DRIVER, str(script)],
            input=json.dumps([payload(c) for c in cases]).encode(),
            cwd=tmp,
            env={**ENV, "HOME": tmp},
            capture_output=True,
            timeout=CASE_TIMEOUT_S * 10,
            check=True,
        )
    return [Outcome(*r) for r in json.loads(proc.stdout)]


def run_process(script: Path, case: dict) -> Outcome:
    """One dispatcher case in a fresh process, exactly as the dispatcher runs it."""
    with tempfile.TemporaryDirectory(prefix="task-test-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(script)],
            input=payload(case).encode(),
            cwd=tmp,
            env={**ENV, "HOME": tmp},
            capture_output=True,
            timeout=CASE_TIMEOUT_S,
        )
    return Outcome(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


# --- running cases: command tasks ---------------------------------------------------------------


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


def write_wrapper(bindir: Path, tool: str, command: list[str]) -> None:
    """`tool` on PATH runs `command`. Written before any case runs: see the module docstring."""
    bindir.mkdir(parents=True)
    wrapper = bindir / tool
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(f'"{a}"' for a in command) + ' "$@"\n')
    wrapper.chmod(0o755)


def run_command(bindir: Path, case: dict) -> Outcome:
    """Fixtures in a fresh folder, `prep`, then `sh -c command` with the tool on PATH and the
    case's `input` (when it is text) on stdin, as the engine runs it."""
    with tempfile.TemporaryDirectory(prefix="task-test-") as tmp:
        base = Path(tmp)
        data = base / "w" / "x" / "data"
        data.mkdir(parents=True)
        for rel, content in case.get("files", {}).items():
            p = data / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode("utf-8"))
        env = {**ENV, "PATH": f"{bindir}:{ENV['PATH']}", "HOME": str(base)}
        if case.get("prep"):
            subprocess.run(
                ["sh", "-c", case["prep"]], cwd=data, env=env, check=True, timeout=CASE_TIMEOUT_S
            )
        stdin = case.get("input")
        proc = subprocess.run(
            ["sh", "-c", case["command"]],
            cwd=data,
            env=env,
            input=stdin.encode("utf-8") if isinstance(stdin, str) else b"",
            capture_output=True,
            timeout=CASE_TIMEOUT_S,
        )
        return Outcome(
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
            snapshot(data),
        )


# --- every case, every side, once per task ------------------------------------------------------


def run_everything(task: Sample, tmp: Path) -> Runs:
    """Every case against the oracle (twice), good.yaml's file, and partial.yaml's file on the
    hidden cases."""
    scripts = {"oracle": task.oracle}
    for name in ("good", "partial"):
        path = tmp / f"{name}{task.suffix}"
        path.write_text(task.files.written_file(name), encoding="utf-8")
        scripts[name] = path
    jobs: dict[str, tuple[str, Cases]] = {  # who -> (script, cases)
        "oracle": ("oracle", task.cases),
        "oracle2": ("oracle", task.cases),
        "good": ("good", task.cases),
        "partial": ("partial", in_split(task.cases, "hidden")),
    }
    if task.kind == "dispatcher":
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = {
                who: pool.submit(run_driver, scripts[name], [c for _, c in cases])
                for who, (name, cases) in jobs.items()
            }
            results = {who: future.result() for who, future in futures.items()}
    else:
        bins = {name: tmp / f"bin-{name}" for name in scripts}
        for name, script in scripts.items():  # every wrapper before the first process
            write_wrapper(bins[name], task.id, task.host_command(script))
        each = [(bins[name], case) for name, cases in jobs.values() for _, case in cases]
        with ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1)) as pool:
            done = iter(list(pool.map(lambda job: run_command(*job), each)))
        results = {who: [next(done) for _ in cases] for who, (_, cases) in jobs.items()}
    return {
        who: dict(zip([cid for cid, _ in cases], results[who], strict=True))
        for who, (_, cases) in jobs.items()
    }


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Runs]:
    """The runs of a task by id, computed once per module."""
    done: dict[str, Runs] = {}

    def of(task_id: str) -> Runs:
        if task_id not in done:
            done[task_id] = run_everything(SAMPLES[task_id], tmp_path_factory.mktemp(task_id))
        return done[task_id]

    return of


@pytest.fixture(params=sorted(SAMPLES))
def task(request: pytest.FixtureRequest) -> Sample:
    return SAMPLES[request.param]


@pytest.fixture
def runs(task: Sample, outcomes: Callable[[str], Runs]) -> Runs:
    return outcomes(task.id)


def assert_same(runs: Runs, a: str, b: str, cases: Cases) -> None:
    """`a` and `b` have the same outcome on every case; if not, say where and how."""
    ids = [cid for cid, _ in cases if runs[a][cid] != runs[b][cid]]
    shown = {cid: {a: runs[a][cid], b: runs[b][cid]} for cid in ids[:3]}
    assert not ids, f"{len(ids)} case(s) differ: {ids}; the first: {shown}"


# --- the task files ---------------------------------------------------------------------------


def test_task_files_validate(task: Sample) -> None:
    files = task.files
    spec = TaskSpec.model_validate(tomllib.loads((task.root / "task.toml").read_text()))
    assert spec.id == task.id
    assert spec.image.base == "icae-base:bookworm"
    assert spec.interface.kind == task.kind and spec.interface.tool == task.id
    assert spec.language == task.language
    assert spec.oracle.entry == f"{task.interpreter} /opt/oracle/{task.id}{task.suffix}"
    assert spec.delivery.entry == task.entry
    assert spec.delivery.build == task.build_gate
    for split in SPLITS:
        for path in (task.root / "cases" / split).glob("*.json"):
            CaseFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    for name in ("good", "partial", "broken"):
        assert files.solution(name).pace_s == 0.4
    for level in Level:
        data = files.user_agent(level)
        assert data.oracle_data.task_id == task.id
        assert data.fuzzy_prd == files.prd(level), level


def test_case_counts(task: Sample) -> None:
    counts = {s: len(in_split(task.cases, s)) for s in SPLITS}
    assert counts["public"] >= 4 and counts["hidden"] >= 20 and counts["enhanced"] >= 5


def test_semver_case_shape() -> None:
    cases = SAMPLES["semver"].cases
    ops = {"parse", "compare", "bump", "satisfies", "sort", "max_satisfying"}
    assert {c["input"]["op"] for _, c in in_split(cases, "hidden")} == ops
    for cid, case in cases:
        assert set(case) <= {"input", "expected_output", "pattern"}, cid
        assert "command" not in case, cid
        if "pattern" in case:  # set only where it should differ from the op
            assert isinstance(case["input"], dict), cid
            assert case["pattern"] != case["input"].get("op"), cid


def test_tidy_case_shape() -> None:
    cases = SAMPLES["tidy"].cases
    assert 4 <= len({case["pattern"] for _, case in cases}) <= 7
    for cid, case in cases:
        assert case["command"].strip() and "tidy" in case["command"], cid
        assert "input" not in case, cid


def test_wordfreq_case_shape() -> None:
    cases = SAMPLES["wordfreq"].cases
    assert 40 <= len(cases) <= 70  # the engine runs them all in CI: kept modest
    assert 4 <= len({case["pattern"] for _, case in cases}) <= 7
    for cid, case in cases:
        assert case["command"].startswith("wordfreq"), cid
        assert case.get("input") is None or isinstance(case["input"], str), cid
        assert "prep" not in case, cid


def ground_example(task: Sample, case: dict) -> list[str]:
    """How the ground PRD shows a public case."""
    if task.kind == "dispatcher":
        return [f"$ echo '{json.dumps(case['input'])}' | {task.entry}\n{case['expected_output']}"]
    return [f"`{case['command']}`", "```\n" + case["expected_output"] + "```"]


def test_public_cases_are_the_ground_examples(task: Sample) -> None:
    ground = task.files.prd(Level.GROUND)
    public = in_split(task.cases, "public")
    if task.kind == "dispatcher":
        assert ground.count(f"| {task.entry}\n") == len(public)  # no other example
    for cid, case in public:
        for shown in ground_example(task, case):
            assert shown in ground, cid


def test_prd_levels_differ_and_state_the_interface(task: Sample) -> None:
    texts = {level: task.files.prd(level) for level in Level}
    assert len(set(texts.values())) == 4
    assert (
        len(texts[Level.L1])
        < len(texts[Level.L2])
        < len(texts[Level.L3])
        < len(texts[Level.GROUND])
    )
    for level, text in texts.items():
        assert f"/workspace/{task.id}{task.suffix}" in text, level
        assert task.interface_phrase in flat(text), level


@pytest.mark.parametrize("task_id", ["semver", "wordfreq"])
def test_each_level_hides_exactly_its_records(task_id: str) -> None:
    task = SAMPLES[task_id]
    for level in Level:
        data = task.files.user_agent(level).oracle_data
        hidden = {r.constraint_id for r in data.hidden_constraints}
        hidden |= {p.vague_reference for p in data.context_pointers}
        text = flat(task.files.prd(level))
        for record, tell in task.tells.items():
            if record in hidden:
                assert tell not in text, f"{level}: PRD reveals {record} ({tell!r})"
            else:
                assert tell in text, f"{level}: {record} is neither in the PRD nor a record"


def test_user_agent_records(task: Sample) -> None:
    user_agent, prd = task.files.user_agent, task.files.prd
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


def test_good_questions_reach_every_record(task: Sample) -> None:
    data = task.files.user_agent(Level.L1).oracle_data
    wanted = {
        r.constraint_id for r in data.hidden_constraints if task.good_asks_generic or not r.generic
    }
    wanted |= {f"CP{i:03d}" for i in range(1, len(data.context_pointers) + 1)}
    reached = []
    for step in task.files.solution("good").steps:
        if isinstance(step, Ask):
            result = match(step.ask, data)
            assert result.chosen, f"falls back: {step.ask}"
            reached.append(result.chosen[0].record_id)
    assert len(reached) == len(set(reached)), reached  # each question has its own record
    assert set(reached) == wanted


def test_partial_asks_half_and_one_falls_back(task: Sample) -> None:
    data = task.files.user_agent(Level.L1).oracle_data
    asks = [s.ask for s in task.files.solution("partial").steps if isinstance(s, Ask)]
    results = [match(q, data) for q in asks]
    assert sum(r.fallback for r in results) == 1
    reached = {r.chosen[0].record_id for r in results if r.chosen}
    task_ids = {r.constraint_id for r in data.hidden_constraints if not r.generic}
    assert 0.3 * len(task_ids) <= len(reached & task_ids) <= 0.7 * len(task_ids)


def test_revealed_records_fall_back_at_higher_levels(task: Sample) -> None:
    """A question about something the level's PRD states gets the fallback, not a record."""
    l1 = task.files.user_agent(Level.L1).oracle_data
    asks = [s.ask for s in task.files.solution("good").steps if isinstance(s, Ask)]
    for level in (Level.L2, Level.L3, Level.GROUND):
        data = task.files.user_agent(level).oracle_data
        still_hidden = {r.constraint_id for r in data.hidden_constraints}
        for q in asks:
            intended = match(q, l1).chosen[0].record_id
            result = match(q, data)
            if intended in still_hidden:
                assert result.chosen and result.chosen[0].record_id == intended, (level, q)
            elif not intended.startswith("CP"):
                assert result.fallback, (level, q)


# --- behaviour --------------------------------------------------------------------------------


def test_oracle_reproduces_every_case(task: Sample, runs: Runs) -> None:
    wrong = {
        cid: runs["oracle"][cid]
        for cid, case in task.cases
        if runs["oracle"][cid].stdout != case["expected_output"]
    }
    assert not wrong


def test_oracle_is_deterministic(task: Sample, runs: Runs) -> None:
    assert_same(runs, "oracle", "oracle2", task.cases)


def test_good_matches_oracle_on_every_case(task: Sample, runs: Runs) -> None:
    assert_same(runs, "good", "oracle", task.cases)


def test_partial_fails_some_hidden_cases(task: Sample, runs: Runs) -> None:
    hidden = [cid for cid, _ in in_split(task.cases, "hidden")]
    failing = [cid for cid in hidden if runs["partial"][cid] != runs["oracle"][cid]]
    assert len(failing) >= 3
    assert len(hidden) - len(failing) >= len(hidden) / 2


def test_broken_fails_the_build_gate(task: Sample, tmp_path: Path) -> None:
    if task.language == "javascript":
        command = task.host_command(tmp_path / "x.js")[:1] + ["--check"]
        task.files.assert_build_gate(tmp_path, command)
    else:
        task.files.assert_build_gate(tmp_path)


def test_semver_exit_codes_and_silent_stderr(outcomes: Callable[[str], Runs]) -> None:
    oracle = outcomes("semver")["oracle"]
    codes = set()
    for cid, _ in SAMPLES["semver"].cases:
        code, out, err, _ = oracle[cid]
        assert err == "", cid
        assert code == (2 if out.startswith("error=") else 0), cid
        codes.add(code)
    assert codes == {0, 2}


def test_semver_real_processes_agree_with_the_driver(
    outcomes: Callable[[str], Runs], tmp_path: Path
) -> None:
    task, runs = SAMPLES["semver"], outcomes("semver")
    good = tmp_path / "good.py"
    good.write_text(task.files.written_file("good"), encoding="utf-8")
    scripts = {"oracle": task.oracle, "good": good}
    jobs = [(who, cid, c) for who in scripts for cid, c in in_split(task.cases, "public")]
    with ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda j: run_process(scripts[j[0]], j[2]), jobs))
    for (who, cid, case), result in zip(jobs, results, strict=True):
        assert result == runs[who][cid], (who, cid)
        assert result.stdout == case["expected_output"], (who, cid)


def fixture_tree(files: dict[str, str]) -> dict[str, str]:
    tree = {}
    for rel, content in files.items():
        tree[rel] = hashlib.sha256(content.encode("utf-8")).hexdigest()
        parts = rel.split("/")
        for i in range(1, len(parts)):
            tree["/".join(parts[:i])] = "dir"
    return tree


def test_tidy_cases_have_side_effects_and_errors(outcomes: Callable[[str], Runs]) -> None:
    oracle = outcomes("tidy")["oracle"]
    changed = 0
    codes = set()
    for cid, case in SAMPLES["tidy"].cases:
        code, _, _, tree = oracle[cid]
        codes.add(code)
        if not case.get("prep") and tree != fixture_tree(case.get("files", {})):
            changed += 1
    assert changed >= 30
    assert {0, 2, 3} <= codes


def test_wordfreq_exit_codes_and_no_side_effects(outcomes: Callable[[str], Runs]) -> None:
    """It only reads: every case leaves its fixtures as they were; stderr is one line exactly
    when the exit status is 2, and a grep that finds nothing exits 1 silently."""
    oracle = outcomes("wordfreq")["oracle"]
    codes = set()
    for cid, case in SAMPLES["wordfreq"].cases:
        code, out, err, tree = oracle[cid]
        codes.add(code)
        assert tree == fixture_tree(case.get("files", {})), cid
        assert (code == 2) == (err != ""), cid
        if code == 2:
            assert out == "" and err.count("\n") == 1, cid
        if code == 1:
            assert (out, err) == ("", ""), cid
    assert codes == {0, 1, 2}
