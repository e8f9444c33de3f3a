"""A delivery that floods the file system cannot flood the store or the report (real engine).

The delivery's tool creates files in /tmp until the case times out (10⁵ of them per case);
its results go through a run's emit into the store and into report.json, as in a real run.
Two more cases create 1,000 files on both sides, the same or with one difference past the
kept entries: the verdict must still see it. The bound is documented in icae_tui/store/bounds.py.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from icae_tui.domain.events import (
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import Case, Task
from icae_tui.evaluation.scoring import score
from icae_tui.results.report import write_report
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.effects import CHANGES_CAP, CHANGES_JSON_CAP
from icae_tui.store.bounds import CASE_BOUND_BYTES
from tests.integration.tool_images import ToolImages, command_task, evaluate

pytestmark = pytest.mark.docker

ORACLE_TOOL = r"""#!/bin/bash
case "$1" in
  many|many-odd) for i in $(seq 1000); do echo "$i" > "/tmp/m$i"; done ;;
esac
echo ok
"""

DELIVERY_TOOL = r"""#!/bin/bash
case "$1" in
  tmpflood) i=0; while :; do : > "/tmp/f$i"; i=$((i+1)); done ;;
  many) for i in $(seq 1000); do echo "$i" > "/tmp/m$i"; done ;;
  many-odd) for i in $(seq 1000); do echo "$i" > "/tmp/m$i"; done; echo odd > /tmp/m999 ;;
esac
echo ok
"""

FLOODS = 3
TIMEOUT_S = 3
# What a flood case may store: the kept changes of both sides (≤ CHANGES_JSON_CAP each) and
# a few KiB of streams, verdict and score. The documented worst case is CASE_BOUND_BYTES.
FLOOD_CASE_BYTES = 2 * CHANGES_JSON_CAP + 32 * 1024


IMAGES = ToolImages("bounds", ORACLE_TOOL, DELIVERY_TOOL)


def _task() -> Task:
    commands = ["tool tmpflood"] * FLOODS + ["tool many", "tool many-odd"]
    return command_task(
        "bounds", [Case(command=c, pattern=c) for c in commands], timeout_s=TIMEOUT_S
    )


@pytest.fixture(scope="module")
def results(images) -> dict[str, CaseResult]:
    # one case at a time: two floods at once would only share the two cores
    return asyncio.run(evaluate(_task(), images, run_id="test-bounds", concurrency=1))


async def test_tmp_flood_is_capped_in_results_store_and_report(
    results, fixture_catalog, store, tmp_path
):
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"]), store)
    await run.emit(RunStarted(task_id="bounds", task_title="bounds", agent="a", level="L1",
                              responder="simulated", budget=0, prd=""))  # fmt: skip
    await run.emit(PhaseChanged(phase="evaluate"))
    await run.emit(CasesPlanned(case_ids=list(results)))
    per_case: dict[str, int] = {}
    done: list[CaseResult] = []
    for case_id, result in results.items():
        before = store.usage(run.run_id).payload_bytes
        done.append(result)
        await run.emit(CaseFinished(result=result))
        await run.emit(ScoreUpdated(score=score(done, planned=len(results))))
        per_case[case_id] = store.usage(run.run_id).payload_bytes - before
    await run.emit(RunFinished(status="completed"))
    report_path = write_report(store.events(run.run_id), tmp_path / "report.json")

    floods = [f"hidden/h#{i}" for i in range(FLOODS)]
    for case_id in floods:
        flood = results[case_id]
        assert flood.verdict == "time_limit", flood.reason
        side = flood.delivery
        assert side.changes_total > 10 * CHANGES_CAP, side.changes_total  # the true count
        assert len(side.changes) == CHANGES_CAP and side.changes_sha256
        assert [c.path for c in side.changes] == sorted(c.path for c in side.changes)
        assert per_case[case_id] < FLOOD_CASE_BYTES <= CASE_BOUND_BYTES, per_case

    report = json.loads(report_path.read_text())
    assert report_path.stat().st_size < len(results) * 2 * FLOOD_CASE_BYTES
    for case_id, stored in per_case.items():  # the figures, with `pytest -s`
        total = results[case_id].delivery.changes_total
        print(f"\n{case_id}: {total} file changes, {stored} bytes stored")
    print(f"report.json: {report_path.stat().st_size} bytes")
    capped = {(c["case_id"], c["side"]): c for c in report["capped_changes"]}
    for case_id in floods:
        entry = capped[(case_id, "delivery")]
        assert entry["kept"] == CHANGES_CAP
        assert entry["total"] == results[case_id].delivery.changes_total
    assert report["dropped"]["count"] == 0  # the cases are bounded at the source


async def test_same_huge_change_sets_compare_equal_and_a_difference_past_the_cap_counts(
    results,
):
    same, odd = results[f"hidden/h#{FLOODS}"], results[f"hidden/h#{FLOODS + 1}"]
    assert same.verdict == "accepted", same.reason
    for side in (same.oracle, same.delivery, odd.oracle, odd.delivery):
        assert side.changes_total == 1000 and len(side.changes) == CHANGES_CAP
    assert same.oracle.changes_sha256 == same.delivery.changes_sha256
    # /tmp/m999 sorts last: the kept entries agree, the digests of all 1,000 do not
    assert odd.oracle.changes == odd.delivery.changes
    assert odd.verdict == "side_effects" and not odd.sp
