"""Untrusted text made safe to show (icae_tui/util/safe_text.py): control characters neutralised,
bytes decoded. One-line excerpts of untrusted output (verdict and build-gate reasons, an
agent's first line, the output diff) end lines at "\\n" only: `str.splitlines()` also ends
one at U+2028, \\x0b, \\x1c…, so a delivery writing `real error\\u2028injected` would have
only "injected" quoted. The separator stays in the line and shows escaped (no Docker)."""

from __future__ import annotations

import hashlib
import io

import pytest

from icae_tui.agents.parsers.shapes import first_line
from icae_tui.display.diff import diff_outputs
from icae_tui.display.plain import PlainPrinter
from icae_tui.domain.events import BuildChecked, CaseFinished
from icae_tui.domain.results import SideRun
from icae_tui.domain.task import Case, CaseRef, Split, Task, TaskSpec
from icae_tui.evaluation.gate import failed_build_reason
from icae_tui.evaluation.verdict import SideOutcome, judge
from icae_tui.util.safe_text import decode, lines, printable

STDERR = "first line\nreal error\u2028injected\n"
SHOWN = "real error\\u2028injected"  # what printable() makes of the whole last line


def _side(stderr: str = "", exit_code: int = 0) -> SideOutcome:
    sha = hashlib.sha256(stderr.encode()).hexdigest()
    run = SideRun(exit_code=exit_code, stdout="ok\n", stderr=stderr, stdout_bytes=3,
                  stderr_bytes=len(stderr.encode()), stdout_sha256="s", stderr_sha256=sha)  # fmt: skip
    return SideOutcome(run, b"ok\n")


def _judged(stderr: str) -> CaseFinished:
    spec = {
        "id": "t", "title": "t", "language": "sh", "interface": {"kind": "command", "tool": "t"},
        "oracle": {"entry": "/t"}, "delivery": {"entry": "/t", "build": "true"},
        "cases": {"timeout_s": 3},
    }  # fmt: skip
    task = Task(spec=TaskSpec.model_validate(spec), root="/none", prd={}, user_agent={}, cases=[])
    ref = CaseRef(split=Split.HIDDEN, stem="h", index=0, case=Case(command="t x"), pattern="p")
    return CaseFinished(result=judge(task, ref, _side(), _side(stderr, exit_code=2)))


@pytest.mark.parametrize(
    ("out", "err", "reason"),
    [
        ("", STDERR, "build failed (exit 2): real error\u2028injected"),
        # stdout when stderr is empty, saying so (issue 38, item 10)
        ("a\nb\x0bc\r\n", "", "build failed (exit 2), no output on stderr: b\x0bc"),
        ("", "make: ***  \n\n", "build failed (exit 2): make: ***"),
        ("", "", "build failed (exit 2): no output"),
    ],
)
def test_the_build_gate_quotes_the_whole_last_line(out, err, reason):
    assert failed_build_reason(2, out, err) == reason


def test_headless_prints_the_whole_line_with_the_separator_escaped():
    out = io.StringIO()
    printer = PlainPrinter(out)
    printer(_judged(STDERR))
    printer(BuildChecked(ok=False, exit_code=2, reason=failed_build_reason(2, "", STDERR)))
    case, build = out.getvalue().split("\n")[:-1]  # one line each
    assert case.endswith(f"exit code 2, oracle 0; stderr: {SHOWN}") and case.startswith("FAIL")
    assert build == f"build FAILED (exit 2): {SHOWN}"  # said once


def test_an_agents_first_line_keeps_what_follows_a_separator():
    assert first_line("\n  real error\u2028injected\nnext") == SHOWN
    assert first_line("  \r\nsecond\x1cline\r\n") == "second\\x1cline"


def test_the_output_diff_shows_a_separator_inside_its_line():
    diff = diff_outputs("a\u2028b\nsame\r\n", "a\u2029b\nsame\r\n")
    assert [(r.oracle, r.delivery) for r in diff.rows] == [
        ("a\\u2028b", "a\\u2029b"),
        ("same", "same"),
    ]


@pytest.mark.parametrize(
    "text", ["", "\n", "a", "a\n", "a\n\n", "a\r\nb\r\n", "\na\n b ", "a\n\r\nb"]
)
def test_lines_are_splitlines_where_only_newlines_end_lines(text):
    assert lines(text) == text.splitlines()


def test_lines_keep_what_splitlines_would_cut():
    text = "x\u2028y\x0bz\x0c\x1c\x1d\x1e\x85\u2029w\rv\n"
    assert lines(text) == [text[:-1]]
    assert printable(lines(text)[0]) == "x\\u2028y\\x0bz\\x0c\\x1c\\x1d\\x1e\\x85\\u2029w\\x0dv"


def test_printable_neutralises_controls():
    hostile = "ok\x1b[2J\x00\r[bold]x[/]\u2028"
    shown = printable(hostile)
    assert "\x1b" not in shown and "\x00" not in shown and "\r" not in shown
    assert "\\x1b[2J" in shown and "[bold]x[/]" in shown
    assert printable("a\nb", keep_newlines=True) == "a\nb"
    assert printable("x" * 50, limit=10).startswith("x" * 10 + "…")
    assert decode(b"\xff\xfeok") == "\ufffd\ufffdok"
