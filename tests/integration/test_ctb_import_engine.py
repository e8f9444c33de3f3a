"""`icae tasks import cli-tool-bench` on the real engine: the tree the test writes
(tests/importers/ctb_tree.py) imported from the command line, each tool's fuzzer run in a
box with the fixed seed, each case's expected output its oracle's stdout (run in a box);
then runs of the tasks as any run. The oracle of acme/moo is the pinned package
pip:cowsay==6.1, acme/jsontool's the pinned npm package json@11.0.0, each installed when its
oracle image is built (the one build step that reaches the registry); acme/revtool's is a
local checkout. A delivery that is the oracle itself scores 100 % on each; one that differs
fails the cases it should; `icae tasks verify` finds every imported case sound, and says so
of a stored output that is not the oracle's."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from icae_tui.catalog.loader import load_catalog
from icae_tui.cli import main
from icae_tui.domain.results import Verdict
from icae_tui.domain.states import RunStatus
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import ensure_task_images
from tests.importers.ctb_tree import (
    BASE_ADAPTER,
    COWSAY,
    HEADER,
    JSON_NPM,
    JSONTOOL,
    MOO,
    REV,
    REVTOOL,
    build_tree,
    checkout,
)
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
        "ctb-acme-moo (acme/moo): created · cases differential against the pinned registry "
        "package cowsay==6.1",
        "  note: run_differential_test/repo/acme/moo/start.py: 9 cases in 6 files, generated "
        "with seed 20260101; oracle: pip:cowsay==6.1; expected outputs: its stdout, run once here",
        "ctb-acme-revtool (acme/revtool): created · cases differential against its golden "
        "repository",
        "  note: run_differential_test/repo/acme/revtool/start.py: 9 cases in 6 files, generated "
        f"with seed 20260101; oracle: checkout:{local}; expected outputs: its stdout, run once "
        "here",
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
    # what the package installed, locked at import; the run's oracle is built from exactly it
    assert 'locked = [\n  "pip:cowsay==6.1",\n]' in toml
    _solution(imported / "ctb-acme-moo", "oracle", await _cowsay_of_the_oracle(imported), "cowsay")
    outcome = await _run(imported, "ctb-acme-moo", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and len(outcome.results) == 9
    said = next(r for r in outcome.results if r.case_id == "public/cowsay_t_text#0")
    public = imported / "ctb-acme-moo" / "cases" / "public" / "cowsay_t_text.json"
    text = json.loads(public.read_text())["cases"][0]["command"].split("'")[1]
    assert f"| {text} |" in said.oracle.stdout and said.oracle.stdout == said.delivery.stdout


def test_verify_finds_the_imported_cases_sound_and_a_wrong_stored_output_wrong(
    imported, capsys
):
    folder = imported / "ctb-acme-revtool"
    public = folder / "cases" / "public" / "revtool_upper_text.json"
    stored = json.loads(public.read_text())
    assert stored["cases"][0]["expected_output"] == "STRASSE\n"  # the oracle's, at import
    saves = json.loads((folder / "cases" / "hidden" / "revtool_save_file_text.json").read_text())
    assert [c["expected_output"] for c in saves["cases"]] == [
        f"saved {len(c['command'].split(chr(39))[1])} characters\n" for c in saves["cases"]
    ]
    verify = ["--tasks", str(imported), "tasks", "verify", "--task", "ctb-acme-revtool"]
    assert main(verify) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ctb-acme-revtool: 9/9 cases sound (deterministic and equal to the stored expected_output)"
    ]
    stored["cases"][0]["expected_output"] = "Strasse\n"
    public.write_text(json.dumps(stored))
    assert main(verify) == 1
    assert capsys.readouterr().out.splitlines() == [
        "  ctb-acme-revtool public/revtool_upper_text#0: stored 'Strasse\\n', oracle 'STRASSE\\n'",
        "ctb-acme-revtool: 8/9 cases sound (deterministic and equal to the stored expected_output)",
    ]


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


async def test_the_adapters_sanitizer_masks_both_sides(imported, store):
    """revtool's adapter masks `saved N characters`: a delivery that counts otherwise is judged
    as CLI-Tool-Bench judges it, by what the sanitizer (run in its box) leaves."""
    folder = imported / "ctb-acme-revtool"
    counts = REVTOOL.replace('print(f"saved {len(argv[2])} characters")',
                             'print(f"saved {len(argv[2]) + 7} characters")')  # fmt: skip
    assert counts != REVTOOL
    _solution(folder, "counts", {"revtool": counts}, "revtool")
    outcome = await _run(imported, "ctb-acme-revtool", "scripted:counts", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    save = next(r for r in outcome.results if r.case_id.startswith("hidden/revtool_save"))
    assert save.oracle.stdout != save.delivery.stdout
    assert save.oracle.sanitized == save.delivery.sanitized == "saved [N] characters\n"


PYREV_START = (
    HEADER
    + """
class PyrevAdapter(BaseRepoAdapter):
    base_image = "python:latest"

    def install_oracle(self, container):
        cmd = "mkdir -p /repo && cd /repo && git clone https://github.com/acme/pyrev.git && cd pyrev && pip install ."
        container.exec_run(f"sh -c '{cmd}'")

    def install_agent(self, container, local_agent_path):
        raise NotImplementedError

    def generate_test_cases(self):
        return [TestCase(command=f"pyrev '{FuzzHelper.get_string()}'", category="pyrev <text>")
                for _ in range(CASES_PER_CATEGORY)]
