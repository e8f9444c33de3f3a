"""Time to list a catalog of 500 task folders, printed beside the figure for 5, in one process.

    python benchmarks/catalog.py [--tasks 500] [--small 5] [--repeat 3]

The folders are copies of the sample tasks (`tasks/semver`, `tidy`, `wordfreq` in turn: their
task.toml with a new id, PRDs, user-agent records, cases and solutions; not their oracle or
recordings, which the catalog does not read), written once to a temporary folder. Each figure
is the best of `--repeat` loads of the whole folder with `icae_tui.catalog.loader.load_catalog`, in
wall-clock and CPU seconds (on a busy machine the CPU figure is the steadier), three ways:

- listed: the folders unchanged since the index last saw them (icae_tui/catalog/index.py) —
  what every start of the console and `icae tasks` after the first costs;
- first load: no index yet — every task read and validated in full, the index written;
- baseline, no index: every load validates everything (the catalog before the index).

Nothing is asserted: a figure to read, not a test. The index goes to a temporary cache folder.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icae_tui.catalog import index as catalog_index  # noqa: E402
from icae_tui.catalog import loader as catalog  # noqa: E402

SAMPLES = ("semver", "tidy", "wordfreq")
PARTS = ("prd", "user_agent", "cases", "solutions")


def write_catalog(folder: Path, n: int) -> Path:
    """n task folders under folder/: copies of the sample tasks, each with its own id."""
    folder.mkdir(parents=True)
    for i in range(n):
        source = ROOT / "tasks" / SAMPLES[i % len(SAMPLES)]
        task = folder / f"{source.name}-{i:03d}"
        task.mkdir()
        for part in PARTS:
            shutil.copytree(source / part, task / part)
        toml = (source / "task.toml").read_text(encoding="utf-8")
        toml = re.sub(r'^id = ".*"$', f'id = "{task.name}"', toml, count=1, flags=re.MULTILINE)
        (task / "task.toml").write_text(toml, encoding="utf-8")
    return folder


def best_load(folder: Path, repeat: int, *, index: bool, fresh: bool) -> tuple[float, float, int]:
    """The best wall-clock and CPU seconds of `repeat` loads, and how many tasks listed;
    `fresh`: the index is removed before each load (a first load)."""
    walls, cpus, listed = [], [], 0
    for _ in range(repeat):
        if fresh:
            catalog_index.index_path(folder).unlink(missing_ok=True)
        wall, cpu = time.perf_counter(), time.process_time()
        result = catalog.load_catalog(folder, index=index)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if result.errors:
            raise SystemExit(f"{folder}: {result.errors[0]}")
        listed = len(result.cards)
    return min(walls), min(cpus), listed


WAYS = (  # label, index, fresh
    ("listed (index, unchanged)", True, False),
    ("first load (writes index)", True, True),
    ("baseline: no index", False, False),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--small", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        folders = {n: write_catalog(Path(tmp) / str(n), n) for n in (args.small, args.tasks)}
        for folder in folders.values():
            catalog.load_catalog(folder)  # the index of the unchanged folders
        print(f"load_catalog, best of {args.repeat} (wall s / cpu s):")
        for label, index, fresh in WAYS:
            figures = []
            for folder in folders.values():
                wall, cpu, listed = best_load(folder, args.repeat, index=index, fresh=fresh)
                figures.append(f"{listed:>4} tasks {wall:7.3f} / {cpu:7.3f}")
            print(f"  {label:<28} " + "   ".join(figures))


if __name__ == "__main__":
    main()
