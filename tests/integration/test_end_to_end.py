"""Whole runs against the real engine: headless, through the orchestrator and the store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from icae_tui.domain.events import CaseFinished, QuestionAnswered
from icae_tui.domain.task import Level
from icae_tui.results.trajectory import build_trajectory
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from tests.conftest import FIXTURE_TASKS, ROOT
from tests.task_copies import copy_mini, edit_toml, load_mini

pytestmark = pytest.mark.docker


async def _run(task, agent, store, level=Level.L1):
    run = Run(RunConfig(task=task, agent=agent, level=level, pace_s=0), store)
    outcome = await run.execute()
    return run, outcome


async def test_mini_good_partial_broken(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    run, good = await _run(task, "scripted:good", store)
    assert good.status == "completed" and good.score.overall == 1.0
    answers = [e for e in store.events(run.run_id) if isinstance(e, QuestionAnswered)]
    assert [a.record_ids for a in answers] == [["C001"], ["C002"]]

    run, partial = await _run(task, "scripted:partial", store)
    failed = {r.case_id: r for r in partial.results if not r.passed}
    assert set(failed) == {"hidden/ops#0", "hidden/ops#2", "enhanced/edge#1"}
    assert failed["hidden/ops#2"].verdict == "side_effects"
    assert "n.txt.bak: added" in failed["hidden/ops#2"].reason
    assert partial.score.overall == pytest.approx(2 / 5)

    run, broken = await _run(task, "scripted:broken", store)
    assert broken.status == "completed" and not broken.score.build_ok
    assert broken.score.overall == 0.0
    assert all(r.verdict == "build_error" for r in broken.results)
    assert "SyntaxError" in broken.results[0].reason


async def test_every_event_is_stored_and_report_lists_both_sides(fixture_catalog, store):
    run, outcome = await _run(fixture_catalog.tasks["mini"], "scripted:good", store)
    stored = store.events(run.run_id)
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert sum(isinstance(e, CaseFinished) for e in stored) == 6
    report = json.loads(outcome.report_path.read_text())
    note = next(c for c in report["cases"] if c["case_id"] == "hidden/ops#2")
    for side in ("oracle", "delivery"):
        assert note[side]["exit_code"] == 0
        assert note[side]["stdout"] == "wrote n.txt\n"
        assert note[side]["changes"][0]["path"] == "n.txt"
    assert [c["case_id"] for c in report["cases"]][0] == "public/upper#0"  # planned order
    trajectory = json.loads(outcome.report_path.with_name("trajectory.json").read_text())
    assert trajectory == build_trajectory(stored)  # the file equals an export of the store
    users = [s["message"] for s in trajectory["steps"] if s["source"] == "user"]
    assert len(users) == 3  # the PRD, then the two answers
    assert trajectory["final_metrics"]["extra"]["score"]["overall"] == 1.0


async def test_timeout_case_gets_its_own_verdict(fixture_catalog, store, tmp_path):
    folder = copy_mini(tmp_path)
    (folder / "cases" / "enhanced" / "slow.json").write_text(
        json.dumps({"description": "slow", "cases": [{"input": {"op": "sleep"}, "timeout_s": 1}]})
    )
    # the oracle sleeps too: both sides time out, so it is the oracle's failure, not the agent's
    task = load_mini(folder)
    _, outcome = await _run(task, "scripted:good", store)
    slow = next(r for r in outcome.results if r.case_id == "enhanced/slow#0")
    assert slow.verdict == "oracle_error"
    assert slow.oracle.timed_out and slow.delivery.timed_out
    assert outcome.score.overall == 1.0


def test_headless_cli_writes_report_and_exit_status(tmp_path):
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "icae_tui", "--tasks", str(FIXTURE_TASKS), "--home", str(tmp_path),
           "run", "--task", "mini", "--agent", "scripted:partial", "--report", str(report)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr  # a low score is not a failed run
    assert "FAIL hidden/ops#2" in out.stdout and "score: overall 40.0%" in out.stdout
    data = json.loads(report.read_text())
    assert {c["case_id"] for c in data["failed_cases"]} == {
        "hidden/ops#0",
        "hidden/ops#2",
        "enhanced/edge#1",
    }
    bad = subprocess.run(cmd[:-6] + ["--task", "nope"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "unknown task 'nope'" in bad.stderr


@pytest.mark.parametrize("task_id", ["semver", "tidy", "wordfreq"])
async def test_sample_tasks_good_partial_broken(bundled_catalog, store, task_id):
    task = bundled_catalog.tasks[task_id]
    _, good = await _run(task, "scripted:good", store)
    assert good.status == "completed"
    not_passed = [(r.case_id, r.reason) for r in good.results if not r.passed]
    assert not_passed == []
    assert good.score.by_split["hidden"].rate == 1.0 and good.score.by_split["enhanced"].rate == 1.0

    _, partial = await _run(task, "scripted:partial", store)
    failed = [r for r in partial.results if not r.passed]
    assert partial.score.overall < 0.9 and len(failed) >= 3
    assert all(r.split != "public" for r in failed)  # partial fits the visible examples
    assert all(r.reason for r in failed)

    _, broken = await _run(task, "scripted:broken", store)
    assert not broken.score.build_ok and broken.score.overall == 0.0
    assert "build failed" in broken.results[0].reason


def _mini_copy_with(tmp_path, extra_cases: list[dict], toml_extra: str = ""):
    folder = copy_mini(tmp_path)
    (folder / "cases" / "enhanced" / "extra.json").write_text(
        json.dumps({"description": "extra", "cases": extra_cases})
    )
    if toml_extra:
        edit_toml(folder, "[cases]\n", "[cases]\n" + toml_extra)
    return load_mini(folder)


async def test_nondeterministic_oracle_is_flagged_not_counted(tmp_path, store):
    task = _mini_copy_with(tmp_path, [{"input": {"op": "rand"}}], "oracle_runs = 2\n")
    _, outcome = await _run(task, "scripted:good", store)
    rand = next(r for r in outcome.results if r.case_id == "enhanced/extra#0")
    assert rand.verdict == "oracle_nondeterministic"
    assert outcome.score.overall == 1.0  # not held against the agent


async def test_tasks_verify_finds_wrong_expected_and_nondeterminism(tmp_path):
    from icae_tui.evaluation.verify import verify_task
    from icae_tui.sandbox.docker.backend import DockerSandbox

    task = _mini_copy_with(
        tmp_path,
        [
            {"input": {"op": "rand"}},
            {"input": {"op": "upper", "text": "a"}, "expected_output": "B\n"},
        ],
    )
    sandbox = await DockerSandbox.open()
    try:
        images = await sandbox.task_images(task)
        checks = {
            c.case_id: c async for c in verify_task(sandbox, task, images.oracle, run_id="t-verify")
        }
    finally:
        await sandbox.close()
    assert not checks["enhanced/extra#0"].deterministic
    assert (
        checks["enhanced/extra#1"].deterministic and not checks["enhanced/extra#1"].matches_stored
    )
    assert all(c.ok for cid, c in checks.items() if not cid.startswith("enhanced/extra"))