"""
)
PYREV = "import sys\n\n\ndef main():\n    print(sys.argv[1][::-1])\n"
PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "pyrev"
version = "1.0"

[project.scripts]
pyrev = "pyrev:main"
"""


@pytest.fixture
def pyrev(tmp_path, capsys):
    """A tool whose adapter installs its checkout with `pip install .`, imported."""
    tree, tasks = tmp_path / "tree", tmp_path / "tasks"
    files = {"run_differential_test/BaseRepoAdapter.py": BASE_ADAPTER,
             "run_differential_test/repo/acme/pyrev/start.py": PYREV_START.replace("{per}", "3"),
             "agent_prompt/acme/pyrev/agent_prompt.txt": "**CLI Tool Name**: pyrev\n",
             "checkout/pyrev.py": PYREV, "checkout/pyproject.toml": PYPROJECT}  # fmt: skip
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    argv = ["--tasks", str(tasks), "tasks", "import", "cli-tool-bench", str(tree),
            "--oracle", f"acme/pyrev={tree / 'checkout'}"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().out
    return tasks


async def test_a_python_checkout_is_installed_with_pip_offline(pyrev, store):
    tasks = pyrev
    spec = load_catalog(tasks).tasks["ctb-acme-pyrev"].spec
    assert spec.image.packages == ["python3-pip", "python3-setuptools", "python3-wheel"]
    assert spec.oracle is not None and "--no-index --no-build-isolation" in spec.oracle.install[0]
    launcher = "#!/usr/bin/env python3\nimport sys\nsys.path.insert(0, '/workspace')\nfrom pyrev import main\nmain()\n"
    _solution(tasks / "ctb-acme-pyrev", "oracle", {"pyrev.py": PYREV, "pyrev": launcher}, "pyrev")
    outcome = await _run(tasks, "ctb-acme-pyrev", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and len(outcome.results) == 3


@pytest.fixture
def jsontool(tmp_path, capsys):
    """A Node tool whose oracle is a pinned npm package, imported."""
    tree, tasks = build_tree(tmp_path / "tree", tools=(JSONTOOL,)), tmp_path / "tasks"
    argv = ["--tasks", str(tasks), "tasks", "import", "cli-tool-bench", str(tree),
            "--oracle", f"{JSONTOOL}={JSON_NPM}"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.splitlines()[1] == (
        "  note: run_differential_test/repo/acme/jsontool/start.py: 6 cases in 4 files, "
        "generated with seed 20260101; oracle: npm:json@11.0.0; expected outputs: its stdout, "
        "run once here"
    )
    return tasks


async def _json_of_the_oracle(tasks) -> dict[str, str]:
    """The installed npm package's files, read from the oracle image: the oracle itself."""
    docker = await connect()
    try:
        images = await ensure_task_images(docker, load_catalog(tasks).tasks["ctb-acme-jsontool"])
    finally:
        await docker.close()
    script = ("import json, pathlib; main = pathlib.Path('/opt/icae-oracle-bin/json').resolve(); "
              "root = next(p for p in main.parents if (p / 'package.json').is_file()); "
              "print(json.dumps({'main': main.relative_to(root).as_posix(), 'files': {"
              "p.relative_to(root).as_posix(): p.read_text() for p in root.rglob('*') "
              "if p.is_file() and p.suffix in ('.js', '.json')}}))")  # fmt: skip
    out = subprocess.run(["docker", "run", "--rm", "--network", "none", images.oracle,
                          "python3", "-c", script], capture_output=True, check=True, text=True)  # fmt: skip
    found = json.loads(out.stdout)
    files = {f"lib/json/{rel}": text for rel, text in found["files"].items()}
    files["json"] = f'#!/bin/sh\nexec node /workspace/lib/json/{found["main"]} "$@"\n'
    return files


async def test_the_pinned_npm_package_oracle_itself_scores_100(jsontool, store):
    folder = jsontool / "ctb-acme-jsontool"
    spec = load_catalog(jsontool).tasks["ctb-acme-jsontool"].spec
    assert spec.oracle is not None and spec.oracle.package == JSON_NPM
    assert spec.origin is not None and spec.origin.oracle_source == JSON_NPM
    assert spec.language == "javascript" and spec.image.packages == ["npm"]
    assert spec.oracle is not None and spec.oracle.locked == [JSON_NPM]  # json has no deps
    lookups = json.loads((folder / "cases" / "hidden" / "json_f_file_key.json").read_text())
    for case in lookups["cases"]:  # the oracle answered each lookup with the drawn value
        doc = json.loads(case["files"]["doc.json"])
        key = case["command"].split("'")[1]
        assert case["expected_output"] == f"{doc[key]}\n"
    _solution(folder, "oracle", await _json_of_the_oracle(jsontool), "json")
    outcome = await _run(jsontool, "ctb-acme-jsontool", "scripted:oracle", store)
    assert [(r.case_id, r.reason) for r in outcome.results if not r.passed] == []
    assert outcome.score.overall == 1.0 and len(outcome.results) == 6
