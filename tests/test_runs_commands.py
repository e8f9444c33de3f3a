"""`icae runs list | show | export | compare | rescore` (icae_tui/cli/runs.py, with
results/summary.py, results/compare.py and results/rescore.py) over real stored runs: the scripted good,
partial and broken agents of the fixture task `mini` and of the bundled task `wordfreq`, run
once for the module through the unsafe `processes` backend (no Docker; root for its mounts).

The expected flips and figures are counted by hand from what each solution does:

- mini `partial` formats `count` differently (hidden/ops#0, enhanced/edge#1: wrong answer,
  stdout similarity 0.1429) and writes its note to another file (hidden/ops#2: side effects,
  stdout identical, so fm_score 1.0 but SP fails); `broken` does not build.
- wordfreq `partial` fails 19 hidden and 4 enhanced cases (below), none public.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.cli import main
from icae_tui.domain.events import CaseFinished, Progress
from icae_tui.domain.task import Task
from icae_tui.results.compare import DifferentTasks, compare_runs
from icae_tui.results.rescore import rescore
from icae_tui.results.summary import summarize
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from tests.conftest import BUNDLED_TASKS, FIXTURE_TASKS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")

AGENTS = ("good", "partial", "broken")
MINI_FLIPS = ["hidden/ops#0", "hidden/ops#2", "enhanced/edge#1"]
WORDFREQ_FLIPS = [
    *(f"hidden/count#{i}" for i in (3, 4, 5)),
    *(f"hidden/errors#{i}" for i in range(9)),
    "hidden/grep#5", "hidden/stdin#2",
    *(f"hidden/top#{i}" for i in (5, 6, 7)),
    "hidden/vocab#4", "hidden/vocab#6",
    "enhanced/boundaries#1", "enhanced/boundaries#6", "enhanced/hostile#0", "enhanced/hostile#1",
]  # fmt: skip
# wordfreq partial's cases with SP whose stdout is near the oracle's but not equal
WORDFREQ_NEAR = {
    "hidden/count#3": 0.6571, "hidden/count#4": 0.7358, "hidden/count#5": 0.7647,
    "hidden/stdin#2": 0.641, "hidden/top#6": 0.7083, "hidden/top#7": 0.3889,
    "hidden/vocab#4": 0.7308, "enhanced/boundaries#6": 0.6842,
    "hidden/top#5": 0.8636,  # at least the task's 0.8: FM at the stored τ
}  # fmt: skip


def unhurried(task: Task) -> Task:
    """`task` with a case time limit no loaded host reaches (its solutions never loop): what
    is counted here by hand is what each solution answers, not how fast a busy machine ran
    it (seen: a wordfreq case past its 10 s under load)."""
    cases = task.spec.cases.model_copy(update={"timeout_s": 120.0})
    return task.model_copy(update={"spec": task.spec.model_copy(update={"cases": cases})})


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, str], str]]:
    """A home whose store holds a completed run of each (task, agent): their ids by pair."""
    home = tmp_path_factory.mktemp("runs-home")
    ids: dict[tuple[str, str], str] = {}
    catalogs = {"mini": load_catalog(FIXTURE_TASKS), "wordfreq": load_catalog(BUNDLED_TASKS)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(registry.UNSAFE_VAR, "1")
        store = RunStore(home / "runs.db")

        async def run_all() -> None:
            for task_id, catalog in catalogs.items():
                for agent in AGENTS:
                    config = RunConfig(task=unhurried(catalog.tasks[task_id]),
                                       agent=f"scripted:{agent}", pace_s=0, engine="processes")  # fmt: skip
                    run = Run(config, store)
                    outcome = await run.execute()
                    assert outcome.status == "completed", outcome.error
                    ids[task_id, agent] = run.run_id

        asyncio.run(run_all())
        store.close()
    return home, ids


def icae(home: Path, *argv: str) -> int:
    return main(["--home", str(home), "--tasks", str(FIXTURE_TASKS), *argv])


def summary(home: Path, run_id: str):
    store = RunStore(home / "runs.db")
    try:
        return summarize(run_id, store.events(run_id))
    finally:
        store.close()


# --- compare ----------------------------------------------------------------------------------


def test_good_against_partial_flips_the_cases_partial_fails(stored):
    home, ids = stored
    good, partial = (summary(home, ids["mini", a]) for a in ("good", "partial"))
    c = compare_runs(good, partial)
    assert [f.case_id for f in c.pass_to_fail] == MINI_FLIPS
    assert [(f.before, f.after) for f in c.pass_to_fail] == [
        ("accepted", "wrong_answer"), ("accepted", "side_effects"), ("accepted", "wrong_answer")
    ]  # fmt: skip
    assert c.fail_to_pass == [] and c.only_a == c.only_b == [] and c.unchanged == 3
    # hidden 1/3 and enhanced 1/2 pass: overall 2/5; patterns count 0/2, nope, note 0/1, upper
    assert c.delta("overall").delta == -0.6
    assert c.delta("macro").delta == -0.5
    assert c.delta("hidden rate").b == pytest.approx(1 / 3)
    assert c.delta("enhanced rate").delta == -0.5
    assert c.delta("public rate").delta == 0.0
    assert (c.delta("SP").b, c.delta("EM").b, c.delta("FM").b, c.delta("exec").b) == (
        0.8, 0.4, 0.4, 1.0
    )  # fmt: skip
    assert c.delta("public − hidden").delta == pytest.approx(0.6667)
    back = compare_runs(partial, good)  # the other way round: the same cases, fail → pass
    assert [f.case_id for f in back.fail_to_pass] == MINI_FLIPS and back.pass_to_fail == []
    assert back.delta("overall").delta == 0.6


def test_a_bundled_task_flips_as_counted_by_hand(stored):
    home, ids = stored
    good, partial, broken = (summary(home, ids["wordfreq", a]) for a in AGENTS)
    c = compare_runs(good, partial)
    assert sorted(f.case_id for f in c.pass_to_fail) == sorted(WORDFREQ_FLIPS)
    assert c.fail_to_pass == [] and c.unchanged == 61 - 23
    assert c.delta("overall").b == round(33 / 56, 4)  # 21 of 40 hidden, 12 of 16 enhanced
    assert c.delta("hidden rate").b == 21 / 40 and c.delta("enhanced rate").b == 12 / 16
    assert c.delta("exec").b == c.delta("SP").b == 42 / 56
    # no build: every case, public too, flips; a failed build is a measured zero
    c = compare_runs(good, broken)
    assert len(c.pass_to_fail) == 61 and {f.after for f in c.pass_to_fail} == {"build_error"}
    assert c.delta("overall").delta == -1.0 and c.delta("public rate").delta == -1.0


def test_runs_of_different_tasks_are_not_compared(stored):
    home, ids = stored
    with pytest.raises(DifferentTasks):
        compare_runs(summary(home, ids["mini", "good"]), summary(home, ids["wordfreq", "good"]))


def test_compare_on_the_command_line(stored, capsys):
    home, ids = stored
    assert icae(home, "runs", "compare", ids["mini", "good"], ids["mini", "partial"]) == 0
    out = capsys.readouterr().out
    assert "task mini: 3 pass → fail, 0 fail → pass, 3 unchanged, 0 only in A, 0 only in B" in out
    assert "  hidden/ops#2" in out and "accepted → side_effects" in out
    assert "  overall                 100.0%   40.0%   -60.0" in out
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope", "GOOD"], "error: no stored run 'nope' (see `icae runs`)"),
        (["GOOD", "WORDFREQ"], "error: runs of different tasks: "),
        (["GOOD"], "error: compare takes two run ids, or --agent A --agent B"),
        (["--agent", "scripted:good"], "error: --agent goes twice: --agent A --agent B"),
        (["--agent", "x", "--agent", "y"], "error: no task has a completed run of both 'x'"),
        (["GOOD", "GOOD", "--agent", "x"], "error: compare takes two run ids or --agent"),
    ],
)
def test_compare_errors_are_one_line(stored, capsys, argv, message):
    home, ids = stored
    names = {"GOOD": ids["mini", "good"], "WORDFREQ": ids["wordfreq", "good"]}
    assert icae(home, "runs", "compare", *(names.get(a, a) for a in argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(message) and err.count("\n") == 1, err


def test_two_agents_compare_over_the_tasks_both_completed(stored, capsys):
    home, _ = stored
    argv = ["runs", "compare", "--agent", "scripted:good", "--agent", "scripted:partial"]
    assert icae(home, *argv) == 0
    out = capsys.readouterr().out
    assert "task mini: 3 pass → fail" in out and "task wordfreq: 23 pass → fail" in out
    assert "2 task(s): 26 pass → fail, 0 fail → pass, 0 in one run only" in out
    # mean overall: good 100 %, partial (40 % + 58.93 %) / 2
    assert "  overall                 100.0%   49.5%   -50.5" in out
    assert icae(home, *argv, "--task", "mini", "--task", "semver") == 0
    out, err = capsys.readouterr()
    assert "1 task(s): 3 pass → fail" in out and "wordfreq" not in out
    assert "semver: no completed run of scripted:good, left out" in err


# --- list, show, export -----------------------------------------------------------------------


def test_list_is_newest_first_filtered_and_fits_80_columns(stored, capsys):
    home, ids = stored
    assert icae(home, "runs") == 0
    lines = capsys.readouterr().out.splitlines()
    listed = [line.split()[0] for line in lines]
    assert [i for i in listed if i in ids.values()] == list(reversed(ids.values()))
    assert max(len(line) for line in lines) <= 80
    assert icae(home, "runs", "list", "--agent", "scripted:partial", "--task", "mini") == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.split() == [ids["mini", "partial"], "mini", "scripted:partial", "L1",
                            "completed", "40.0%"]  # fmt: skip
    assert icae(home, "runs", "list", "--status", "failed") == 0
    assert capsys.readouterr().out == ""


def test_show_summarises_a_run(stored, capsys):
    home, ids = stored
    assert icae(home, "runs", "show", ids["mini", "partial"]) == 0
    out = capsys.readouterr().out
    for expected in (
        "task       mini",
        "agent      scripted:partial",
        "level      L1 · responder simulated",
        "status     completed",
        "build      ok",
        "questions  0 asked · 0 answered · 0 refused",
        "score      overall 40.0% · macro 50.0% · 6/6 cases done",
        "rates      exec 100.0% · SP 80.0% · EM 40.0% · FM 40.0%",
        "           hidden      1/3     33.3%   33.3%",
        "           enhanced    1/2     50.0%   50.0%",
        "verdicts   accepted 3 · wrong_answer 2 · side_effects 1",
    ):
        assert expected in out, expected
    assert "           count" in out and "0/2      0.0%" in out
    assert "duration   " in out and max(len(line) for line in out.splitlines()) <= 80
    assert icae(home, "runs", "show", ids["mini", "broken"]) == 0
    out = capsys.readouterr().out
    assert "build      failed" in out and "verdicts   build_error 6" in out


def test_export_prints_the_json_report_and_writes_a_file(stored, capsys, tmp_path):
    from icae_tui.results.report import build_report

    home, ids = stored
    run_id = ids["mini", "good"]
    store = RunStore(home / "runs.db")
    expected = json.loads(json.dumps(build_report(store.events(run_id))))
    store.close()
    assert icae(home, "runs", "export", run_id) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert icae(home, "runs", "--export", run_id) == 0  # the older spelling still works
    assert json.loads(capsys.readouterr().out) == expected
    assert icae(home, "runs", "export", run_id, "-o", str(tmp_path / "r.json")) == 0
    assert json.loads((tmp_path / "r.json").read_text()) == expected
    assert capsys.readouterr().err == f"wrote {tmp_path / 'r.json'}\n"
    assert icae(home, "runs", "export", "missing") == 2
    assert capsys.readouterr().err.startswith("error: no stored run 'missing'")


def test_export_and_run_report_use_the_report_formats(stored, capsys, tmp_path):
    from icae_tui.cli.runs import write_run_report
    from icae_tui.results import report

    if not hasattr(report, "render_report"):
        pytest.skip("the report module renders JSON only")
    home, ids = stored
    store = RunStore(home / "runs.db")
    events = store.events(ids["mini", "partial"])
    store.close()
    markdown = report.render_report(events, "md")
    assert icae(home, "runs", "export", ids["mini", "partial"], "--format", "md") == 0
    assert capsys.readouterr().out == f"{markdown}\n"
    assert icae(home, "runs", "export", ids["mini", "partial"], "-o", str(tmp_path / "r.md")) == 0
    assert (tmp_path / "r.md").read_text() == markdown  # the suffix chose the format
    write_run_report(events, tmp_path / "run.html")  # `icae run --report run.html`
    assert (tmp_path / "run.html").read_text() == report.render_report(events, "html")
    write_run_report(events, tmp_path / "run.xml")
    assert (tmp_path / "run.xml").read_bytes() == report.render_report(events, "xml")


def test_a_run_writes_its_report_in_the_format_its_suffix_names(tmp_path, monkeypatch, capsys):
    from icae_tui.results import report

    if not hasattr(report, "render_report"):
        pytest.skip("the report module renders JSON only")
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    path = tmp_path / "out" / "mini.md"
    argv = ["--home", str(tmp_path), "--tasks", str(FIXTURE_TASKS), "--engine", "processes",
            "run", "--task", "mini", "--agent", "scripted:good", "--report", str(path)]  # fmt: skip
    assert main(argv) == 0
    assert f"report: {path}" in capsys.readouterr().out
    store = RunStore(tmp_path / "runs.db")
    (row,) = store.runs()
    events = store.events(row.run_id)
    store.close()
    assert path.read_text() == report.render_report(events, "md")


# --- rescore ----------------------------------------------------------------------------------


def stored_events(home: Path, run_id: str):
    store = RunStore(home / "runs.db")
    try:
        return store.events(run_id)
    finally:
        store.close()


def test_rescoring_moves_fm_exactly_where_the_stored_fm_score_says(stored):
    home, ids = stored
    events = stored_events(home, ids["wordfreq", "partial"])
    cases = {e.result.case_id: e.result for e in events if isinstance(e, CaseFinished)}
    near = {c: r.fm_score for c, r in cases.items() if r.sp and not r.em}
    assert near == WORDFREQ_NEAR
    at_0, at_1 = rescore(events, 0.0), rescore(events, 1.0)
    assert sorted(o.case_id for o, _ in at_0.changed) == sorted(set(WORDFREQ_NEAR) - {"hidden/top#5"})
    assert all(n.fm and not o.fm for o, n in at_0.changed)
    assert [(o.case_id, o.fm, n.fm) for o, n in at_1.changed] == [("hidden/top#5", True, False)]
    # FM's rate: at 0 every counted case with SP (42 of 56), at 1 those equal (EM's 33)
    assert at_0.new_score.rates["fm"] == round(42 / 56, 4)
    assert at_1.new_score.rates["fm"] == at_1.new_score.rates["em"] == round(33 / 56, 4)
    assert at_0.old_score.rates["fm"] == round(34 / 56, 4) and not at_0.stored_differs
    for r in (at_0, at_1):  # verdicts, passes and every other figure stay
        assert r.new_score.overall == r.old_score.overall
        assert {k: v for k, v in r.new_score.rates.items() if k != "fm"} == {
            k: v for k, v in r.old_score.rates.items() if k != "fm"
        }
    assert at_0.implied_tau() == (0.7647, 0.8636)  # the task's 0.8 lies there


def test_rescoring_mini_partial_and_a_run_without_fm(stored):
    home, ids = stored
    partial = stored_events(home, ids["mini", "partial"])
    at_0 = rescore(partial, 0.0)
    # ops#2 has fm_score 1.0 but not SP: its FM stays 0
    assert [o.case_id for o, _ in at_0.changed] == ["hidden/ops#0", "enhanced/edge#1"]
    assert at_0.new_score.rates["fm"] == 0.8 and at_0.old_score.rates["fm"] == 0.4
    assert rescore(partial, 1.0).changed == []
    broken = rescore(stored_events(home, ids["mini", "broken"]), 0.0)
    assert broken.changed == [] and broken.new_score.overall == 0.0  # no case reached FM


def test_rescore_on_the_command_line_stores_nothing_unless_saved(stored, capsys, tmp_path):
    home, ids = stored
    copy = tmp_path / "home"
    copy.mkdir()
    with sqlite3.connect(home / "runs.db") as src, sqlite3.connect(copy / "runs.db") as dst:
        src.backup(dst)
    run_id = ids["mini", "partial"]
    store = RunStore(copy / "runs.db")
    runs_before = len(store.runs())
    store.close()
    assert icae(copy, "runs", "rescore", run_id, "--fm-threshold", "0") == 0
    out = capsys.readouterr().out
    assert "FM threshold τ = 0 (the task's now: 0.8;" in out
    assert "cases whose FM changes: 2" in out
    assert "  hidden/ops#0" in out and "fm_score 0.1429  FM 0 → 1" in out
    assert "  FM                       40.0%   80.0%   +40.0" in out
    assert "  overall                  40.0%   40.0%    +0.0" in out
    store = RunStore(copy / "runs.db")
    assert len(store.runs()) == runs_before  # nothing stored
    store.close()
    assert icae(copy, "runs", "rescore", run_id, "--fm-threshold", "0", "--save") == 0
    saved = capsys.readouterr().out.splitlines()[-1]
    assert saved.startswith("saved as run ") and saved.endswith(f"(the original {run_id} is unchanged)")
    new_id = saved.split()[3]
    store = RunStore(copy / "runs.db")
    row, original = store.run(new_id), store.run(run_id)
    events, before = store.events(new_id), store.events(run_id)
    store.close()
    assert row is not None and original is not None
    assert (row.task_id, row.agent, row.status, row.overall) == ("mini", "scripted:partial",
                                                                 "completed", 0.4)  # fmt: skip
    assert [type(e) for e in events if not isinstance(e, Progress)] == [
        type(e) for e in before if not isinstance(e, Progress)
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    notes = [e.message for e in events if isinstance(e, Progress)]
    assert any(f"re-scored from run {run_id}: FM threshold τ = 0" in n for n in notes)
    assert summary(copy, new_id).score.rates["fm"] == 0.8
    assert summary(copy, run_id).score.rates["fm"] == 0.4  # the original as it was
    # the saved run compares with its original like any run of the task: no flip, FM moved
    assert icae(copy, "runs", "compare", run_id, new_id) == 0
    out = capsys.readouterr().out
    assert "0 pass → fail, 0 fail → pass, 6 unchanged" in out
    assert "  FM                       40.0%   80.0%   +40.0" in out
    assert f"  re-scored from run {run_id}: FM threshold τ = 0" in out  # under B's line
    assert icae(copy, "runs", "show", new_id) == 0
    assert f"note       re-scored from run {run_id}: FM threshold τ = 0" in capsys.readouterr().out
    # pairing two agents passes over the saved copy (it may be at another τ)
    argv = ["--agent", "scripted:partial", "--agent", "scripted:good", "--task", "mini"]
    assert icae(copy, "runs", "compare", *argv) == 0
    out = capsys.readouterr().out
    assert f"A {run_id}" in out and new_id not in out


def test_rescore_errors(stored, capsys):
    home, ids = stored
    assert icae(home, "runs", "rescore", "nope", "--fm-threshold", "0.5") == 2
    assert capsys.readouterr().err == "error: no stored run 'nope' (see `icae runs`)\n"
    with pytest.raises(SystemExit):
        icae(home, "runs", "rescore", ids["mini", "good"], "--fm-threshold", "1.5")
    assert "must be between 0 and 1" in capsys.readouterr().err
    # wordfreq is not in the fixture tasks: its τ is unknown without --fm-threshold
    assert icae(home, "runs", "rescore", ids["wordfreq", "good"]) == 2
    assert "is not in the catalog: give --fm-threshold" in capsys.readouterr().err
