"""Loading tasks (icae_tui/catalog/loader.py): the fixture and bundled tasks, errors named with their
file, line and field, budgets; a task's solutions (those that do not parse are errors, not
choices; names and links stay inside the task's folder)."""

import json
import shutil

import pytest

from icae_tui.agents.base import AgentError
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.catalog.loader import load_catalog
from icae_tui.cli import main
from tests.conftest import FIXTURE_TASKS
from tests.task_copies import copy_mini


def _copy_fixture(tmp_path, name="mini"):
    dest = tmp_path / name
    shutil.copytree(FIXTURE_TASKS / "mini", dest)
    if name != "mini":
        toml = dest / "task.toml"
        toml.write_text(toml.read_text().replace('id = "mini"', f'id = "{name}"'))
    return dest


def test_fixture_task_loads(fixture_catalog):
    assert fixture_catalog.errors == []
    task = fixture_catalog.tasks["mini"]
    assert [c.id for c in task.cases_in("public")] == ["public/upper#0"]
    assert len(task.cases_in("hidden")) == 3
    assert task.solutions == ["broken", "good", "partial"]
    # the dispatcher's `op` is the default command pattern
    assert {c.pattern for c in task.cases_in("hidden")} == {"count", "nope", "note"}


def test_bundled_tasks_load_without_errors(bundled_catalog):
    assert bundled_catalog.errors == []
    assert {"semver", "tidy"} <= set(bundled_catalog.tasks)


def test_malformed_toml_field_is_named_and_others_still_load(tmp_path):
    _copy_fixture(tmp_path, "mini")
    bad = _copy_fixture(tmp_path, "bad")
    toml = bad / "task.toml"
    toml.write_text(toml.read_text().replace("budget = 3", 'budget = "lots"'))
    catalog = load_catalog(tmp_path)
    assert list(catalog.tasks) == ["mini"]
    [err] = catalog.errors
    assert str(err.path).endswith("bad/task.toml")
    assert "budget" in err.message


def test_invalid_json_names_file_and_line(tmp_path):
    bad = _copy_fixture(tmp_path, "broken1")
    (bad / "cases" / "hidden" / "ops.json").write_text('{"description": "x",\n "cases": [}')
    [err] = load_catalog(tmp_path).errors
    assert str(err.path).endswith("cases/hidden/ops.json")
    assert "line 2" in err.message


def test_case_field_error_names_the_case(tmp_path):
    bad = _copy_fixture(tmp_path, "broken2")
    path = bad / "cases" / "hidden" / "ops.json"
    data = json.loads(path.read_text())
    data["cases"][1]["files"] = {"../escape.txt": "x"}
    path.write_text(json.dumps(data))
    [err] = load_catalog(tmp_path).errors
    assert "cases.1.files" in err.message


def test_missing_prd_and_unknown_key(tmp_path):
    a = _copy_fixture(tmp_path, "noprd")
    (a / "prd" / "L2.md").unlink()
    b = _copy_fixture(tmp_path, "typo")
    toml = b / "task.toml"
    toml.write_text(toml.read_text().replace("[cases]", "[cases]\ntimout_s = 3"))
    errors = load_catalog(tmp_path).errors
    by_task = {next(p for p in e.path.parts if p in ("noprd", "typo")): e for e in errors}
    assert "L2" in by_task["noprd"].message
    assert "timout_s" in by_task["typo"].message


def test_budget_per_level_and_per_run(tmp_path, store):
    from icae_tui.domain.task import Level
    from icae_tui.runs.config import RunConfig
    from icae_tui.runs.run import Run

    root = _copy_fixture(tmp_path, "mini")
    toml = root / "task.toml"
    toml.write_text(
        toml.read_text().replace("budget = 3", "budget = 3\nlevel_budgets = { L1 = 5, ground = 1 }")
    )
    task = load_catalog(tmp_path).tasks["mini"]
    assert [task.budget_for(lv) for lv in Level] == [5, 3, 3, 1]
    assert Run(RunConfig(task=task, level=Level.L1), store).budget == 5
    assert Run(RunConfig(task=task, level=Level.L1, budget=2), store).budget == 2
    toml.write_text(toml.read_text().replace("ground = 1", "L9 = 1"))
    [err] = load_catalog(tmp_path).errors
    assert "level_budgets" in err.message


def test_missing_engine_is_one_clear_line_not_a_traceback(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    cmd = [sys.executable, "-m", "icae_tui", "--tasks", str(FIXTURE_TASKS), "--home", str(tmp_path),
           "run", "--task", "mini"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 1
    assert "Traceback" not in out.stdout + out.stderr
    assert f"Docker engine at unix://{tmp_path}/no-engine.sock is not answering" in out.stdout
    assert "run failed" in out.stdout and "report:" in out.stdout  # the failed run is stored


# --- a task's solutions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../../x/solutions/good", "../good", "/etc/passwd", "good/../good", ".hidden", ""]
)
def test_solution_names_stay_inside_the_task_folder(tmp_path, name):
    tasks = copy_mini(tmp_path).parent
    outside = tmp_path / "x" / "solutions"
    outside.mkdir(parents=True)
    shutil.copy(tasks / "mini" / "solutions" / "good.yaml", outside / "good.yaml")
    task = load_catalog(tasks).tasks["mini"]
    with pytest.raises(AgentError, match="no such solution"):
        ScriptedAgent.for_task(task, name)
    assert ScriptedAgent.for_task(task, "good").name == "scripted:good"


def test_a_solution_link_out_of_the_folder_is_refused(tmp_path):
    tasks = copy_mini(tmp_path).parent
    elsewhere = tmp_path / "elsewhere.yaml"
    shutil.copy(tasks / "mini" / "solutions" / "good.yaml", elsewhere)
    (tasks / "mini" / "solutions" / "linked.yaml").symlink_to(elsewhere)
    catalog = load_catalog(tasks)
    assert "linked" not in catalog.tasks["mini"].solutions
    with pytest.raises(AgentError, match="no such solution"):
        ScriptedAgent.for_task(catalog.tasks["mini"], "linked")


def test_solutions_that_do_not_parse_are_errors_not_choices(tmp_path, capsys):
    tasks = copy_mini(tmp_path).parent
    (tasks / "mini" / "solutions" / "mangled.yaml").write_text("steps: [unclosed\n")
    (tasks / "mini" / "solutions" / "empty.yaml").write_text("description: no steps\n")
    catalog = load_catalog(tasks)
    task = catalog.tasks["mini"]  # the task itself still loads
    assert task.solutions == ["broken", "good", "partial"]
    messages = sorted(str(e) for e in catalog.errors)
    assert len(messages) == 2
    assert messages[0].endswith("field 'steps': Field required") and "empty.yaml" in messages[0]
    assert "mangled.yaml: invalid YAML" in messages[1]
    assert main(["--tasks", str(tasks), "tasks"]) == 0
    out, err = capsys.readouterr()
    assert "solutions broken, good, partial" in out and "mangled" not in out
    assert "mangled.yaml: invalid YAML" in err
