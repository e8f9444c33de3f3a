"""A batch's report, from the store alone: every item's state and the kind of its outcome,
and per pairing (task × agent × level × responder) each figure's mean and spread over its
repeats (results/repeats.py's formulas: mean, sample sd, min–max, 95 % t-interval). Run ids and
times are kept apart (`runs`), so two batches of the same spec — one resumed after a
`kill -9`, one not — give the same `pairings`, `states` and `outcomes`.

An item's outcome kind:
- `scored`: a completed run whose delivery built;
- `delivery`: a completed run whose delivery did not build or was missing (scored 0);
- `agent`: the agent failed — its entry could not be made, or it stopped on its own error
  (`agent_error`, `box_died`); a completed run of it is still scored;
- `infrastructure`: the engine, a box, an image build or a model endpoint, after every
  attempt; `config` and `internal`: the operator's input, a bug of ours;
- `pending` / `running`: not done yet.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from enum import StrEnum
from typing import Any

from icae_tui.batch.plan import BatchItem, ItemProgress, ItemState
from icae_tui.batch.store import BatchRow, BatchStore
from icae_tui.domain.events import AgentStopped, Event
from icae_tui.domain.states import FailureKind, RunStatus, StopReason
from icae_tui.results.formats import svg
from icae_tui.results.formats.html import CSS
from icae_tui.results.formats.text import h, md, xml_line
from icae_tui.results.repeats import Repeat, summary
from icae_tui.results.summary import summarize

REPORT_VERSION = 1
AGENT_STOPS = frozenset({StopReason.AGENT_ERROR, StopReason.BOX_DIED})


class OutcomeKind(StrEnum):
    SCORED = "scored"
    DELIVERY = "delivery"
    AGENT = "agent"
    INFRASTRUCTURE = "infrastructure"
    CONFIG = "config"
    INTERNAL = "internal"
    PENDING = "pending"
    RUNNING = "running"


def outcome_kind(progress: ItemProgress, events: list[Event]) -> OutcomeKind:
    """The kind of an item's outcome (the module docstring), from its latest run's events."""
    if progress.state is ItemState.PENDING:
        return OutcomeKind.PENDING
    if progress.state is ItemState.RUNNING:
        return OutcomeKind.RUNNING
    s = summarize(progress.run_id or "", events)
    if s.status != RunStatus.COMPLETED:
        failure = FailureKind(s.failure) if s.failure else FailureKind.INTERNAL
        return OutcomeKind(failure.value)
    if any(isinstance(ev, AgentStopped) and ev.reason in AGENT_STOPS for ev in events):
        return OutcomeKind.AGENT
    if s.build_ok is False:
        return OutcomeKind.DELIVERY
    return OutcomeKind.SCORED


def batch_report(
    batches: BatchStore, row: BatchRow, progress: dict[str, ItemProgress]
) -> dict[str, Any]:
    items = batches.items(row.batch_id)
    runs: list[dict[str, Any]] = []
    kinds: Counter[str] = Counter()
    by_pairing: dict[tuple[str, str, str, str], list[tuple[BatchItem, Repeat]]] = {}
    for item in items:
        p = progress[item.key]
        events = batches.runs.events(p.run_id) if p.run_id else []
        kind = outcome_kind(p, events)
        kinds[kind] += 1
        s = summarize(p.run_id or "", events) if p.run_id else None
        score = s.score if s is not None and s.status == RunStatus.COMPLETED else None
        by_pairing.setdefault(item.pairing, []).append(
            (item, Repeat(p.run_id or "", s.status if s is not None else "pending", score))
        )
        runs.append({"item": item.key, "state": str(p.state), "outcome": str(kind),
                     "attempts": p.attempts, "run_id": p.run_id})  # fmt: skip
    pairings = []
    for (task, agent, level, responder), members in by_pairing.items():
        group = summary(f"{task} × {agent}", [r for _, r in members])
        pairings.append({
            "task": task, "agent": agent, "level": level, "responder": responder,
            "repeats": group["repeats"], "measured": group["measured"],
            "figures": group["figures"],
        })  # fmt: skip
    states = Counter(str(progress[it.key].state) for it in items)
    return {
        "report_version": REPORT_VERSION,
        "batch_id": row.batch_id,
        "name": row.spec.name,
        "status": str(row.status),
        "spec": row.spec.model_dump(mode="json"),
        "items": len(items),
        "states": dict(sorted(states.items())),
        "outcomes": dict(sorted(kinds.items())),
        "pairings": pairings,
        "runs": runs,
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _overall(p: dict[str, Any]) -> str:
    f = p["figures"].get("overall")
    if f is None:
        return "—"
    sd = "" if f["sd"] is None else f" ± {100 * f['sd']:.1f}"
    return f"{_pct(f['mean'])}{sd} (n={f['n']})"


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report in the terminal: its counts, then a line per pairing."""
    counts = ", ".join(f"{n} {k}" for k, n in report["outcomes"].items())
    lines = [
        f"━━ batch {report['batch_id']} {report['status']}: {report['items']} run(s) · {counts}"
    ]
    width = max((len(f"{p['task']} × {p['agent']}") for p in report["pairings"]), default=0)
    for p in report["pairings"]:
        name = f"{p['task']} × {p['agent']}"
        lines.append(
            f"   {name:<{width}}  {p['level']:<6} {p['responder']:<9} overall {_overall(p)}"
        )
    return lines


