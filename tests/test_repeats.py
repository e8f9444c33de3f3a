"""Repeats (icae_tui/results/repeats.py): the formulas pinned on hand-made numbers (mean, sample
standard deviation, min–max, the 95 % Student t-interval and t's quantiles), a run's figures,
the group's report, the store's repeat group, and `icae run --repeats 3` end to end with the
`processes` engine (no Docker)."""

from __future__ import annotations

import json
import math
import os
import sqlite3

import pytest

from icae_tui.cli import main
from icae_tui.domain.results import CaseResult, Split, Verdict
from icae_tui.evaluation.scoring import score
from icae_tui.results.repeats import (
    INTERVAL,
    Repeat,
    figures,
    spread,
    summary,
    summary_lines,
    summary_markdown,
    t_cdf,
    t_quantile,
)
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from tests.conftest import FIXTURE_TASKS


@pytest.mark.parametrize(
    ("df", "t"),  # t(0.975, df), from the published tables
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (29, 2.0452),
     (200, 1.9719)],
)  # fmt: skip
def test_t_quantiles_match_the_tables(df, t):
    assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-t, abs=1e-4)
    assert t_cdf(t_quantile(0.975, df), df) == pytest.approx(0.975, abs=1e-9)


def test_t_cdf_is_a_distribution():
    assert t_cdf(0.0, 5) == pytest.approx(0.5)
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/π
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_the_spread_of_three_repeats_by_hand():
    # 0.4, 0.6, 0.4: mean 1.4/3; deviations (−1/15, 2/15, −1/15); Σ² = 6/225; s = √(3/225)
    s = spread([0.4, 0.6, 0.4])
    assert s.n == 3
    assert s.mean == pytest.approx(1.4 / 3)
    assert s.sd == pytest.approx(math.sqrt(3 / 225))  # 0.11547
    assert (s.low, s.high) == (0.4, 0.6)
    half = 4.302653 * math.sqrt(3 / 225) / math.sqrt(3)  # t(0.975, 2) · s / √n = 0.28684
    assert s.ci == pytest.approx((1.4 / 3 - half, 1.4 / 3 + half), abs=1e-6)


def test_the_interval_is_cut_to_zero_and_one():
    s = spread([0.0, 1.0])  # mean 0.5, s = √0.5, half = 12.706 · √0.5 / √2 = 6.35
    assert s.sd == pytest.approx(math.sqrt(0.5))
    assert s.ci == (0.0, 1.0)


def test_equal_repeats_have_no_spread_and_one_repeat_no_interval():
    same = spread([0.8, 0.8, 0.8, 0.8])
    assert same.sd == 0.0 and same.ci == (0.8, 0.8)
    one = spread([0.3])
    assert (one.n, one.mean, one.sd, one.ci, one.low, one.high) == (1, 0.3, None, None, 0.3, 0.3)
    assert one.as_dict() == {"n": 1, "mean": 0.3, "sd": None, "min": 0.3, "max": 0.3, "ci": None}
    with pytest.raises(ValueError):
        spread([])


def _case(n: int, split: Split, pattern: str, ok: bool) -> CaseResult:
    return CaseResult(
        case_id=f"{split.value}/{pattern}#{n}", split=split, pattern=pattern, command="",
        verdict=Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER, reason="",
        metrics={"exec": 1.0, "sp": 1.0, "em": float(ok), "fm": float(ok)}, passed=ok,
    )  # fmt: skip


