"""The reports of real runs: the bundled task `semver` (tasks/semver) built by its scripted
`good`, `partial` and `broken` solutions on the `processes` backend (no engine; root for its
mounts, as tests/test_run_without_engine.py), and the recordings shipped with the bundled
tasks (real engine runs). Their JSON holds to the published schema; their Markdown, HTML and
JUnit figures match a hand count written here from the task's case files."""

from __future__ import annotations

import asyncio
import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from icae_tui.catalog import recordings
from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.states import RunStatus
from icae_tui.results.formats.summary import summarise
from icae_tui.results.report import REPORT_SCHEMA, build_report, render_report
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore

ROOT = Path(__file__).resolve().parent.parent
SEMVER = ROOT / "tasks" / "semver"

# The hand count, from tasks/semver/cases/*/*.json (a case's pattern is its `op`, or the file
# stem when it has none): pattern -> cases in (public, hidden, enhanced).
CASES = {
    "bump": (2, 11, 1),  # hidden/bump.json 11; enhanced/boundaries.json 1
    "compare": (1, 7, 1),
    "max_satisfying": (1, 5, 0),
    "parse": (2, 7, 3),  # boundaries.json: 3 parses
    "satisfies": (2, 10, 2),
    "sort": (1, 6, 1),
    "malformed": (0, 0, 7),  # enhanced/malformed.json: op "malformed" or none (its stem)
}
# `partial` (its description: it guesses the v prefix, pre-release bumps and pre-release
# range matching, and gets them wrong) fails exactly these hidden cases, by index in their
# file — read off each case's input and expected output:
PARTIAL_FAILS = {
    "bump": [1, 2, 4, 5, 10],  # #1 #2 #4 bump a pre-release, #5 part=prerelease, #10 v1.2.3
    "compare": [4],  # v1.2.3 vs 1.2.3
    "max_satisfying": [1],  # 1.3.0-rc.1 must not satisfy ^1.2.0
    "parse": [2],  # v2.0.0-rc.2
    "satisfies": [5, 6, 7, 8],  # #5 #6 #7 pre-releases outside their tuple; #8 v1.2.3
    "sort": [2],  # v2.0.0 among the versions
}
# and every public and enhanced case passes (none has a v prefix or a pre-release rule).


def _tally(passed_hidden: dict[str, int] | None) -> dict[str, tuple[int, int, int]]:
    """Passed per pattern and tier: every case, or the hidden ones less `partial`'s fails."""
    if passed_hidden is None:
        return CASES
    return {p: (pub, hid - passed_hidden.get(p, 0), enh) for p, (pub, hid, enh) in CASES.items()}


FAILS = {p: len(ix) for p, ix in PARTIAL_FAILS.items()}
EXPECTED = {
    "good": _tally(None),
    "partial": _tally(FAILS),
    "broken": {p: (0, 0, 0) for p in CASES},  # its semver.py does not compile: no case passes
}


def test_the_hand_count_is_the_case_files():
    counted: dict[str, list[int]] = {p: [0, 0, 0] for p in CASES}
    for i, split in enumerate(("public", "hidden", "enhanced")):
        for path in sorted((SEMVER / "cases" / split).glob("*.json")):
            for case in json.loads(path.read_text())["cases"]:
                given = case["input"]  # an object, or raw stdin text (malformed.json)
                op = given.get("op") if isinstance(given, dict) else None
                pattern = case.get("pattern") or op or path.stem
                counted[pattern][i] += 1
    assert {p: tuple(v) for p, v in counted.items()} == CASES
    hidden = SEMVER / "cases" / "hidden"
    for pattern, indexes in PARTIAL_FAILS.items():
        cases = json.loads((hidden / f"{pattern}.json").read_text())["cases"]
        for i in indexes:
            text = json.dumps(cases[i]["input"])
            assert '"v' in text or "-" in text, (pattern, i)  # a v prefix or a pre-release


def _pct(passed: int, total: int) -> str:
    return "—" if not total else f"{100 * passed / total:.1f} %"