def report_markdown(report: dict[str, Any]) -> str:
    name = f" — {report['name']}" if report["name"] else ""
    out = [f"# Batch `{report['batch_id']}`{md(name)}", "",
           f"{report['items']} runs, {report['status']}. Outcomes: "
           + ", ".join(f"{k} {n}" for k, n in report["outcomes"].items()) + ".", "",
           "Overall per pairing: the mean over its completed repeats ± the sample standard "
           "deviation in points (n: repeats measured).", "",
           "| task | agent | level | responder | overall | macro |",
           "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for p in report["pairings"]:
        macro = p["figures"].get("macro")
        out.append(f"| {md(p['task'])} | {md(p['agent'])} | {p['level']} | {p['responder']} | "
                   f"{_overall(p)} | {_pct(macro['mean']) if macro else '—'} |")  # fmt: skip
    return "\n".join(out) + "\n"


def report_junit(report: dict[str, Any]) -> str:
    """JUnit XML for CI systems: a <testsuite> per pairing, a <testcase> per repeat; one whose
    outcome is not `scored` is a <failure> typed by its kind, one not done yet <skipped>."""
    root = ET.Element("testsuites", {"name": xml_line(f"batch {report['batch_id']}")})
    runs: dict[str, list[dict[str, Any]]] = {}
    for run in report["runs"]:
        task, agent, level, responder, _ = run["item"].rsplit("|", 4)
        runs.setdefault("|".join((task, agent, level, responder)), []).append(run)
    failures = 0
    for p in report["pairings"]:
        key = "|".join((p["task"], p["agent"], p["level"], p["responder"]))
        members = runs.get(key, [])
        suite = ET.SubElement(root, "testsuite", {
            "name": xml_line(f"{p['task']} × {p['agent']} · {p['level']} · {p['responder']}"),
            "tests": str(len(members)),
        })  # fmt: skip
        bad = 0
        for run in members:
            repeat = run["item"].rsplit("|", 1)[-1]
            case = ET.SubElement(suite, "testcase", {
                "classname": xml_line(f"{p['task']}.{p['agent']}"),
                "name": f"repeat {repeat}",
            })  # fmt: skip
            outcome = run["outcome"]
            if outcome in (OutcomeKind.PENDING, OutcomeKind.RUNNING):
                ET.SubElement(case, "skipped", {"message": f"{outcome}: not done"})
            elif outcome != OutcomeKind.SCORED:
                bad += 1
                ET.SubElement(case, "failure", {
                    "type": outcome, "message": xml_line(f"{outcome} (run {run['run_id']})"),
                })  # fmt: skip
        suite.set("failures", str(bad))
        failures += bad
    root.set("failures", str(failures))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def report_html(report: dict[str, Any]) -> str:
    """One self-contained page (inline CSS and SVG, no script, every name escaped): the
    outcome counts, the mean overall per pairing as bars (sd and n beside), the table."""
    rows = []
    for p in report["pairings"]:
        f = p["figures"].get("overall")
        note = "no completed run" if f is None else (
            f"{_pct(f['mean'])}" + ("" if f["sd"] is None else f" ± {100 * f['sd']:.1f}")
            + f" (n={f['n']})"
        )
        rows.append(svg.Bar(f"{p['task']} × {p['agent']} · {p['level']}",
                            None if f is None else f["mean"], note))  # fmt: skip
    outcomes = ", ".join(f"{h(k)} {n}" for k, n in report["outcomes"].items())
    cells = "".join(
        f"<tr><td>{h(p['task'])}</td><td>{h(p['agent'])}</td><td>{h(p['level'])}</td>"
        f"<td>{h(p['responder'])}</td><td class=\"n\">{h(_overall(p))}</td></tr>"
        for p in report["pairings"]
    )
    title = f"Batch report: {h(report['batch_id'])}" + (
        f" — {h(report['name'])}" if report["name"] else ""
    )
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f"<title>{title}</title><style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="sub">{report["items"]} runs, {h(report["status"])}. Outcomes: {outcomes}.</p>',
        "<h2>Overall per pairing</h2>",
        f"<figure>{svg.bars('Mean overall per pairing', rows)}<figcaption>the mean over its "
        "completed repeats, ± the sample standard deviation in points</figcaption></figure>",
        "<table><tr><th>task</th><th>agent</th><th>level</th><th>responder</th>"
        f'<th class="n">overall</th></tr>{cells}</table>',
        "</body></html>\n",
    ])  # fmt: skip
