"""`icae tasks import cli-tool-bench` on the real engine: the tree the test writes
(tests/importers/ctb_tree.py) imported from the command line, each tool's fuzzer run in a
box with the fixed seed; then runs of both tasks as any run. The oracle of acme/moo is the
pinned package pip:cowsay==6.1, installed when its oracle image is built (the one build step
that reaches the registry); acme/revtool's is a local checkout. A delivery that is the
oracle itself scores 100 % on each; one that differs fails the cases it should."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from icae_tui.catalog import load_catalog
from icae_tui.cli import main
from icae_tui.domain.results import Verdict
from icae_tui.domain.states import RunStatus
from icae_tui.run import Run, RunConfig
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import ensure_task_images
from tests.importers.ctb_tree import COWSAY, MOO, REV, REVTOOL, build_tree, checkout
from tests.task_copies import add_solution

pytestmark = pytest.mark.docker


@pytest.fixture
def imported(tmp_path, capsys):
    tree, tasks = build_tree(tmp_path / "tree"), tmp_path / "tasks"
    local = checkout(tmp_path / "checkouts" / "revtool")
    argv = ["--tasks", str(tasks), "tasks", "import", "cli-tool-bench", str(tree),
            "--oracle", f"{MOO}={COWSAY}", "--oracle", f"{REV}={local}"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "ctb-acme-moo (acme/moo): created · cases differential against its golden repository",
        "  note: run_differential_test/repo/acme/moo/start.py: 9 cases in 6 files, generated "
        "with seed 20260101; oracle: pip:cowsay==6.1",
        "ctb-acme-revtool (acme/revtool): created · cases differential against its golden "
        "repository",
        "  note: run_differential_test/repo/acme/revtool/start.py: 9 cases in 6 files, generated "
        f"with seed 20260101; oracle: checkout:{local}",
        f"2 tools: 2 imported into {tasks} (2 created, 0 updated, 0 unchanged), 0 not imported",
    ]
    before = {p: p.read_bytes() for p in tasks.rglob("*") if p.is_file()}
    assert main(argv) == 0  # the same seed: the same cases, no file changed
    assert "(0 created, 0 updated, 2 unchanged)" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in tasks.rglob("*") if p.is_file()} == before
    return tasks


async def _run(tasks, task_id, agent, store):
    run = Run(RunConfig(task=load_catalog(tasks).tasks[task_id], agent=agent, pace_s=0), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    return outcome


def _solution(folder, name, files: dict[str, str], tool: str) -> None:
    steps = [{"write": {"path": rel, "content": text}} for rel, text in files.items()]
    (folder / "solutions").mkdir(exist_ok=True)
    add_solution(folder, name, [*steps, {"run": f"chmod +x {tool}"}, {"submit": "done"}])


async def _cowsay_of_the_oracle(tasks) -> dict[str, str]:
    """The installed package's files, read from the oracle image: the oracle itself."""
    docker = await connect()
    try:
        images = await ensure_task_images(docker, load_catalog(tasks).tasks["ctb-acme-moo"])
    finally:
        await docker.close()
    script = ("import cowsay, json, pathlib; root = pathlib.Path(cowsay.__file__).parent; "
              "print(json.dumps({p.relative_to(root.parent).as_posix(): p.read_text() "
              "for p in root.rglob('*.py')}))")  # fmt: skip
    out = subprocess.run(["docker", "run", "--rm", "--network", "none", images.oracle,
                          "python3", "-c", script], capture_output=True, check=True, text=True)  # fmt: skip
    files = {f"lib/{rel}": text for rel, text in json.loads(out.stdout).items()}
    files["cowsay"] = ("#!/usr/bin/env python3\nimport sys\nsys.path.insert(0, '/workspace/lib')\n"
                       "from cowsay.__main__ import cli\nsys.exit(cli())\n")  # fmt: skip
    return files


async def test_the_pinned_package_oracle_itself_scores_100(imported, store):
    toml = (imported / "ctb-acme-moo" / "task.toml").read_text()
    assert 'package = "pip:cowsay==6.1"' in toml and 'oracle_source = "pip:cowsay==6.1"' in toml
    _solution(imported / "ctb-acme-moo", "oracle", await _cowsay_of_the_oracle(imported), "cowsay")
    outcome = await _run(imported, "ctb-acme-moo", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and len(outcome.results) == 9
    said = next(r for r in outcome.results if r.case_id == "public/cowsay_t_text#0")
    public = imported / "ctb-acme-moo" / "cases" / "public" / "cowsay_t_text.json"
    text = json.loads(public.read_text())["cases"][0]["command"].split("'")[1]
    assert f"| {text} |" in said.oracle.stdout and said.oracle.stdout == said.delivery.stdout


async def test_the_local_checkout_oracle_itself_scores_100(imported, store):
    folder = imported / "ctb-acme-revtool"
    assert (folder / "oracle" / "revtool.py").read_text() == REVTOOL
    assert not (folder / "oracle" / ".git").exists()
    _solution(folder, "oracle", {"revtool": REVTOOL}, "revtool")
    outcome = await _run(imported, "ctb-acme-revtool", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and len(outcome.results) == 9
    upper = next(r for r in outcome.results if r.case_id == "public/revtool_upper_text#0")
    assert upper.oracle.stdout == upper.delivery.stdout == "STRASSE\n"


async def test_a_delivery_that_differs_fails_what_it_should(imported, store):
    folder = imported / "ctb-acme-revtool"
    wrong = REVTOOL.replace('f.write(argv[2][::-1] + "\\n")', "f.write(argv[2])")
    assert wrong != REVTOOL
    _solution(folder, "wrong", {"revtool": wrong}, "revtool")
    outcome = await _run(imported, "ctb-acme-revtool", "scripted:wrong", store)
    failed = {r.case_id: r.verdict for r in outcome.results if not r.passed}
    saves = [json.loads(p.read_text())["cases"] for p in folder.glob("cases/*/revtool_save*.json")]
    assert len(failed) == sum(map(len, saves)) == 3
    assert all(case_id.split("/")[1].startswith("revtool_save") for case_id in failed)
    assert set(failed.values()) == {Verdict.SIDE_EFFECTS}
    assert yaml.safe_load((folder / "solutions" / "wrong.yaml").read_text())["steps"]
