"""An imported ICAE-EVAL task run on the real engine, as any run: the tree built by the test
(tests/importers/icae_tree.py), imported onto the engine's base image, a scripted agent's
delivery frozen and judged through ICAE's protocol in both images. A delivery that is the
oracle itself scores 100 %, differential against the golden repository and against the
stored expected outputs alike; one that is not fails the cases ICAE-EVAL would fail."""

from __future__ import annotations

import json

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.events import PhaseChanged
from icae_tui.domain.results import Verdict
from icae_tui.domain.states import Phase, RunStatus
from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.docker.images import BASE_IMAGE
from tests.importers.icae_tree import TOOL, build_tree, oracle_solution
from tests.task_copies import add_solution

pytestmark = pytest.mark.docker


@pytest.fixture
def imported(tmp_path):
    tasks = tmp_path / "tasks"
    report = import_tree(build_tree(tmp_path / "tree"), tasks, base=BASE_IMAGE)
    assert [t.outcome for t in report.tasks] == [Outcome.CREATED, Outcome.CREATED, Outcome.FAILED]
    for task_id in ("realcode-101", "realcode-102"):
        oracle_solution(tasks / task_id)
    return tasks


async def _run(tasks, task_id, agent, store):
    run = Run(RunConfig(task=load_catalog(tasks).tasks[task_id], agent=agent, pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    return run, outcome


async def test_the_oracle_itself_scores_100_against_the_golden_repository(imported, store):
    run, outcome = await _run(imported, "realcode-101", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and outcome.score.by_split["public"].rate == 1.0
    # both sides ran the case: the golden repository's test.sh and the delivery's
    upper = next(r for r in outcome.results if r.case_id == "hidden/feature2_upper#0")
    assert upper.oracle.stdout == upper.delivery.stdout == "É SS\n"
    assert upper.oracle.exit_code == upper.delivery.exit_code == 0
    report = json.loads(outcome.report_path.read_text())
    assert report["reference"]["against"] == "oracle"


async def test_the_oracle_itself_scores_100_against_the_stored_outputs(imported, store):
    run, outcome = await _run(imported, "realcode-102", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and len(outcome.results) == 8
    evaluate = next(e for e in store.events(run.run_id)
                    if isinstance(e, PhaseChanged) and e.phase is Phase.EVALUATE)  # fmt: skip
    assert evaluate.detail == "8 cases against their stored expected outputs (no oracle)"
    report = json.loads(outcome.report_path.read_text())
    assert report["reference"]["against"] == "expected"
    three = next(c for c in report["cases"] if c["case_id"] == "hidden/feature3_len#0")
    assert three["delivery"]["stdout"] == "3" and three["reason"] == (
        "identical to the stored expected output"
    )


async def test_a_different_delivery_fails_what_icae_would_fail(imported, store):
    folder = imported / "realcode-101"
    wrong = TOOL.replace("print(text.upper())", "print(text.upper().replace('SS', 'ß'))")
    steps = [{"write": {"path": "tool.py", "content": wrong}}]
    steps += [{"write": {"path": p, "content": (folder / "oracle" / p).read_text()}}
              for p in ("rcb_tests/test.sh", "rcb_tests/run_cases.py")]  # fmt: skip
    add_solution(folder, "wrong", [*steps, {"submit": "ß kept"}])
    _, outcome = await _run(imported, "realcode-101", "scripted:wrong", store)
    failed = [(r.case_id, r.verdict) for r in outcome.results if not r.passed]
    assert failed == [("hidden/feature2_upper#0", Verdict.WRONG_ANSWER)]
    assert outcome.score.overall == pytest.approx(3 / 4)
