"""Cases judged against their stored expected outputs (`[cases] reference = "expected"`), as
ICAE-EVAL judges them: the task model, the rungs of evaluation/expected.py (SideRuns built
by hand, no engine), and a whole run of such a task on the processes backend (root)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from icae_tui.catalog.loader import TaskError, load_task
from icae_tui.domain.events import CasesPlanned, PhaseChanged
from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import LadderMetric, SideRun, Verdict
from icae_tui.domain.states import Phase, RunStatus
from icae_tui.domain.task import Case, CaseRef, Reference, Split, Task, TaskSpec
from icae_tui.evaluation.expected import icae_text, judge_expected
from icae_tui.evaluation.ladder import LADDER
from icae_tui.evaluation.verdict import COMPARE_CAP, SideFault
from icae_tui.results.report import build_report
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from tests.task_copies import copy_mini, edit_toml

SPEC = {
    "id": "stored",
    "title": "stored",
    "language": "sh",
    "interface": {"kind": "dispatcher", "tool": "tool"},
    "delivery": {"entry": "/opt/tool", "build": "true"},
    "cases": {"timeout_s": 3, "reference": "expected"},
}
TASK = Task(spec=TaskSpec.model_validate(SPEC), root="/none", prd={}, user_agent={}, cases=[])


def _ref(expected: str = "a=1\n") -> CaseRef:
    case = Case(input={"op": "x"}, expected_output=expected)
    return CaseRef(split=Split.HIDDEN, stem="f", index=0, case=case, pattern="x")


def _ran(stdout: bytes = b"a=1\n", exit_code: int | None = 0, **kw: object) -> SideOutcome:
    run = SideRun(
        exit_code=exit_code, stdout=stdout.decode(errors="replace"), stderr=str(kw.pop("stderr", "")),
        stdout_bytes=int(kw.pop("stdout_bytes", len(stdout))),
        stdout_sha256=hashlib.sha256(stdout).hexdigest(), **kw,
    )  # type: ignore[arg-type]  # fmt: skip
    return SideOutcome(run, stdout)


def test_a_task_without_an_oracle_must_be_judged_against_its_stored_outputs():
    assert TASK.spec.oracle is None and TASK.spec.cases.reference is Reference.EXPECTED
    oracle_less = {**SPEC, "cases": {"timeout_s": 3}}
    with pytest.raises(ValueError, match=r'no \[oracle\].*reference = "expected"'):
        TaskSpec.model_validate(oracle_less)


def test_the_catalog_names_the_file_of_an_oracle_less_task_judged_by_the_oracle(tmp_path):
    folder = copy_mini(tmp_path)
    edit_toml(folder, '[oracle]\nentry = "python3 /opt/oracle/mini.py"\n', "")
    with pytest.raises(TaskError, match=r"task\.toml: .*no \[oracle\]"):
        load_task(folder)
    edit_toml(folder, "[cases]\n", '[cases]\nreference = "expected"\n')
    assert load_task(folder).spec.oracle is None


def test_icae_reads_output_as_utf8_with_replacement_and_universal_newlines():
    assert icae_text(b"a\r\nb\rc\n") == "a\nb\nc\n"
    assert icae_text(b"\xffx") == "\ufffdx"


@pytest.mark.parametrize(
    ("stdout", "expected", "passed"),
    [
        (b"a=1\n", "a=1\n", True),
        (b"a=1\r\n", "a=1\n", True),  # ICAE reads its files with universal newlines
        (b"a=1", "a=1\n", False),  # no whitespace normalisation: byte for byte as text
        (b"a=1\n\n", "a=1\n", False),
        (b"\xff\n", "\ufffd\n", True),  # an undecodable byte reads as U+FFFD there too
        (b"", "", True),
    ],
)
def test_stdout_is_compared_as_icae_compares_it(stdout, expected, passed):
    result = judge_expected(TASK, _ref(expected), _ran(stdout))
    assert result.passed is passed
    assert result.verdict is (Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER)
    if not passed:
        assert result.reason.startswith("stdout differs from the stored expected output")
    assert result.metrics[LadderMetric.EM] == float(passed)


def test_the_reference_side_is_the_stored_output_and_the_reason_says_so():
    result = judge_expected(TASK, _ref("a=1\n"), _ran(b"a=2\n"))
    assert result.oracle is not None and result.oracle.stdout == "a=1\n"
    assert result.oracle.exit_code == 0 and result.delivery is not None
    assert result.metrics[LadderMetric.EXEC] == result.metrics[LadderMetric.SP] == 1.0
    assert result.reason == "stdout differs from the stored expected output (similarity 0.67)"
    assert 0 < result.metrics[LadderMetric.FM_SCORE] < 1
    assert judge_expected(TASK, _ref(), _ran()).reason == "identical to the stored expected output"


def test_only_stdout_is_compared_and_a_failing_command_is_named_in_the_reason():
    # ICAE's protocol has no exit code: the stored text is the whole reference
    quiet = judge_expected(TASK, _ref("error=bad\n"), _ran(b"error=bad\n", exit_code=2))
    assert quiet.passed and quiet.metrics[LadderMetric.EXEC] == 1.0
    ours = judge_expected(TASK, _ref("a=1\n"), _ran(b"", exit_code=3, stderr="no output\n"))
    assert ours.verdict is Verdict.WRONG_ANSWER and not ours.passed
    assert ours.reason.endswith("; exit code 3; stderr: no output")
    assert ours.metrics[LadderMetric.EM] == 0.0


@pytest.mark.parametrize(
    ("fields", "verdict", "reason"),
    [
        ({"left_running": 2}, Verdict.RUNTIME_ERROR, "left processes running"),
        ({"pids_capped": True}, Verdict.RUNTIME_ERROR, "process limit"),
        ({"box_died": True}, Verdict.RUNTIME_ERROR, "killed its own box"),
        ({"timed_out": True, "exit_code": 124}, Verdict.TIME_LIMIT, "no exit within 3 s"),
        ({"oom_killed": True, "exit_code": 137}, Verdict.MEMORY_LIMIT, "out of memory"),
        ({"disk_full": True}, Verdict.DISK_LIMIT, "disk"),
        ({"overflowed": True}, Verdict.OUTPUT_LIMIT, "MiB of output"),
    ],
)
def test_the_delivery_limits_come_before_the_comparison(fields, verdict, reason):
    exit_code = fields.pop("exit_code", 0)
    result = judge_expected(TASK, _ref(), _ran(exit_code=exit_code, **fields))
    assert result.verdict is verdict and reason in result.reason


def test_a_side_the_engine_could_not_run_counts_against_the_delivery():
    result = judge_expected(TASK, _ref(), SideFault(RuntimeError("gone")))
    assert result.verdict is Verdict.RUNTIME_ERROR and result.verdict.counted
    assert "could not run or inspect" in result.reason and result.delivery is None


def test_output_past_the_compare_cap_matches_only_byte_for_byte():
    big = "x" * (COMPARE_CAP + 10)
    same = _ran(big.encode()[:COMPARE_CAP], stdout_bytes=COMPARE_CAP + 10)
    same.run.stdout_sha256 = hashlib.sha256(big.encode()).hexdigest()
    assert judge_expected(TASK, _ref(big), same).passed
    other = _ran(big.encode()[:COMPARE_CAP], stdout_bytes=COMPARE_CAP + 10)
    assert not judge_expected(TASK, _ref(big), other).passed


def test_the_ladder_scorer_takes_the_stored_reference_for_such_a_task():
    assert LADDER.judge(TASK, _ref(), [], _ran()).reason == "identical to the stored expected output"


@pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")
async def test_a_run_against_stored_outputs_runs_no_oracle_and_says_so(
    tmp_path, store, monkeypatch
):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    folder = copy_mini(tmp_path)
    # no oracle at all: the stored outputs are the reference (the good delivery matches them)
    edit_toml(folder, '[oracle]\nentry = "python3 /opt/oracle/mini.py"\n', "")
    edit_toml(folder, "[cases]\n", '[cases]\nreference = "expected"\n')
    for path in (folder / "oracle").iterdir():
        path.unlink()
    task = load_task(folder)
    # side effects are not compared against stored outputs: the note case passes by stdout
    run = Run(RunConfig(task=task, agent="scripted:good", pace_s=0, engine="processes"), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    assert outcome.score is not None and outcome.score.overall == 1.0
    assert all(r.reason == "identical to the stored expected output" for r in outcome.results)
    events = store.events(run.run_id)
    evaluate = next(e for e in events if isinstance(e, PhaseChanged) and e.phase is Phase.EVALUATE)
    assert evaluate.detail.endswith("cases against their stored expected outputs (no oracle)")
    assert next(e for e in events if isinstance(e, CasesPlanned)).reference is Reference.EXPECTED
    report = json.loads(outcome.report_path.read_text())
    assert report["reference"]["against"] == "expected"
    assert build_report(events)["reference"] == report["reference"]

    partial = Run(RunConfig(task=task, agent="scripted:partial", pace_s=0, engine="processes"), store)
    judged = await partial.execute()
    failed = {r.case_id for r in judged.results if not r.passed}
    # hidden/ops#2 failed by its side effect against the oracle; by stdout it passes here
    assert failed == {"hidden/ops#0", "enhanced/edge#1"}