def _figures(agent: str) -> dict[str, str]:
    """The headline figures for `agent`'s run, from the hand count alone."""
    passed, total = EXPECTED[agent], CASES
    scored_p = sum(h + e for _, h, e in passed.values())
    scored_t = sum(h + e for _, h, e in total.values())
    rates = [(passed[p][1] + passed[p][2]) / (t[1] + t[2]) for p, t in total.items() if t[1] + t[2]]
    pub_p, pub_t = sum(v[0] for v in passed.values()), sum(v[0] for v in total.values())
    hid_p, hid_t = sum(v[1] for v in passed.values()), sum(v[1] for v in total.values())
    gap = 100 * (pub_p / pub_t - hid_p / hid_t)
    return {
        "overall": _pct(scored_p, scored_t),
        "overall_over": f"{scored_p} / {scored_t} counted hidden + enhanced cases passed",
        "macro": f"{100 * sum(rates) / len(rates):.1f} %",
        "patterns": str(len(rates)),
        "public": _pct(pub_p, pub_t),
        "public_over": f"{pub_p} / {pub_t} public cases passed",
        "gap": f"{gap:+.1f} pp",
        "failing": str(scored_t + pub_t - scored_p - pub_p),
    }


def test_the_hand_count_gives_the_headlines_for_each_solution():
    # written out once, so the figures below are checked against numbers, not only a formula
    assert _figures("good")["overall"] == "100.0 %" and _figures("good")["gap"] == "+0.0 pp"
    partial = _figures("partial")
    assert partial["overall_over"] == "48 / 61 counted hidden + enhanced cases passed"
    assert partial["overall"] == "78.7 %" and partial["macro"] == "81.2 %"
    assert partial["public"] == "100.0 %" and partial["gap"] == "+28.3 pp"  # 9/9 - 33/46
    assert partial["failing"] == "13"
    broken = _figures("broken")
    assert broken["overall"] == "0.0 %" and broken["failing"] == "70"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """semver's good, partial and broken runs: their stored events, by agent."""
    if os.geteuid() != 0:
        pytest.skip("the processes backend mounts")
    task = load_catalog(ROOT / "tasks").tasks["semver"]
    store = RunStore(tmp_path_factory.mktemp("runs") / "runs.db")
    before = os.environ.get(registry.UNSAFE_VAR)
    os.environ[registry.UNSAFE_VAR] = "1"
    out = {}
    try:
        for agent in EXPECTED:
            run = Run(RunConfig(task=task, agent=f"scripted:{agent}", pace_s=0,
                                engine="processes"), store)  # fmt: skip
            outcome = asyncio.run(run.execute())
            assert outcome.status == RunStatus.COMPLETED, outcome.error
            out[agent] = store.events(run.run_id)
    finally:
        if before is None:
            os.environ.pop(registry.UNSAFE_VAR, None)
        else:
            os.environ[registry.UNSAFE_VAR] = before
        store.close()
    return out


AGENTS = list(EXPECTED)


def _schema():
    return json.loads(REPORT_SCHEMA.read_text())


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_runs_json_report_holds_to_the_schema(runs, agent):
    report = json.loads(render_report(runs[agent], "json"))
    jsonschema.validate(report, _schema())


def test_the_bundled_recordings_reports_hold_to_the_schema():
    paths = sorted((ROOT / "tasks").glob("*/recordings/*.jsonl"))
    assert paths
    for path in paths:
        jsonschema.validate(build_report(recordings.load(path)), _schema())


def _agrees_with_the_stored_score(report) -> None:
    """The reports count their figures from the case results; the run's own score (the
    ladder's) must come to the same."""
    s, score = summarise(report), report["score"]
    assert round(s.overall.rate or 0.0, 4) == score["overall"]
    assert round(s.macro or 0.0, 4) == score["macro"]
    assert (s.gap is None) == (score["public_minus_hidden"] is None)
    if s.gap is not None:
        assert round(s.gap, 4) == score["public_minus_hidden"]


def test_the_reports_figures_are_the_runs_score_for_the_recordings():
    for path in sorted((ROOT / "tasks").glob("*/recordings/*.jsonl")):
        _agrees_with_the_stored_score(build_report(recordings.load(path)))


@pytest.mark.parametrize("agent", AGENTS)
def test_the_reports_figures_are_the_runs_score(runs, agent):
    _agrees_with_the_stored_score(build_report(runs[agent]))


