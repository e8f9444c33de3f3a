"""The verdict ladder, rung by rung, from SideRuns built by hand (no Docker).

Each row names a rung and what would have been decided one rung later, so that moving a
rung in icae_tui/evaluation/verdict.py makes a row fail. Faults and processes left running
have more rows in test_verdict_faults.py.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import aiodocker
import pytest

from icae_tui.domain.results import FileChange, LadderMetric, SideRun, Verdict
from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.verdict import (
    COMPARE_CAP,
    Attempt,
    SideFault,
    SideOutcome,
    build_error_result,
    decide,
    effects_reason,
    invocation,
    judge,
    oracle_agrees,
    same_effects,
)


def _task(kind: str = "command", **cases: object) -> Task:
    spec = {
        "id": "verdicts",
        "title": "verdicts",
        "language": "sh",
        "interface": {"kind": kind, "tool": "tool"},
        "oracle": {"entry": "/opt/tool"},
        "delivery": {"entry": "/opt/tool", "build": "true"},
        "cases": {"timeout_s": 3, **cases},
    }
    return Task(spec=TaskSpec.model_validate(spec), root="/none", prd={}, user_agent={}, cases=[])


TASK = _task()


def _ref(**case: object) -> CaseRef:
    return CaseRef(
        split=Split.HIDDEN, stem="h", index=0, case=Case(command="tool x", **case), pattern="p"
    )  # type: ignore[arg-type]


REF = _ref()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run(stdout: str = "ok\n", stderr: str = "", exit_code: int | None = 0, **kw: object) -> SideRun:
    return SideRun(
        exit_code=exit_code,
        stdout=stdout,
        stderr=stderr,
        stdout_bytes=len(stdout.encode()),
        stderr_bytes=len(stderr.encode()),
        stdout_sha256=_sha(stdout),
        stderr_sha256=_sha(stderr),
        **kw,  # type: ignore[arg-type]
    )


def side(
    stdout: str = "ok\n", stderr: str = "", exit_code: int | None = 0, **kw: object
) -> SideOutcome:
    return SideOutcome(run(stdout, stderr, exit_code, **kw), stdout.encode())


def added(path: str, sha: str = "a", change: str = "added") -> FileChange:
    return FileChange(path=path, change=change, sha256=sha)  # type: ignore[arg-type]


OK = side()
WA, RE, AC = Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR, Verdict.ACCEPTED
LEFT = "left processes running after its command ended"
DIED = "killed its own box: every process in it ended, its init's keepalive included"
DISK = (
    "filled its box's disk (the disk limit of 1024 MiB: more was written than the box may keep)"
)
FIVE = [added(f"f{i}") for i in range(5)]

# (rung, oracle, delivery, verdict, reason): rows in ladder order
LADDER = [
    (
        "oracle timed out",
        side(timed_out=True, exit_code=124),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle timed out",
    ),
    (
        "oracle timed out before its memory",
        side(timed_out=True, oom_killed=True),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle timed out",
    ),
    (
        "oracle out of memory",
        side(oom_killed=True, exit_code=137),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle ran out of memory",
    ),
    (
        "oracle out of memory before overflow",
        side(oom_killed=True, overflowed=True),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle ran out of memory",
    ),
    ("oracle overflowed", side(overflowed=True), OK, Verdict.ORACLE_ERROR, "the oracle overflowed"),
    (
        "oracle overflowed without an exit",
        side(overflowed=True, exit_code=None),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle overflowed",
    ),
    (
        "oracle did not finish",
        side(exit_code=None),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle did not finish",
    ),
    (
        "oracle error before the delivery's fork bomb",
        side(exit_code=None),
        side(pids_capped=True, timed_out=True),
        Verdict.ORACLE_ERROR,
        "the oracle did not finish",
    ),
    ("processes", OK, side(pids_capped=True), RE, "hit the process limit (fork bomb?)"),
    (
        "processes before time",
        OK,
        side(pids_capped=True, timed_out=True, exit_code=124),
        RE,
        "hit the process limit (fork bomb?), no exit within 3 s",
    ),
    (
        "processes capped on both sides",
        side(pids_capped=True),
        side(pids_capped=True),
        AC,
        "identical",
    ),
    ("left running", OK, side(left_running=1), RE, LEFT),
    ("left running, however many", OK, side(left_running=78), RE, LEFT),
    ("left running before processes", OK, side(left_running=5, pids_capped=True), RE, LEFT),
    (
        "processes before left running, for a bomb killed at its timeout",
        OK,
        side(left_running=1, pids_capped=True, timed_out=True, exit_code=124),
        RE,
        "hit the process limit (fork bomb?), no exit within 3 s",
    ),
    (
        "left running, for a bomb killed at its timeout whose oracle hit the limit too",
        side(pids_capped=True),
        side(left_running=1, pids_capped=True, timed_out=True, exit_code=124),
        RE,
        LEFT + ", no exit within 3 s",
    ),
    (
        "left running before time",
        OK,
        side(left_running=2, timed_out=True, exit_code=124),
        RE,
        LEFT + ", no exit within 3 s",
    ),
    ("left running on both sides", side(left_running=1), side(left_running=4), AC, "identical"),
    (
        "left running, its output cut: the output decides",
        OK,
        side(left_running=1, overflowed=True, exit_code=None),
        Verdict.OUTPUT_LIMIT,
        "more than 64 MiB of output",
    ),
    (
        "left running, never seen to end: time decides",
        OK,
        side(left_running=1, timed_out=True, exit_code=None),
        Verdict.TIME_LIMIT,
        "no exit within 3 s",
    ),
    ("box died", OK, side(box_died=True, exit_code=None), RE, DIED),
    ("box died before time", OK, side(box_died=True, timed_out=True), RE, DIED),
    (
        "box died out of memory",
        OK,
        side(box_died=True, oom_killed=True, exit_code=137),
        Verdict.MEMORY_LIMIT,
        "killed: out of memory",
    ),
    (
        "oracle killed its box",
        side(box_died=True, exit_code=None),
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle killed its own box",
    ),
    ("time", OK, side(timed_out=True, exit_code=124), Verdict.TIME_LIMIT, "no exit within 3 s"),
    (
        "time before memory",
        OK,
        side(timed_out=True, oom_killed=True),
        Verdict.TIME_LIMIT,
        "no exit within 3 s",
    ),
    (
        "memory",
        OK,
        side(oom_killed=True, exit_code=137),
        Verdict.MEMORY_LIMIT,
        "killed: out of memory",
    ),
    (
        "memory before output",
        OK,
        side(oom_killed=True, overflowed=True),
        Verdict.MEMORY_LIMIT,
        "killed: out of memory",
    ),
    ("disk", OK, side(disk_full=True, exit_code=1), Verdict.DISK_LIMIT, DISK),
    (
        "disk before output",
        OK,
        side(disk_full=True, overflowed=True),
        Verdict.DISK_LIMIT,
        DISK,
    ),
    ("disk after memory", OK, side(disk_full=True, oom_killed=True), Verdict.MEMORY_LIMIT,
     "killed: out of memory"),  # fmt: skip
    (
        "the oracle filled its disk",
        side(disk_full=True),
        side(disk_full=True),
        Verdict.ORACLE_ERROR,
        "the oracle filled its disk",
    ),
    ("output", OK, side(overflowed=True), Verdict.OUTPUT_LIMIT, "more than 64 MiB of output"),
    (
        "output before exec",
        OK,
        side(overflowed=True, exit_code=1),
        Verdict.OUTPUT_LIMIT,
        "more than 64 MiB of output",
    ),
    ("exec: wrong code", OK, side(exit_code=1), WA, "exit code 1, oracle 0"),
    ("exec: 125 is the program's", OK, side(exit_code=125), WA, "exit code 125, oracle 0"),
    ("exec: 126 crashed", OK, side(exit_code=126), RE, "exit code 126, oracle 0"),
    ("exec: killed", OK, side(exit_code=137), RE, "exit code 137, oracle 0"),
    ("exec: a signal", OK, side(exit_code=-9), RE, "exit code -9, oracle 0"),
    ("exec: no exit code", OK, side(exit_code=None), WA, "exit code None, oracle 0"),
    (
        "exec: the last stderr line",
        OK,
        side(stderr="a\nboom  \n\n", exit_code=2),
        WA,
        "exit code 2, oracle 0; stderr: boom",
    ),
    (
        "exec: a long stderr line is cut",
        OK,
        side(stderr="x" * 500, exit_code=2),
        WA,
        "exit code 2, oracle 0; stderr: " + "x" * 120,
    ),
    (
        "exec: a line separator ends no stderr line",  # str.splitlines() would quote "injected"
        OK,
        side(stderr="first line\nreal error\u2028injected\r\n", exit_code=2),
        WA,
        "exit code 2, oracle 0; stderr: real error\u2028injected",
    ),
    (
        "exec: the oracle failed, the delivery did not",
        side(exit_code=3),
        OK,
        WA,
        "exit code 0, oracle 3",
    ),
    (
        "exec before side effects",
        OK,
        side(exit_code=1, changes=[added("out")]),
        WA,
        "exit code 1, oracle 0",
    ),
    (
        "side effects: an extra file",
        OK,
        side(changes=[added("out")]),
        Verdict.SIDE_EFFECTS,
        "side effects differ: out: added (oracle untouched)",
    ),
    (
        "side effects: a missing file",
        side(changes=[added("out")]),
        OK,
        Verdict.SIDE_EFFECTS,
        "side effects differ: out: untouched (oracle added)",
    ),
    (
        "side effects: another change",
        side(changes=[added("f", change="modified")]),
        side(changes=[added("f", change="deleted")]),
        Verdict.SIDE_EFFECTS,
        "side effects differ: f: deleted (oracle modified)",
    ),
    (
        "side effects: other content",
        side(changes=[added("f", "a")]),
        side(changes=[added("f", "b")]),
        Verdict.SIDE_EFFECTS,
        "side effects differ: f: different content",
    ),
    (
        "side effects: three named, then …",
        OK,
        side(changes=FIVE),
        Verdict.SIDE_EFFECTS,
        "side effects differ: f0: added (oracle untouched); f1: added (oracle untouched); "
        "f2: added (oracle untouched) …",
    ),
    (
        "side effects: the same digest, whatever was kept",
        side(changes_sha256="d"),
        side(changes=[added("out")], changes_sha256="d"),
        AC,
        "identical",
    ),
    (
        "side effects: digests differ past the cap",
        side(changes=FIVE, changes_sha256="d"),
        side(changes=FIVE, changes_sha256="e"),
        Verdict.SIDE_EFFECTS,
        "side effects differ past the 5 kept changes: 5 changes (oracle 5)",
    ),
    (
        "side effects: one digest missing, the lists decide",
        side(changes=FIVE, changes_sha256="d"),
        side(changes=FIVE),
        AC,
        "identical",
    ),
    (
        "side effects before stdout",
        OK,
        side("no\n", changes=[added("out")]),
        Verdict.SIDE_EFFECTS,
        "side effects differ: out: added (oracle untouched)",
    ),
    ("stdout", OK, side("no\n"), WA, "stdout differs (similarity 0.00)"),
    (
        "stdout: close but not equal",
        side("hello world\n"),
        side("hello worle\n"),
        WA,
        "stdout differs (similarity 0.91)",
    ),
    ("stdout: whitespace only", side("a  b\n\n"), side("\n a b \n"), AC, "identical"),
    ("stdout before stderr", OK, side("no\n", "err\n"), WA, "stdout differs (similarity 0.00)"),
    ("stderr", OK, side(stderr="err\n"), WA, "stderr differs"),
    ("stderr: whitespace only", side(stderr="e  r\n"), side(stderr="e r"), AC, "identical"),
    ("accepted", OK, side(), AC, "identical"),
]


def _row_ids(rows: list[tuple[object, ...]]) -> list[str]:
    return [str(row[0]) for row in rows]


@pytest.mark.parametrize(
    ("rung", "oracle", "delivery", "verdict", "reason"), LADDER, ids=_row_ids(LADDER)
)
def test_the_ladder(
    rung: str, oracle: SideOutcome, delivery: SideOutcome, verdict: Verdict, reason: str
) -> None:
    result = judge(TASK, REF, oracle, delivery)
    assert (result.verdict, result.reason) == (verdict, reason)
    assert result.passed == (verdict == AC)
    assert (result.oracle, result.delivery) == (oracle.run, delivery.run)
    assert (result.case_id, result.split, result.pattern, result.command) == (
        "hidden/h#0", "hidden", "p", "tool x",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("rung", "oracle", "delivery", "verdict", "reason"), LADDER, ids=_row_ids(LADDER)
)
def test_processes_left_running_are_a_runtime_error_whatever_else_happened(
    rung: str, oracle: SideOutcome, delivery: SideOutcome, verdict: Verdict, reason: str
) -> None:
    """One verdict, one reason, for any number left: a detached fork bomb is judged the same
    however far it got before it was stopped."""
    lingering = SideOutcome(
        delivery.run.model_copy(update={"left_running": 2}), delivery.stdout_full
    )
    result = judge(TASK, REF, oracle, lingering)
    ended = delivery.run.exit_code is not None and not delivery.run.overflowed
    bomb_timed_out = delivery.run.pids_capped and delivery.run.timed_out  # capped comes first
    if verdict is Verdict.ORACLE_ERROR or oracle.run.left_running or not ended or bomb_timed_out:
        assert (result.verdict, result.reason) == (verdict, reason)
    else:
        clock = ", no exit within 3 s" if delivery.run.timed_out else ""
        assert (result.verdict, result.reason) == (RE, LEFT + clock)


def test_the_case_timeout_wins_over_the_task_default() -> None:
    ref = _ref(timeout_s=0.5)
    timed_out = judge(TASK, ref, OK, side(timed_out=True))
    fork_bomb = judge(TASK, ref, OK, side(timed_out=True, pids_capped=True))
    assert timed_out.reason == "no exit within 0.5 s"
    assert fork_bomb.reason == "hit the process limit (fork bomb?), no exit within 0.5 s"


# (rung, oracle, delivery, exec_ok, sp, em, fm, fm_score)
FLAGS = [
    ("a limit: none are set", OK, side(timed_out=True), False, False, False, False, 0.0),
    ("exec", OK, side("ok \n", exit_code=1), False, False, False, False, 1.0),
    ("side effects", OK, side(changes=[added("out")]), True, False, False, False, 1.0),
    ("stdout close", side("hello world\n"), side("hello worle\n"), True, True, False, True, 0.9091),
    ("stdout far", OK, side("no\n"), True, True, False, False, 0.0),
    ("stderr", OK, side(stderr="e"), True, True, True, True, 1.0),
    ("accepted", OK, OK, True, True, True, True, 1.0),
]


@pytest.mark.parametrize(
    ("rung", "oracle", "delivery", "exec_ok", "sp", "em", "fm", "fm_score"),
    FLAGS,
    ids=_row_ids(FLAGS),
)
def test_the_flags_beside_the_verdict(
    rung: str,
    oracle: SideOutcome,
    delivery: SideOutcome,
    exec_ok: bool,
    sp: bool,
    em: bool,
    fm: bool,
    fm_score: float,
) -> None:
    r = judge(TASK, REF, oracle, delivery)
    m = LadderMetric
    flags = (r.holds(m.EXEC), r.holds(m.SP), r.holds(m.EM), r.holds(m.FM))
    assert (*flags, r.metrics.get(m.FM_SCORE, 0.0)) == (exec_ok, sp, em, fm, fm_score)
    assert all(v in (0.0, 1.0) for k, v in r.metrics.items() if k != m.FM_SCORE)


def test_fm_follows_the_task_threshold() -> None:
    strict = _task(fm_threshold=0.95)
    r = judge(strict, REF, side("hello world\n"), side("hello worle\n"))
    assert (r.metrics[LadderMetric.FM_SCORE], r.holds(LadderMetric.FM)) == (0.9091, False)


def _past_the_cap(text: str) -> SideOutcome:
    """A stream longer than what was kept for comparison: only its digest is whole."""
    o = side(text)
    kept = o.run.model_copy(update={"stdout_bytes": COMPARE_CAP + 1})
    return SideOutcome(kept, o.stdout_full)


@pytest.mark.parametrize(
    ("oracle", "delivery", "verdict"),
    [
        (_past_the_cap("a b\n"), _past_the_cap("a b\n"), AC),  # byte-identical, however long
        (_past_the_cap("a b\n"), side("a  b\n"), WA),  # cannot normalise what was not kept
        (side("a b\n"), _past_the_cap("a  b\n"), WA),
        (side("a b\n"), side("a  b\n"), AC),
    ],
)
def test_stdout_past_the_compare_cap_compares_by_digest(
    oracle: SideOutcome, delivery: SideOutcome, verdict: Verdict
) -> None:
    assert judge(TASK, REF, oracle, delivery).verdict == verdict


def test_em_compares_what_was_kept_for_comparison_not_what_is_displayed() -> None:
    oracle = SideOutcome(run("a b\n").model_copy(update={"stdout": "cut\n"}), b"a b\n")
    delivery = SideOutcome(run("other\n"), b"a  b\n")  # displayed, the two would differ
    assert judge(TASK, REF, oracle, delivery).verdict == AC


# --- several oracle runs, and sides the engine could not run ------------------------------

REFUSED = SideFault(aiodocker.DockerError(404, {"message": "No such container: abc"}))
NONDET = "the oracle gave different results on two runs; not counted"
NONDET_V = Verdict.ORACLE_NONDETERMINISTIC

# (rung, oracle runs, delivery, verdict, reason)
DECIDE = [
    ("one oracle run", [OK], side("no\n"), WA, "stdout differs (similarity 0.00)"),
    ("two agreeing runs", [OK, side()], OK, AC, "identical"),
    ("runs differ in stdout", [OK, side("no\n")], OK, NONDET_V, NONDET),
    ("runs differ in whitespace", [OK, side("ok \n")], OK, Verdict.ORACLE_NONDETERMINISTIC, NONDET),
    ("runs differ in stderr", [OK, side(stderr="e")], OK, Verdict.ORACLE_NONDETERMINISTIC, NONDET),
    (
        "runs differ in exit code",
        [OK, side(exit_code=1)],
        OK,
        Verdict.ORACLE_NONDETERMINISTIC,
        NONDET,
    ),
    ("runs differ in side effects", [OK, side(changes=[added("f")])], OK, NONDET_V, NONDET),
    ("the third run differs", [OK, OK, side("no\n")], OK, Verdict.ORACLE_NONDETERMINISTIC, NONDET),
    (
        "nondeterminism before the oracle's error",
        [side(timed_out=True, exit_code=None), OK],
        OK,
        NONDET_V,
        NONDET,
    ),
    (
        "nondeterminism before the delivery's limits",
        [OK, side("no\n")],
        side(timed_out=True),
        NONDET_V,
        NONDET,
    ),
    (
        "runs that agree on an error",
        [side(exit_code=None), side(exit_code=None)],
        OK,
        Verdict.ORACLE_ERROR,
        "the oracle did not finish",
    ),
    (
        "the delivery's fault",
        [OK],
        REFUSED,
        RE,
        "the engine could not run or inspect this case: DockerError: ",
    ),
    (
        "the delivery's fault before nondeterminism",
        [OK, side("no\n")],
        REFUSED,
        RE,
        "the engine could not run or inspect this case: ",
    ),
    (
        "the delivery's fault, whatever the oracle's",
        [REFUSED],
        REFUSED,
        RE,
        "the engine could not run or inspect this case: ",
    ),
    (
        "the oracle's fault",
        [REFUSED],
        OK,
        Verdict.ORACLE_ERROR,
        "the engine could not run or inspect the oracle's side: DockerError: ",
    ),
    (
        "the second oracle run's fault",
        [OK, REFUSED],
        side("no\n"),
        Verdict.ORACLE_ERROR,
        "the engine could not run or inspect the oracle's side: ",
    ),
    (
        "an oracle fault before nondeterminism",
        [OK, side("no\n"), REFUSED],
        OK,
        Verdict.ORACLE_ERROR,
        "the engine could not run or inspect the oracle's side: ",
    ),
]


@pytest.mark.parametrize(
    ("rung", "oracles", "delivery", "verdict", "reason"), DECIDE, ids=_row_ids(DECIDE)
)
def test_decide(
    rung: str, oracles: list[Attempt], delivery: Attempt, verdict: Verdict, reason: str
) -> None:
    result = decide(TASK, REF, oracles, delivery)
    assert result.verdict == verdict
    assert result.reason.startswith(reason)
    assert result.verdict.counted == (verdict not in (Verdict.ORACLE_ERROR, NONDET_V))
    first = next((o.run for o in oracles if isinstance(o, SideOutcome)), None)
    assert result.oracle == first
    assert result.delivery == (delivery.run if isinstance(delivery, SideOutcome) else None)
    if isinstance(delivery, SideFault) or any(isinstance(o, SideFault) for o in oracles):
        assert "No such container: abc" in result.reason


def test_faults_and_nondeterminism_come_before_processes_left_running() -> None:
    lingering = side("no\n", left_running=4)
    assert decide(TASK, REF, [OK, side("x\n")], lingering).reason == NONDET
    assert decide(TASK, REF, [REFUSED], lingering).reason.endswith("; not counted")
    assert decide(TASK, REF, [OK], lingering).reason == LEFT


def test_a_fault_is_named_in_at_most_300_characters() -> None:
    long = SideFault(RuntimeError("x" * 1000))
    assert str(long) == ("RuntimeError: " + "x" * 1000)[:300]
    assert str(long) in decide(TASK, REF, [OK], long).reason


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        (OK, side(), True),
        (OK, side("ok \n"), False),  # stricter than EM: the same result, byte for byte
        (OK, side(stderr="e"), False),
        (OK, side(exit_code=1), False),
        (OK, side(changes=[added("f")]), False),
        (side(changes=[added("f")], changes_sha256="d"), side(changes_sha256="d"), True),
        (OK, side(duration_s=9.0, left_running=3), True),  # how long and what lingered: no
    ],
)
def test_oracle_agreement(a: SideOutcome, b: SideOutcome, agree: bool) -> None:
    assert oracle_agrees(a, b) is agree
    assert oracle_agrees(b, a) is agree


def test_same_effects_ignores_the_order_kept() -> None:
    one, two = added("a"), added("b", "c")
    assert same_effects(run(changes=[one, two]), run(changes=[two, one]))
    assert not same_effects(run(changes=[one]), run(changes=[one, two]))


def test_a_build_error_is_every_case_s_verdict() -> None:
    result = build_error_result(TASK, REF, "build exited 2")
    assert (result.verdict, result.reason, result.command) == (
        Verdict.BUILD_ERROR, "build exited 2", "tool x",
    )  # fmt: skip
    assert result.verdict.counted and not result.passed
    assert (result.oracle, result.delivery) == (None, None)


@pytest.mark.parametrize(
    ("kind", "case", "expected"),
    [
        ("command", Case(command="tool -a"), ("tool -a", None)),
        ("command", Case(command="tool", input="line\n"), ("tool", b"line\n")),
        ("command", Case(input={"not": "text"}), ("tool", None)),
        (
            "dispatcher",
            Case(input={"k": "é"}),
            ("tool", json.dumps({"k": "é"}, ensure_ascii=False).encode()),
        ),
        ("dispatcher", Case(command="tool --help"), ("tool --help", None)),
    ],
)
def test_invocation(kind: str, case: Case, expected: tuple[str, bytes | None]) -> None:
    ref = CaseRef(split=Split.PUBLIC, stem="s", index=1, case=case, pattern="p")
    assert invocation(_task(kind), ref) == expected


def test_the_verdict_module_needs_no_engine() -> None:
    # In a fresh interpreter: this one has asyncio loaded already (pytest-asyncio).
    probe = "import sys, icae_tui.evaluation.verdict; print(sorted(LOADED & set(sys.modules)))"
    loaded = "LOADED = {'aiodocker', 'aiohttp', 'asyncio', 'docker'}; "
    out = subprocess.run(
        [sys.executable, "-c", loaded + probe], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_capped_side_does_not_call_paths_past_its_kept_ones_untouched():
    def change(path: str) -> FileChange:
        return FileChange(path=path, change="added", sha256="x")

    # The delivery kept a..c of 900 changes; the oracle kept a, b, d of 3: "d" lies past the
    # delivery's last kept entry, so it is unknown there, not untouched; "c" is a real miss.
    delivery = SideRun(exit_code=0, stdout="", stderr="", changes=[change(p) for p in "abc"],
                       changes_total=900, changes_sha256="one")  # fmt: skip
    oracle = SideRun(exit_code=0, stdout="", stderr="", changes=[change(p) for p in "abd"],
                     changes_sha256="two")  # fmt: skip
    assert effects_reason(oracle, delivery) == "side effects differ: c: added (oracle untouched)"
    oracle = oracle.model_copy(update={"changes": [change(p) for p in "abc"]})
    assert effects_reason(oracle, delivery) == (
        "side effects differ past the 3 kept changes: 900 changes (oracle 3)"
    )


def test_a_failed_prep_line_fails_the_delivery_and_voids_the_oracle() -> None:
    failed = "exit 4: no such command"
    delivery = judge(TASK, REF, OK, side(prep_failed=failed))
    assert delivery.verdict is RE
    assert delivery.reason == f"the case's prep line failed ({failed})"
    oracle = judge(TASK, REF, side(prep_failed=failed), side(prep_failed=failed))
    assert oracle.verdict is Verdict.ORACLE_ERROR
    assert oracle.reason == f"the oracle failed the case's prep line ({failed})"


def test_sanitized_sides_are_compared_as_masked() -> None:
    def masked(stdout: str, text: str) -> SideOutcome:
        return SideOutcome(run(stdout, sanitized=text), stdout.encode(), compared=text)

    same = judge(TASK, REF, masked("at 1\n", "at N\n"), masked("at 2\n", "at N\n"))
    assert same.verdict is AC
    other = judge(TASK, REF, masked("at 1\n", "at N\n"), masked("at 2\n", "was N\n"))
    assert other.verdict is WA
    assert oracle_agrees(masked("1", "N"), masked("2", "N"))
    assert not oracle_agrees(masked("1", "N"), masked("1", "M"))
    # a side the sanitizer did not mask: both compared raw
    assert judge(TASK, REF, masked("at 1\n", "at N\n"), side("at 2\n")).verdict is WA