def _score(hidden_passed: int):
    """public 1/1; hidden: pattern a 2 cases, pattern b 2 cases, the first `hidden_passed` pass."""
    hidden = [_case(i, Split.HIDDEN, "ab"[i // 2], i < hidden_passed) for i in range(4)]
    results = [_case(0, Split.PUBLIC, "a", True), *hidden]
    return score(results, planned=len(results))


def test_a_runs_figures_are_overall_macro_each_tier_and_each_rate():
    figs = figures(_score(3))
    assert figs == {
        "overall": 0.75, "macro": 0.75,  # a 2/2, b 1/2
        "public": 1.0, "hidden": 0.75,
        "exec": 1.0, "sp": 1.0, "em": 0.75, "fm": 0.75,
    }  # fmt: skip
    assert figures(None) == {}
    assert figures(score([_case(0, Split.PUBLIC, "a", True)], planned=1)) == {}  # not measured


def test_the_group_report_gives_each_figure_over_the_repeats_that_measured_it():
    runs = [Repeat("r1", "completed", _score(1)), Repeat("r2", "completed", _score(3)),
            Repeat("r3", "failed", None), Repeat("r4", "completed", _score(2))]  # fmt: skip
    report = summary("g1", runs)
    assert (report["repeat_group"], report["repeats"], report["measured"]) == ("g1", 4, 3)
    assert report["interval"] == INTERVAL
    overall = report["figures"]["overall"]  # 0.25, 0.75, 0.5
    assert overall["n"] == 3 and overall["mean"] == pytest.approx(0.5)
    assert overall["sd"] == pytest.approx(0.25)  # √((0.0625 + 0.0625 + 0) / 2)
    assert (overall["min"], overall["max"]) == (0.25, 0.75)
    # half = t(0.975, 2) · 0.25 / √3 = 0.621 > 0.5: cut to [0, 1]
    assert 4.302653 * 0.25 / math.sqrt(3) > 0.5 and overall["ci"] == [0.0, 1.0]
    em = report["figures"]["em"]  # over the hidden cases: 0.25, 0.75, 0.5
    assert em["ci"] == [0.0, 1.0]
    hidden = report["figures"]["hidden"]
    assert hidden["mean"] == pytest.approx(0.5)
    assert report["figures"]["public"]["sd"] == 0.0
    assert [r["figures"].get("overall") for r in report["runs"]] == [0.25, 0.75, None, 0.5]
    assert [r["index"] for r in report["runs"]] == [1, 2, 3, 4]
    lines = summary_lines(report)
    assert lines[0].startswith("━━ repeats: 4 run(s) of one pairing, group g1 (3 measured)")
    assert any(t.strip().startswith("overall") and "mean 50.0%" in t and "sd 25.0 pts" in t
               and "min–max 25.0%–75.0%" in t and "(n=3)" in t for t in lines)  # fmt: skip
    assert any("#3 r3 failed: no figures" in t for t in lines)
    md = summary_markdown(report)
    assert "| overall | 3 | 50.0% | 25.0 pts | 25.0% | 75.0% |" in md


def test_one_repeat_has_no_interval():
    report = summary("g", [Repeat("r1", "completed", _score(2))])
    assert report["figures"]["overall"]["ci"] is None
    assert any("no interval (n=1)" in t for t in summary_lines(report))


def test_the_store_tags_a_repeat_group_and_old_stores_get_the_columns(tmp_path):
    path = tmp_path / "runs.db"
    old = sqlite3.connect(path)  # a store made before repeat groups
    old.executescript(
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, agent TEXT NOT NULL,"
        " level TEXT NOT NULL, responder TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'running',"
        " started_at REAL NOT NULL, finished_at REAL, overall REAL,"
        " error TEXT NOT NULL DEFAULT '');"
        "INSERT INTO runs (run_id, task_id, agent, level, responder, started_at)"
        " VALUES ('old', 'mini', 'a', 'L1', 'simulated', 1.0);"
    )
    old.close()
    store = RunStore(path)
    assert store.repeat_of("old") is None
    for i, run_id in enumerate(("b", "a"), start=1):
        store.create_run(run_id, "mini", "a", "L1", "simulated", 10.0 - i)
        store.set_repeat(run_id, "g", i)
    assert store.repeat_group("g") == ["b", "a"]  # in repeat order, not by start
    assert store.repeat_of("a") == ("g", 2)
    assert store.repeat_group("other") == []
    store.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")
def test_icae_run_repeats_three_times_and_reports_the_spread(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    path = tmp_path / "out" / "repeats.json"
    argv = ["--home", str(tmp_path), "--tasks", str(FIXTURE_TASKS), "--engine", "processes",
            "run", "--task", "mini", "--agent", "scripted:partial", "--repeats", "3",
            "--report", str(path)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert [f"━━ repeat {i} of 3" in out for i in (1, 2, 3)] == [True] * 3
    report = json.loads(path.read_text())
    store = RunStore(tmp_path / "runs.db")
    ids = store.repeat_group(report["repeat_group"])
    assert len(ids) == 3 and len(set(ids)) == 3  # each a stored run of its own
    assert [r["run_id"] for r in report["runs"]] == ids
    assert {store.run(i).status for i in ids} == {"completed"}
    assert [store.repeat_of(i) for i in ids] == [(report["repeat_group"], n) for n in (1, 2, 3)]
    store.close()
    # the scripted agent is deterministic: every repeat scores 40 %, no spread
    overall = report["figures"]["overall"]
    assert (overall["n"], overall["mean"], overall["sd"], overall["ci"]) == (
        3,
        0.4,
        0.0,
        [0.4, 0.4],
    )
    assert {"overall", "macro", "hidden", "exec", "em"} <= set(report["figures"])
    assert "overall" in out and "mean 40.0%" in out and "95% CI 40.0%–40.0%" in out
    assert f"report: {path}" in out
    assert main(["--home", str(tmp_path), "runs", "show", ids[1]]) == 0
    shown = capsys.readouterr().out
    assert f"repeat 2 of 3 (group {report['repeat_group']}): {' '.join(ids)}" in shown
    # the group's spread from the store, as the run printed it
    assert "mean 40.0%" in shown and "95% CI 40.0%–40.0%" in shown


def test_runs_list_puts_a_repeat_group_together_under_its_spread(tmp_path, capsys):
    store = RunStore(tmp_path / "runs.db")
    # started in this order: repeat 1, a run of another pairing, repeats 2–4 (4 failed)
    plan = [("r1", 1, 0.4, "completed"), ("other", None, 0.9, "completed"),
            ("r2", 2, 0.6, "completed"), ("r3", 3, 0.5, "completed"), ("r4", 4, None, "failed")]  # fmt: skip
    for t, (run_id, index, overall, status) in enumerate(plan):
        store.create_run(run_id, "mini", "scripted:partial", "L1", "simulated", 100.0 + t)
        store.finish_run(run_id, status, 200.0 + t, overall)
        if index is not None:
            store.set_repeat(run_id, "repeats-g", index)
    store.close()
    assert main(["--home", str(tmp_path), "runs", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # where the newest repeat stood, the group in repeat order; the other run after it
    assert [line.split()[0] for line in lines] == ["━━", "r1", "r2", "r3", "r4", "other"]
    # by hand over the three completed: mean 50 %, sd √((0.01 + 0.01 + 0) / 2) = 10 pts
    assert lines[0] == (
        "━━ repeats repeats-g: 4 run(s) · overall mean 50.0% ± 10.0 pts, 40.0–60.0% (n=3)"
    )
    assert [line.rsplit(None, 1)[-1] for line in lines[1:5]] == ["#1", "#2", "#3", "#4"]
    assert main(["--home", str(tmp_path), "runs", "list", "--limit", "2"]) == 0
    # the newest two: r4 (failed, no figure) and r3
    head = capsys.readouterr().out.splitlines()[0]
    assert head == "━━ repeats repeats-g: 4 run(s), 2 listed · overall mean 50.0%, 50.0–50.0% (n=1)"
