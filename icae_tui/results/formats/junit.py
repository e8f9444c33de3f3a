"""The report as JUnit XML for CI systems: one <testsuite> per split (public, hidden,
enhanced), one <testcase> per case. A failed case is a <failure> whose type is its verdict
and whose message is its reason; a case the oracle itself failed is <skipped> (it is held
against no one). A failed build needs nothing of its own: every case then carries the
build_error verdict, so each is a failure naming the build's reason.

Everything from the run passes through reports/text.py first: NULs, ANSI escapes and other
characters XML 1.0 forbids become visible escapes, so the file parses whatever the delivery
printed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from icae_tui.results.formats.registry import ReportFormat, register_format
from icae_tui.results.formats.summary import SPLITS, UNCOUNTED, percent, summarise
from icae_tui.results.formats.text import xml, xml_line

OUTPUT_LIMIT = 2000  # characters of each side's stdout / stderr in a failure's system-out


def _seconds(case: dict[str, Any]) -> str:
    side = case.get("delivery") or {}
    return f"{float(side.get('duration_s', 0.0)):.3f}"


def _side_text(case: dict[str, Any]) -> str:
    parts = []
    for role in ("delivery", "oracle"):
        side = case.get(role)
        if not side:
            continue
        parts.append(f"--- {role}: exit code {side.get('exit_code')}")
        for stream in ("stdout", "stderr"):
            if side.get(stream):
                parts.append(f"[{stream}]\n{xml(side[stream], OUTPUT_LIMIT)}")
    return "\n".join(parts)


def _testcase(suite: ET.Element, task: str, case: dict[str, Any]) -> tuple[bool, bool]:
    """Append the case; returns (failed, skipped)."""
    el = ET.SubElement(suite, "testcase", {
        "classname": xml_line(f"{task}.{case['split']}.{case['pattern']}"),
        "name": xml_line(case["case_id"]),
        "time": _seconds(case),
    })  # fmt: skip
    if case["passed"]:
        return False, False
    verdict, reason = str(case["verdict"]), xml_line(case["reason"])
    if verdict in UNCOUNTED:
        ET.SubElement(el, "skipped", {"message": f"{verdict}: {reason} (the oracle's failure)"})
        return False, True
    failure = ET.SubElement(el, "failure", {"type": verdict, "message": f"{verdict}: {reason}"})
    failure.text = (
        f"verdict: {verdict}\nreason: {xml(case['reason'])}\ncommand: {xml(case['command'])}"
    )
    out = _side_text(case)
    if out:
        ET.SubElement(el, "system-out").text = out
    return True, False


def render_junit(report: dict[str, Any]) -> bytes:
    s = summarise(report)
    task = s.task or "task"
    root = ET.Element("testsuites", {"name": xml_line(f"icae {task} {s.agent}")})
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for split in SPLITS:
        cases = [c for c in report.get("cases", []) if c["split"] == split]
        suite = ET.SubElement(root, "testsuite", {"name": xml_line(f"{task}.{split}")})
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("agent", s.agent), ("level", s.level), ("run_id", s.run_id),
            ("build", {None: "not reached", True: "passed", False: "failed"}[s.build_ok]),
            (f"pass_rate_{split}", percent(s.tiers[str(split)].rate)),
            ("overall_hidden_enhanced", percent(s.overall.rate)),
            ("macro_patterns_hidden_enhanced", percent(s.macro)),
        ):  # fmt: skip
            ET.SubElement(props, "property", {"name": name, "value": xml_line(value)})
        failed = skipped = 0
        for case in cases:
            f, sk = _testcase(suite, task, case)
            failed, skipped = failed + f, skipped + sk
        time = sum(float((c.get("delivery") or {}).get("duration_s", 0.0)) for c in cases)
        suite.attrib.update(tests=str(len(cases)), failures=str(failed), errors="0",
                            skipped=str(skipped), time=f"{time:.3f}")  # fmt: skip
        totals["tests"] += len(cases)
        totals["failures"] += failed
        totals["skipped"] += skipped
    root.attrib.update({k: str(v) for k, v in totals.items()}, errors="0")
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"


register_format(
    ReportFormat(
        "xml",
        "JUnit XML for CI systems: one testsuite per split, one testcase per case",
        render_junit,
        names=("junit", "xml"),
        order=30,
    )
)
