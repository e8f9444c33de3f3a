"""The report's formats (icae_tui/results/report.py render_report / write_report, icae_tui/results/formats/)
on hand-made runs: the format from the suffix, JSON as before, the published schema, and
Markdown, JUnit XML and HTML that stay literal and valid whatever the agent printed."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from icae_tui.domain.events import (
    AgentSubmitted,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    Progress,
    QuestionAnswered,
    QuestionAsked,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score, SideRun, SplitScore, Verdict
from icae_tui.domain.runtimes import RECIPES, version_line
from icae_tui.domain.states import AnsweredBy, ResponderMode, RunStatus
from icae_tui.domain.task import Split
from icae_tui.results.formats.registry import (
    format_for_path,
    format_names,
    report_format,
    report_formats,
)
from icae_tui.results.report import REPORT_SCHEMA, build_report, render_report, write_report

# What a hostile agent or delivery prints: markup of every kind, a NUL, an ANSI escape, what
# XML 1.0 forbids (U+FFFE, a lone surrogate as surrogateescape leaves invalid UTF-8), a URL
HOSTILE = (
    "<script>alert(1)</script><img src=http://evil.example/x.png> **bold** [link](http://e.x)"
    " | pipe | `code` # heading \x00NUL \x1b[31mred\x1b[0m \ufffe \udcff\n"
    "second line &amp; www.evil.example"
)
LONG = "y" * 100_000


def _side(out: str, code: int = 0) -> SideRun:
    return SideRun(exit_code=code, stdout=out, stderr=out[:50], duration_s=0.25)


def _case(case_id: str, split: Split, pattern: str, verdict: Verdict, *, out: str = "ok\n"):
    passed = verdict == Verdict.ACCEPTED
    return CaseResult(
        case_id=case_id, split=split, pattern=pattern, command=f"tool {out[:40]}",
        verdict=verdict, reason="identical" if passed else f"stdout differs: {out}",
        metrics={"exec": 1.0, "sp": 1.0, "em": float(passed), "fm": float(passed)},
        passed=passed, oracle=_side("ok\n"), delivery=_side(out, 0 if passed else 1),
    )  # fmt: skip


# Two patterns of uneven size: `a` 1 of 3 hidden + enhanced passed, `b` 1 of 1; an oracle
# error that counts nowhere; public 2 of 2 (a hostile pattern name among them).
CASES = [
    _case("public/a#0", Split.PUBLIC, "a", Verdict.ACCEPTED),
    _case("public/x#0", Split.PUBLIC, HOSTILE, Verdict.ACCEPTED),
    _case("hidden/a#0", Split.HIDDEN, "a", Verdict.ACCEPTED),
    _case("hidden/a#1", Split.HIDDEN, "a", Verdict.WRONG_ANSWER, out=HOSTILE),
    _case("hidden/b#0", Split.HIDDEN, "b", Verdict.ACCEPTED),
    _case("enhanced/a#0", Split.ENHANCED, "a", Verdict.RUNTIME_ERROR, out=LONG),
    _case("enhanced/b#1", Split.ENHANCED, "b", Verdict.ORACLE_ERROR),
]
T0 = 1_800_000_000.0


def _events():
    score = Score(
        done=7, planned=7, overall=0.5, macro=0.6667,
        by_split={Split.PUBLIC: SplitScore(total=2, passed=2, macro=1.0),
                  Split.HIDDEN: SplitScore(total=3, passed=2, macro=0.75),
                  Split.ENHANCED: SplitScore(total=1, passed=0, macro=0.0)},
        rates={"exec": 1.0, "sp": 1.0, "em": 0.5, "fm": 0.5}, public_minus_hidden=0.3333,
    )  # fmt: skip
    return [
        RunStarted(ts=T0, run_id="r1", task_id="t", task_title="T", agent="scripted:hostile",
                   level="L1", responder=ResponderMode.SIMULATED, budget=4, prd="p"),
        QuestionAsked(ts=T0 + 2, question_id=1, text=HOSTILE, remaining_before=4),
        QuestionAnswered(ts=T0 + 3, question_id=1, text="answer " + HOSTILE,
                         record_ids=["C001"], responder=AnsweredBy.SIMULATED),
        QuestionAsked(ts=T0 + 5, question_id=2, text="and " + LONG, remaining_before=3),
        QuestionAnswered(ts=T0 + 8, question_id=2, text="human says", fallback=True,
                         responder=AnsweredBy.HUMAN),
        QuestionAsked(ts=T0 + 9, question_id=3, text="never answered?", remaining_before=2),
        AgentSubmitted(ts=T0 + 10, message="All done, every test passes! " + HOSTILE),
        BuildChecked(ts=T0 + 11, ok=True, exit_code=0, reason="build passed"),
        CasesPlanned(ts=T0 + 12, case_ids=[c.case_id for c in CASES]),
        *(CaseFinished(ts=T0 + 13, result=c) for c in CASES),
        ScoreUpdated(ts=T0 + 19, score=score),
        RunFinished(ts=T0 + 20, status=RunStatus.COMPLETED, score=score),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def events():
    return _events()


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("r.json", "json"), ("r.md", "md"), ("r.MARKDOWN", "md"), ("r.xml", "xml"),
     ("r.html", "html"), ("r.htm", "html"), ("report", "json"), ("r.txt", "json")],
)  # fmt: skip
def test_the_format_comes_from_the_suffix_json_when_it_names_none(name, fmt):
    assert format_for_path(Path(name)) is report_format(fmt)


def test_the_formats_come_from_the_registry_in_order():
    assert [f.suffix for f in report_formats()] == ["json", "md", "xml", "html"]
    assert format_names() == ["json", "md", "markdown", "junit", "xml", "html"]
    assert report_format("junit") is report_format("xml")
    with pytest.raises(ValueError):
        report_format("pdf")


def test_a_json_report_is_written_as_before(events, tmp_path):
    clean = [e for e in events if not isinstance(e, QuestionAsked | QuestionAnswered | CaseFinished | AgentSubmitted)]
    path = write_report(clean, tmp_path / "sub" / "report.json")
    expected = json.dumps(build_report(clean), indent=2, ensure_ascii=False)
    assert path.read_text(encoding="utf-8") == expected == render_report(clean, "json")
    # a lone surrogate (invalid UTF-8 read with surrogateescape) is a JSON escape: the file
    # is UTF-8 and reads back as the report
    path = write_report(events, tmp_path / "report.json")
    assert "\\udcff" in path.read_text(encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == build_report(events)


def test_each_format_is_written_by_its_suffix_or_as_told(events, tmp_path):
    for fmt in report_formats():
        body = render_report(events, fmt)
        assert isinstance(body, bytes if fmt.suffix == "xml" else str)
        by_suffix = write_report(events, tmp_path / f"r.{fmt.suffix}")
        told = write_report(events, tmp_path / f"told-{fmt.suffix}.out", fmt)
        raw = body if isinstance(body, bytes) else body.encode()
        assert by_suffix.read_bytes() == told.read_bytes() == raw


def test_the_schema_is_published_and_holds_the_hand_made_report(events):
    schema = json.loads(REPORT_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    report = build_report(events)
    jsonschema.validate(report, schema)
    assert report["turns"][0]["asked_at"] == T0 + 2 and report["turns"][0]["answered_at"] == T0 + 3
    broken = json.loads(json.dumps(report))
    broken["cases"][0]["verdict"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**report, "version": 2}, schema)


def _no_raw_hostile(text: str) -> None:
    for raw in ("<script", "<img", "\x00", "\x1b", "\ufffe", "\udcff", "\r"):
        assert raw not in text, repr(raw)


def test_markdown_figures_say_what_they_are_over_and_the_agent_stays_literal(events):
    md = render_report(events, "md")
    assert isinstance(md, str)
    # the hostile pattern name is a code span (literal in Markdown); everywhere else the
    # hostile text is escaped
    spans = re.findall(r"``.+?``", md)
    assert spans
    outside = re.sub(r"``.+?``", "", md)
    _no_raw_hostile(outside)
    for raw in ("\x00", "\x1b", "\ufffe", "\udcff"):
        assert raw not in md
    assert "http://" not in outside and "www.evil" not in outside  # no bare URL: no link
    assert "\\*\\*bold\\*\\*" in md and "\\[link\\]" in md and "\\`code\\`" in md
    assert "\\x00NUL" in md and "\\x1b" in md  # controls shown, not sent
    assert max(len(line) for line in md.splitlines()) < 3000  # 100 000 characters were sent
    # every data row of every table has its header's number of cells (pipes are escaped)
    for table in re.findall(r"((?:^\|.*\|$\n?)+)", md, re.M):
        rows = table.strip().splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows
    # the hand count: overall over hidden + enhanced, the oracle error counted nowhere
    assert "| **Overall** (ICAE-Bench) | **50.0 %** | 2 / 4 counted hidden + enhanced" in md
    # macro: pattern a 1 of 3, pattern b 1 of 1 -> (33.3 + 100) / 2, over 2 patterns
    assert "| **Macro** (CLI-Tool-Bench) | **66.7 %** | mean of the pass rates of 2 command" in md
    assert "| Public | 100.0 % | 2 / 2 public cases" in md
    assert "| Public − hidden gap | +33.3 pp |" in md  # 2/2 - 2/3
    assert "| `a` | 1 / 1 | 1 / 2 | 0 / 1 | 33.3 % |" in md
    assert "| `b` | — | 1 / 1 | — | 100.0 % |" in md  # its oracle error is not a case of b's
    assert "| accepted | 4 | 57.1 % |" in md and "| oracle\\_error | 1 | 14.3 % |" in md
    assert "3 questions asked, 2 answered." in md
    assert "| 2 | 5.0 s | and yyy" in md and "| human | human says | fallback |" in md
    assert "| 3 | 9.0 s | never answered? | (no answer) |" in md
    assert "2 of 7 judged cases failed (all tiers):" in md
    assert "- `enhanced/b#1`: oracle\\_error" in md  # apart, not held against the agent


def test_junit_is_valid_xml_one_suite_per_split_whatever_the_delivery_printed(events):
    body = render_report(events, "xml")
    assert isinstance(body, bytes) and body.startswith(b"<?xml")
    body.decode("utf-8")  # strict
    root = ET.fromstring(body)
    assert root.tag == "testsuites" and root.get("tests") == "7"
    assert root.get("failures") == "2" and root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["t.public", "t.hidden", "t.enhanced"]
    assert [len(s.findall("testcase")) for s in suites.values()] == [2, 3, 2]
    failed = {
        tc.get("name"): tc.find("failure") for tc in root.iter("testcase")
        if tc.find("failure") is not None
    }  # fmt: skip
    assert set(failed) == {"hidden/a#1", "enhanced/a#0"}
    assert failed["hidden/a#1"].get("type") == "wrong_answer"
    assert failed["hidden/a#1"].get("message").startswith("wrong_answer: stdout differs")
    assert failed["enhanced/a#0"].get("type") == "runtime_error"
    skipped = [tc.get("name") for tc in root.iter("testcase") if tc.find("skipped") is not None]
    assert skipped == ["enhanced/b#1"]
    text = body.decode()
    assert "\\x00NUL" in text and "\\x1b[31m" in text and "\\ufffe" in text
    assert len(body) < 60_000  # the 100 000-character output is bounded


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_one_self_contained_page_with_four_charts_and_the_agent_escaped(events):
    page = render_report(events, "html")
    assert isinstance(page, str)
    _no_raw_hostile(page)
    parsed = _Page()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "link" not in parsed.tags
    assert not [a for a in parsed.attrs if a[0] in ("src", "href")]  # nothing fetched
    assert parsed.tags.count("svg") == 4
    text = "".join(parsed.text)
    assert "<script>alert(1)</script>" in text  # shown as text, literally
    assert "50.0 %" in text and "2 / 4 counted hidden + enhanced cases passed" in text
    assert "66.7 %" in text and "+33.3 pp" in text
    # the timeline: three questions asked, two answered (one by a human, one simulated)
    assert page.count('class="asked"') == 3 and page.count('class="answered"') == 2
    assert max(len(line) for line in page.splitlines()) < 200_000
    assert "y" * 1000 not in page  # the long output is bounded


def test_a_run_that_never_built_says_so_and_has_no_figures():
    events = [
        RunStarted(ts=T0, task_id="t", task_title="T", agent="a", level="L1",
                   responder=ResponderMode.SIMULATED, budget=1, prd="p"),
        RunFinished(ts=T0 + 1, status=RunStatus.FAILED, error="engine gone"),
    ]  # fmt: skip
    md = render_report(events, "md")
    assert "failed — engine gone" in md and "not reached" in md
    assert "| **Overall** (ICAE-Bench) | **—** | 0 / 0 counted" in md  # unknown, not 0
    page = render_report(events, "html")
    assert isinstance(page, str) and "no question asked" in page
    root = ET.fromstring(render_report(events, "xml"))
    assert root.get("tests") == "0"
    jsonschema.validate(build_report(events), json.loads(REPORT_SCHEMA.read_text()))


def test_the_tasks_language_version_is_stated_where_the_image_build_said_it():
    """The image build's `runtime version:` line (a progress event, even one before the run
    started) is the report's `run.runtime`, stated in Markdown and HTML; with none, nothing."""
    line = version_line("icae-base:trixie", RECIPES["ruby"], "3.3.8")
    events = [
        Progress(ts=T0, message="building icae-agent-t:abc"),
        Progress(ts=T0, message=line),
        RunStarted(ts=T0, task_id="t", task_title="T", agent="a", level="L1",
                   responder=ResponderMode.SIMULATED, budget=1, prd="p"),
        RunFinished(ts=T0 + 1, status=RunStatus.COMPLETED),
    ]  # fmt: skip
    report = build_report(events)
    assert report["run"]["runtime"] == {"name": "ruby", "version": "3.3.8"}
    assert report["run"]["task"] == "t"
    jsonschema.validate(report, json.loads(REPORT_SCHEMA.read_text()))
    md = render_report(events, "md")
    assert isinstance(md, str) and "- **Task** `t`, level L1 on ruby 3.3.8; **agent**" in md
    page = render_report(events, "html")
    assert isinstance(page, str) and "Level L1 · on ruby 3.3.8 · questions" in page
    unsaid = render_report(events[2:], "md")
    assert isinstance(unsaid, str) and "- **Task** `t`, level L1; **agent**" in unsaid
