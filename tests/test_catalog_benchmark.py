"""benchmarks/catalog.py's folders are real tasks: each copy loads with its own id and no
error, and the benchmark prints both figures. No time is asserted (speed is the benchmark's)."""

from __future__ import annotations

import subprocess
import sys

from icae_tui.catalog.loader import load_catalog
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import catalog as benchmark  # noqa: E402  (benchmarks/catalog.py)


def test_the_generated_folders_load_as_distinct_tasks(tmp_path):
    folder = benchmark.write_catalog(tmp_path / "six", 6)
    loaded = load_catalog(folder)
    assert loaded.errors == []
    assert sorted(loaded.tasks) == [
        "semver-000", "semver-003", "tidy-001", "tidy-004", "wordfreq-002", "wordfreq-005",
    ]  # fmt: skip
    assert loaded.tasks["tidy-004"].cases  # the sample's cases, records and solutions too
    assert (
        loaded.tasks["tidy-004"].solutions == load_catalog(ROOT / "tasks").tasks["tidy"].solutions
    )


def test_the_benchmark_prints_the_small_and_the_large_figure():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "catalog.py"), "--tasks", "4", "--small", "2",
         "--repeat", "1"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = done.stdout.splitlines()[1:]
    assert len(rows) == 3 and all("2 tasks" in r and "4 tasks" in r for r in rows), done.stdout
