"""Reports built from a run's events, so a live run and a stored one give the same file.

They inherit the run's bounds (icae_tui.store.bounds) and say what was not kept: `turns` lists the
stored questions, `refused_questions` counts the ones past the budget that were not; each
side of a case lists at most CHANGES_CAP changes, with `changes_total` and `capped_changes`
giving the true counts; `dropped` counts the trace events past the run's store bound.

Each turn carries `asked_at` and `answered_at` (the events' epoch seconds), so a report can
draw when each question was asked and answered over the run.

Every format (JSON, Markdown, JUnit XML, HTML: registered in icae_tui/results/formats/registry.py)
is rendered from this dict by `render_report` / `write_report`; the formats' modules are
icae_tui/results/formats/, and the JSON's schema is icae_tui/schemas/report-v3.schema.json
(REPORT_SCHEMA).

`run.runtime` is the task's language runtime and the version its image's probe printed (the
image build's `runtime version:` line), when the task's images have a runtime layer.

`reference` says what the cases were judged against: the oracle (differential) or their
stored expected outputs (a task with `[cases] reference = "expected"`).

Metrics are by name, as the run's scorers declared them: `metrics` lists the case metrics
(name, label, description, kind), each case's `metrics` holds its values, and the score's
`metrics` and `rates` the aggregated ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icae_tui.domain.events import (
    AgentSubmitted,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    DiagnosticsMade,
    Event,
    EventsDropped,
    PackageRefused,
    PackageServed,
    PhaseChanged,
    Progress,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.runtimes import parse_version_line
from icae_tui.domain.task import Reference
from icae_tui.results.claims import claims_of
from icae_tui.results.formats.registry import ReportFormat, format_for_path, report_format
from icae_tui.users.metrics import interaction_metrics

REPORT_VERSION = 3  # 2: bounded (refused_questions, dropped, capped_changes); 3: metrics by name
# The JSON report's published schema (JSON Schema 2020-12), shipped as package data
REPORT_SCHEMA = Path(__file__).parents[1] / "schemas" / f"report-v{REPORT_VERSION}.schema.json"
# What the cases were judged against (a report's `reference`): `against` is its name.
REFERENCES = {
    Reference.ORACLE: {"against": "oracle", "detail": "differential: the oracle ran each case"},
    Reference.EXPECTED: {
        "against": "expected",
        "detail": "the stored expected outputs, compared as ICAE-EVAL compares them",
    },
}


def build_report(events: list[Event]) -> dict[str, Any]:
    report: dict[str, Any] = {"version": REPORT_VERSION, "turns": [], "cases": []}
    report["refused_questions"] = {"count": 0}
    report["dropped"] = {"count": 0, "payload_bytes": 0, "by_kind": {}}
    questions: dict[int, dict[str, Any]] = {}
    order: dict[str, int] = {}
    phase = ""
    packages: dict[str, Any] = {"served": [], "refused": [], "bytes": 0}
    for ev in events:
        match ev:
            case PhaseChanged():
                phase = ev.phase.value
            case PackageServed():  # the agent's installs, and the build's from the cache
                packages["served"].append({**ev.model_dump(mode="json", include={
                    "ecosystem", "name", "version", "filename", "size", "sha256", "source"}),
                    "phase": phase})  # fmt: skip
                packages["bytes"] += ev.size
            case PackageRefused():
                packages["refused"].append({**ev.model_dump(mode="json", include={
                    "ecosystem", "name", "path", "status", "reason"}), "phase": phase})  # fmt: skip
            case RunStarted():
                report.setdefault("run", {}).update({
                    "run_id": ev.run_id,
                    "task": ev.task_id,
                    "agent": ev.agent,
                    "level": ev.level,
                    "responder": ev.responder,
                    "budget": ev.budget,
                    "started_at": ev.ts,
                })
            case Progress() if (said := parse_version_line(ev.message)) is not None:
                # the task's language version, as its runtime image's probe printed it
                report.setdefault("run", {})["runtime"] = {"name": said[0], "version": said[1]}
            case QuestionAsked():
                turn = {"id": ev.question_id, "question": ev.text, "via": ev.via, "mode": ev.mode,
                        "asked_at": ev.ts}  # fmt: skip
                questions[ev.question_id] = turn
                report["turns"].append(turn)
            case QuestionAnswered():
                turn = questions.setdefault(ev.question_id, {"id": ev.question_id})
                turn.update(
                    answer=ev.text,
                    records=ev.record_ids,
                    scores=ev.scores,
                    fallback=ev.fallback,
                    over_budget=ev.over_budget,
                    responder=ev.responder,
                    edited=ev.edited,
                    model=ev.model,
                    runner_up=ev.runner_up,
                    latency_s=ev.latency_s,
                    answered_at=ev.ts,
                )
            case QuestionsRefused():  # cumulative: the last one holds the totals
                report["refused_questions"] = ev.model_dump(
                    include={"count", "chars", "first_id", "last_id", "sample"}
                )
            case EventsDropped():  # cumulative too
                report["dropped"] = ev.model_dump(
                    include={"count", "payload_bytes", "by_kind", "max_events", "max_bytes"}
                )
            case AgentSubmitted():
                report["submission"] = ev.message
            case BuildChecked():
                report["build"] = ev.model_dump(
                    include={"ok", "exit_code", "reason", "stdout", "stderr"}
                )
            case CasesPlanned():
                order = {case_id: i for i, case_id in enumerate(ev.case_ids)}
                report["reference"] = REFERENCES[ev.reference]
                report["metrics"] = [m.model_dump(mode="json") for m in ev.metrics]
            case CaseFinished():
                report["cases"].append(ev.result.model_dump(mode="json"))
            case ScoreUpdated():
                report["score"] = ev.score.model_dump(mode="json")
            case DiagnosticsMade():  # beyond tests: structure, signature, rules, critic, review
                report["diagnostics"] = ev.diagnostics.model_dump(mode="json")
            case RunFinished():
                report["status"] = ev.status
                report["error"] = ev.error
                report.setdefault("run", {})["finished_at"] = ev.ts
                if ev.score is not None:
                    report["score"] = ev.score.model_dump(mode="json")
    if packages["served"] or packages["refused"]:
        report["packages"] = packages
    report["interaction"] = interaction_metrics(events).model_dump()
    report["cases"].sort(key=lambda c: order.get(c["case_id"], len(order)))
    report["capped_changes"] = [
        {"case_id": c["case_id"], "side": side, "kept": len(ran["changes"]),
         "total": ran["changes_total"]}
        for c in report["cases"]
        for side in ("oracle", "delivery")
        if (ran := c.get(side)) and ran.get("changes_total", 0) > len(ran["changes"])
    ]  # fmt: skip
    report["failed_cases"] = [
        {"case_id": c["case_id"], "verdict": c["verdict"], "reason": c["reason"]}
        for c in report["cases"]
        if not c["passed"]
    ]
    # the agent's completion claims read against the final score (claims.py)
    report["claims"] = claims_of(events).as_dict()
    return report


def render_report(events: list[Event], fmt: ReportFormat | str) -> str | bytes:
    """The run's report in `fmt` (a registered format, or its name: results/formats/registry.py):
    text for JSON, Markdown and HTML, bytes (UTF-8, with its XML declaration) for JUnit XML.
    Every format is drawn from build_report's dict; ValueError for a name no format has."""
    return report_format(fmt).render(build_report(events))


def write_report(events: list[Event], path: Path, fmt: ReportFormat | str | None = None) -> Path:
    """Write the run's report to `path`, in `fmt` or the format its suffix names."""
    chosen = report_format(fmt) if fmt is not None else format_for_path(path)
    body = render_report(events, chosen)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body, encoding="utf-8")
    return path