@pytest.mark.parametrize("agent", AGENTS)
def test_markdown_numbers_match_the_hand_count(runs, agent):
    md = render_report(runs[agent], "md")
    assert isinstance(md, str)
    f = _figures(agent)
    assert f"| **Overall** (ICAE-Bench) | **{f['overall']}** | {f['overall_over']} |" in md
    assert (f"| **Macro** (CLI-Tool-Bench) | **{f['macro']}** | mean of the pass rates of "
            f"{f['patterns']} command patterns") in md  # fmt: skip
    assert f"| Public | {f['public']} | {f['public_over']}" in md
    assert f"| Public − hidden gap | {f['gap']} |" in md
    for pattern, (pub, hid, enh) in CASES.items():
        got = EXPECTED[agent][pattern]
        cells = [f"{got[i]} / {n}" if n else "—" for i, n in enumerate((pub, hid, enh))]
        rate = _pct(got[1] + got[2], hid + enh)
        assert f"| `{pattern}` | {' | '.join(cells)} | {rate} |" in md, pattern
    for tier, i in (("public", 0), ("hidden", 1), ("enhanced", 2)):
        p, t = sum(v[i] for v in EXPECTED[agent].values()), sum(v[i] for v in CASES.values())
        assert f"| {tier} | {p} / {t} | {_pct(p, t)} |" in md
    assert f"{f['failing']} of 70 judged cases failed (all tiers)" in md
    failing = set(re.findall(r"^\| `((?:public|hidden|enhanced)/[a-z_]+#\d+)` \|", md, re.M))
    if agent == "partial":
        assert failing == {f"hidden/{p}#{i}" for p, ix in PARTIAL_FAILS.items() for i in ix}
        assert "| accepted | 57 | 81.4 % |" in md and "| wrong\\_answer | 13 | 18.6 % |" in md
        assert "Result: **passed**" in md
        # partial asks 8 questions (its solution file), answered by the simulated user
        assert "8 questions asked, 8 answered." in md
        assert len(re.findall(r"^\| \d+ \| [\d.]+ s \| .* \| simulated \|", md, re.M)) == 8
    elif agent == "broken":
        assert len(failing) == 70 and "| build\\_error | 70 | 100.0 % |" in md
        assert "Result: **failed**" in md
        assert "1 question asked, 1 answered." in md  # its one question (solution file)
    else:
        assert not failing and "| accepted | 70 | 100.0 % |" in md


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.svgs = 0

    def handle_starttag(self, tag, attrs):
        self.svgs += tag == "svg"

    def handle_data(self, data):
        self.parts.append(data)


@pytest.mark.parametrize("agent", AGENTS)
def test_html_numbers_match_the_hand_count(runs, agent):
    page = render_report(runs[agent], "html")
    assert isinstance(page, str)
    parsed = _Text()
    parsed.feed(page)
    text = " ".join(parsed.parts)
    f = _figures(agent)
    for key in ("overall", "overall_over", "macro", "public", "public_over", "gap"):
        assert f[key] in text, key
    assert parsed.svgs == 4
    # each pattern's bar is labelled with its hand-counted passed / cases over hidden + enhanced
    for pattern, (_, hid, enh) in CASES.items():
        got = EXPECTED[agent][pattern]
        assert f"{got[1] + got[2]} / {hid + enh} · {_pct(got[1] + got[2], hid + enh)}" in text
    assert f"{f['failing']} of 70 judged cases failed (all tiers)." in text
    asked = {"good": 12, "partial": 8, "broken": 1}[agent]  # the ask steps of its solution
    assert page.count('class="asked"') == asked


@pytest.mark.parametrize("agent", AGENTS)
def test_junit_counts_match_the_hand_count(runs, agent):
    root = ET.fromstring(render_report(runs[agent], "xml"))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    for i, tier in enumerate(("public", "hidden", "enhanced")):
        suite = suites[f"semver.{tier}"]
        total = sum(v[i] for v in CASES.values())
        passed = sum(v[i] for v in EXPECTED[agent].values())
        assert suite.get("tests") == str(total) == str(len(suite.findall("testcase")))
        assert suite.get("failures") == str(total - passed)
