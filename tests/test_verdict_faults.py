"""Verdicts for faulty cases, without an engine: processes left running, engine refusals."""

from __future__ import annotations

import hashlib
import io

import aiodocker
import pytest

from icae_tui.display.plain import PlainPrinter
from icae_tui.domain.events import AgentCommandDone
from icae_tui.domain.results import SideRun, Verdict
from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.differential import EngineLost
from icae_tui.evaluation.verdict import SideFault, SideOutcome, fault_result, judge
from icae_tui.runs.run import _explain_failure

TASK = Task(
    spec=TaskSpec.model_validate(
        {
            "id": "faults",
            "title": "faults",
            "language": "sh",
            "interface": {"kind": "command", "tool": "tool"},
            "oracle": {"entry": "/opt/tool"},
            "delivery": {"entry": "/opt/tool", "build": "true"},
            "cases": {"timeout_s": 3},
        }
    ),
    root="/nonexistent",
    prd={},
    user_agent={},
    cases=[],
)
REF = CaseRef(split=Split.HIDDEN, stem="h", index=0, case=Case(command="tool x"), pattern="p")


def side(stdout: str = "ok\n", exit_code: int | None = 0, **kw: object) -> SideOutcome:
    run = SideRun(
        exit_code=exit_code,
        stdout=stdout,
        stderr="",
        stdout_bytes=len(stdout.encode()),
        stdout_sha256=hashlib.sha256(stdout.encode()).hexdigest(),
        stderr_sha256=hashlib.sha256(b"").hexdigest(),
        **kw,  # type: ignore[arg-type]
    )
    return SideOutcome(run, stdout.encode())


LEFT = "left processes running after its command ended"
RE, ML = Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT

# (what the delivery did, the oracle's run, verdict, reason): processes left running are the
# delivery's fault whatever else it did, before the pids limit, time and memory; only the
# oracle's own failure comes first
TABLE = [
    (side(left_running=3), side(), RE, LEFT),
    (side(), side(), Verdict.ACCEPTED, "identical"),
    (side("no\n", left_running=3), side(), RE, LEFT),
    (side(exit_code=1, left_running=3), side(), RE, LEFT),
    (side(timed_out=True, exit_code=124, left_running=3), side(), RE, LEFT + ", no exit"),
    (side(pids_capped=True, left_running=3), side(), RE, LEFT),
    (side(oom_killed=True, left_running=3), side(), RE, LEFT),
    (side(left_running=3), side(timed_out=True), Verdict.ORACLE_ERROR, "the oracle timed out"),
    (side(left_running=3), side(left_running=1), Verdict.ACCEPTED, "identical"),
]


@pytest.mark.parametrize(("delivery", "oracle", "verdict", "reason"), TABLE)
def test_processes_left_running_are_the_deliverys_fault(
    delivery: SideOutcome, oracle: SideOutcome, verdict: Verdict, reason: str
) -> None:
    result = judge(TASK, REF, oracle, delivery)
    assert result.verdict == verdict
    assert result.reason.startswith(reason)
    assert "3 process" not in result.reason  # how many is in the record, never in the reason
    assert result.passed == (verdict == Verdict.ACCEPTED)


REFUSED = SideFault(aiodocker.DockerError(404, {"message": "No such container: abc"}))


@pytest.mark.parametrize(
    ("oracles", "delivery", "verdict"),
    [
        ([side()], REFUSED, Verdict.RUNTIME_ERROR),
        # both sides refused: still the delivery's, so an agent cannot make its failing cases
        # uncounted by breaking the engine for everything that runs beside them
        ([REFUSED], REFUSED, Verdict.RUNTIME_ERROR),
        ([side(), REFUSED], REFUSED, Verdict.RUNTIME_ERROR),
        ([REFUSED], side(), Verdict.ORACLE_ERROR),
        ([side(), REFUSED], side(), Verdict.ORACLE_ERROR),
    ],
)
def test_a_side_the_engine_refused_twice(
    oracles: list[SideOutcome | SideFault],
    delivery: SideOutcome | SideFault,
    verdict: Verdict,
) -> None:
    result = fault_result(TASK, REF, oracles, delivery)
    assert result.verdict == verdict
    assert result.verdict.counted == (verdict == Verdict.RUNTIME_ERROR)
    assert "the engine could not run or inspect" in result.reason
    assert "No such container" in result.reason
    assert not result.passed
    if isinstance(delivery, SideOutcome):
        assert result.delivery == delivery.run


async def test_a_lost_engine_is_one_line_naming_the_phase() -> None:
    lost = EngineLost("Docker engine at unix:///x is not answering")
    message = await _explain_failure(lost, "evaluate", None)
    assert message.startswith("Docker engine lost during evaluate; start it again")
    assert "unix:///x" in message


@pytest.mark.parametrize(
    ("done", "shown"),
    [
        (AgentCommandDone(command="x", exit_code=0, duration_s=1), "   exit 0 in 1.00s"),
        (
            AgentCommandDone(
                command="x",
                exit_code=0,
                duration_s=1,
                pids_capped=True,
                left_running=254,
                killed_left=True,
            ),  # fmt: skip
            "   exit 0 in 1.00s (hit the process limit (fork bomb?) · "
            "left 254 process(es) running, killed)",
        ),
        (
            AgentCommandDone(command="x", exit_code=0, duration_s=1, left_running=1),
            "   exit 0 in 1.00s (left 1 process(es) running)",
        ),
        (
            AgentCommandDone(command="x", exit_code=None, duration_s=1, timed_out=True),
            "   exit None in 1.00s (timed out)",
        ),
    ],
)
def test_the_trace_says_what_an_agent_command_left_behind(
    done: AgentCommandDone, shown: str
) -> None:
    printed = io.StringIO()
    PlainPrinter(printed)(done)
    assert printed.getvalue() == shown + "\n"
