"""`benchmarks/user_fidelity.py --taught`: the dev half's false fallbacks taught through the
teachings file (pending, accepted, loaded as a run loads them), and the test half's figures
before and after printed side by side. The test half's recall must not fall (the issue's
bar); every other figure is the benchmark's to print."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import user_fidelity as uf  # noqa: E402


def test_teaching_the_dev_misses_answers_them_and_the_test_recall_does_not_fall(capsys):
    sets = uf.load_sets()
    overall = uf.compare_taught(sets)
    out = capsys.readouterr().out
    assert out.startswith("== taught: ") and "test half (never taught)" in out
    assert sum(line.startswith("ALL ") for line in out.splitlines()) == 2
    test_before, test_after = overall["test"]
    assert test_after.right >= test_before.right  # recall on the half never taught
    dev_before, dev_after = overall["dev"]
    assert dev_after.false_fallback < dev_before.false_fallback  # the taught ones answered
    assert dev_after.right > dev_before.right


def test_the_taught_mode_runs_from_the_command_line(capsys):
    assert uf.main(["--taught", "--sets", "semver,tidy"]) == 0
    out = capsys.readouterr().out
    assert "before: recall" in out and "after: recall" in out
    assert [line.split()[0] for line in out.splitlines() if "before:" in line and
            not line.startswith("set")] == ["semver", "tidy", "ALL", "semver", "tidy", "ALL"]  # fmt: skip
