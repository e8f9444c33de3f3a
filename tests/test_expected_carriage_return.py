"""A stored expected output holding a carriage return, judged as ICAE-EVAL judges it: ICAE
reads the delivery's output file with universal newlines (`\\r\\n` and `\\r` become `\\n`)
and compares that with the stored string untouched, so no output ever equals a stored `\\r`
— not even the very same bytes (issue 38, item 11). SideRuns built by hand, no engine."""

from __future__ import annotations

import hashlib

import pytest

from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import LadderMetric, SideRun, Verdict
from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.expected import icae_text, judge_expected

SPEC = {
    "id": "cr",
    "title": "cr",
    "language": "sh",
    "interface": {"kind": "dispatcher", "tool": "tool"},
    "delivery": {"entry": "/opt/tool", "build": "true"},
    "cases": {"timeout_s": 3, "reference": "expected"},
}
TASK = Task(spec=TaskSpec.model_validate(SPEC), root="/none", prd={}, user_agent={}, cases=[])


def _ref(expected: str) -> CaseRef:
    case = Case(input={"op": "x"}, expected_output=expected)
    return CaseRef(split=Split.HIDDEN, stem="f", index=0, case=case, pattern="x")


def _ran(stdout: bytes) -> SideOutcome:
    run = SideRun(exit_code=0, stdout=stdout.decode(errors="replace"), stderr="",
                  stdout_bytes=len(stdout), stdout_sha256=hashlib.sha256(stdout).hexdigest())  # fmt: skip
    return SideOutcome(run, stdout)


def _icae_verdict(stdout: bytes, expected: str) -> bool:
    """ICAE-EVAL's own comparison, modelled: the file read as text, equal to the string."""
    return icae_text(stdout) == expected


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        (b"a=1\r\nb=2\r\n", "a=1\r\nb=2\r\n"),  # the same bytes: ICAE reads "a=1\nb=2\n"
        (b"progress\rdone\n", "progress\rdone\n"),  # a lone \r
        (b"a=1\nb=2\n", "a=1\r\nb=2\r\n"),  # what ICAE reads is not the stored string either
    ],
)
def test_a_stored_carriage_return_fails_as_it_does_in_icae(stdout, expected):
    result = judge_expected(TASK, _ref(expected), _ran(stdout))
    assert result.passed is _icae_verdict(stdout, expected) is False
    assert result.verdict is Verdict.WRONG_ANSWER
    assert result.metrics[LadderMetric.EM] == 0.0
    assert result.reason.startswith("stdout differs from the stored expected output")
    assert "carriage return" in result.reason


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        (b"a=1\r\nb=2\r\n", "a=1\nb=2\n"),  # translated on read: passes there, passes here
        (b"a\rb\n", "a\nb\n"),
        (b"a=1\n", "a=1\n"),
    ],
)
def test_output_with_carriage_returns_passes_when_icaes_read_matches(stdout, expected):
    result = judge_expected(TASK, _ref(expected), _ran(stdout))
    assert result.passed is _icae_verdict(stdout, expected) is True
    assert result.verdict is Verdict.ACCEPTED and "carriage return" not in result.reason
