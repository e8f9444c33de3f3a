"""Runs of imported ICAE-EVAL tasks on the processes backend (root, no engine): a scripted
delivery that is the oracle itself scores 100 % whether the cases are differential against
the golden repository or judged against the stored expected outputs, and one that is not is
judged as ICAE-EVAL would judge it. The same on the real engine: tests/integration/
test_icae_import_engine.py."""

from __future__ import annotations

import os

import pytest
import yaml

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.events import CasesPlanned
from icae_tui.domain.results import Verdict
from icae_tui.domain.states import RunStatus
from icae_tui.domain.task import Reference
from icae_tui.importers.icae_contract import TOOL
from icae_tui.importers.icae_eval import import_tree
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from tests.importers.icae_tree import TOOL as TOOL_SOURCE
from tests.importers.icae_tree import build_tree, oracle_solution
from tests.task_copies import add_solution

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")


@pytest.fixture
def imported(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    tasks = tmp_path / "tasks"
    import_tree(build_tree(tmp_path / "tree"), tasks, base="icae-base:bookworm")
    for task_id in ("realcode-101", "realcode-102"):
        oracle_solution(tasks / task_id)
    return tasks


async def _run(tasks, task_id, agent, store):
    task = load_catalog(tasks).tasks[task_id]
    run = Run(RunConfig(task=task, agent=agent, pace_s=0, engine="processes"), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    return run, outcome


@pytest.mark.parametrize(("task_id", "reference"), [("realcode-101", Reference.ORACLE),
                                                    ("realcode-102", Reference.EXPECTED)])  # fmt: skip
async def test_a_delivery_that_is_the_oracle_itself_scores_100(imported, store, task_id, reference):
    run, outcome = await _run(imported, task_id, "scripted:oracle", store)
    assert outcome.score is not None and outcome.score.overall == 1.0
    assert [r.case_id for r in outcome.results if not r.passed] == []
    planned = next(e for e in store.events(run.run_id) if isinstance(e, CasesPlanned))
    assert planned.reference is reference and all(r.command == TOOL for r in outcome.results)


async def test_a_delivery_that_differs_is_judged_as_icae_judges_it(imported, store):
    # upper-casing that forgets ß → SS, and a len that ends its line
    wrong = TOOL_SOURCE.replace("print(text.upper())", "print(text.upper().replace('SS', 'ß'))")
    wrong = wrong.replace("sys.stdout.write(str(len(text)))", "print(len(text))")
    folder = imported / "realcode-102"
    steps = [step for step in _steps(folder) if step.get("write", {}).get("path") != "tool.py"]
    steps.insert(0, {"write": {"path": "tool.py", "content": wrong}})
    add_solution(folder, "wrong", steps)
    _, outcome = await _run(imported, "realcode-102", "scripted:wrong", store)
    failed = {r.case_id: r for r in outcome.results if not r.passed}
    assert set(failed) == {"hidden/feature2_upper#0", "hidden/feature3_len#0", "hidden/feature3_len#1"}
    assert all(r.verdict is Verdict.WRONG_ANSWER for r in failed.values())
    assert failed["hidden/feature3_len#0"].delivery.stdout == "3\n"  # ICAE wants "3" exactly
    assert failed["hidden/feature3_len#0"].oracle.stdout == "3"
    assert outcome.score.overall == pytest.approx(3 / 6)


async def test_a_delivery_without_the_protocols_harness_fails_the_build_gate(imported, store):
    folder = imported / "realcode-101"
    add_solution(folder, "bare", [{"write": {"path": "tool.py", "content": TOOL_SOURCE}},
                                  {"submit": "no test.sh"}])  # fmt: skip
    _, outcome = await _run(imported, "realcode-101", "scripted:bare", store)
    assert outcome.score is not None and not outcome.score.build_ok
    assert "no rcb_tests/test.sh" in outcome.results[0].reason


def _steps(folder):
    return yaml.safe_load((folder / "solutions" / "oracle.yaml").read_text())["steps"]
