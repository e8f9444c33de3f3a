"""`icae tasks check`'s data checks and its command line (icae_tui/catalog/check.py, cli/root.py), with
no engine: the oracle's part is tests/integration/test_tasks_check.py."""

from __future__ import annotations

import json
import shutil
from typing import Any, cast

from icae_tui.catalog.check import (
    Kind,
    check_tasks,
    data_problems,
    image_problems,
    load_problem,
    summary_line,
    task_line,
)
from icae_tui.catalog.loader import load_catalog
from icae_tui.cli.root import check_names_as_options, main
from icae_tui.errors import ImageBuildError
from icae_tui.sandbox.base import Sandbox, TaskImages
from tests.task_copies import copy_mini, edit_toml, load_mini


def lines(problems) -> list[str]:
    return sorted(p.line() for p in problems)


def test_the_fixture_task_has_no_data_problem(fixture_catalog):
    assert data_problems(fixture_catalog.tasks["mini"]) == []


def test_records_cases_fixtures_and_recipes_are_checked(tmp_path):
    folder = copy_mini(tmp_path)
    records = folder / "user_agent" / "L1.json"
    data = json.loads(records.read_text())
    data["oracle_data"]["hidden_constraints"][1]["oracle_response"] = "  "
    data["oracle_data"]["hidden_constraints"][1]["trigger_keywords"].append("")
    records.write_text(json.dumps(data))
    (folder / "cases" / "enhanced" / "more.json").write_text(json.dumps({"cases": [
        {"input": {"op": "upper", "text": "a"}, "files": {"a": "x", "a/b": "y", "c//d": "z"}},
        {"expected_output": "no input\n"},
    ]}))  # fmt: skip
    shutil.rmtree(folder / "oracle")
    problems = data_problems(load_mini(folder))
    assert all(p.kind is Kind.DATA for p in problems)
    assert lines(problems) == [
        "mini: cases/enhanced/more.json: field 'cases[0].files.a/b': inside 'a', which is a "
        "fixture file",
        "mini: cases/enhanced/more.json: field 'cases[0].files.c//d': an empty path part",
        "mini: cases/enhanced/more.json: field 'cases[1].input': missing: a dispatcher task's "
        "case sends its input as JSON",
        "mini: oracle/: missing: [oracle] needs the golden code here (or a pinned registry "
        "package in [oracle] package)",
        "mini: user_agent/L1.json: field 'oracle_data.hidden_constraints[1].oracle_response': "
        "empty: nothing to reveal",
        "mini: user_agent/L1.json: field 'oracle_data.hidden_constraints[1].trigger_keywords[2]'"
        ": empty",
    ]


def test_a_pinned_package_is_the_oracles_code_and_needs_no_oracle_folder(tmp_path):
    """Issue 38 item 4: `[oracle] package` installs the oracle at image build; oracle/ holds
    nothing then. A task with neither is still refused."""
    folder = copy_mini(tmp_path)
    shutil.rmtree(folder / "oracle")
    edit_toml(folder, "[oracle]\n", '[oracle]\npackage = "pip:mini-tool==1.0.2"\n')
    assert data_problems(load_mini(folder)) == []
    edit_toml(folder, 'package = "pip:mini-tool==1.0.2"\n', "")
    assert lines(data_problems(load_mini(folder))) == [
        "mini: oracle/: missing: [oracle] needs the golden code here (or a pinned registry "
        "package in [oracle] package)",
    ]


def test_a_command_task_case_needs_its_command(tmp_path):
    folder = copy_mini(tmp_path)
    edit_toml(folder, 'kind = "dispatcher"', 'kind = "command"')
    problems = data_problems(load_mini(folder))
    assert problems and all(p.field.endswith(".command") for p in problems)
    assert problems[0].line().startswith("mini: cases/public/upper.json: field 'cases[0].command'")


def test_a_task_that_does_not_load_is_its_load_error_by_file(tmp_path):
    folder = copy_mini(tmp_path)
    (folder / "user_agent" / "L3.json").write_text("{")
    catalog = load_catalog(folder.parent)
    [problem] = [load_problem(err, folder.parent) for err in catalog.errors]
    assert problem.task == "mini" and problem.file == "user_agent/L3.json"
    assert problem.line().startswith("mini: user_agent/L3.json: invalid JSON at line 1")


def test_the_lines_a_person_acts_on(tmp_path):
    assert task_line("semver", [], 120) == (
        "semver: ok — data sound; 120 cases run twice on the oracle, deterministic and equal "
        "to their stored outputs"
    )
    folder = copy_mini(tmp_path)
    shutil.rmtree(folder / "oracle")
    problems = data_problems(load_mini(folder))
    assert task_line("mini", problems, 6) == "mini: 1 problem (1 data)"
    assert summary_line(2, {"semver": [], "mini": problems}) == (
        "checked 2 tasks: 1 sound, 1 with problems (1 data); fix each file and field above, "
        "then check again"
    )
    assert summary_line(1, {"semver": []}) == "checked 1 task: all sound"


def test_check_takes_task_names_as_its_positionals():
    assert check_names_as_options(["tasks", "check", "a", "b"]) == [
        "tasks", "check", "--task", "a", "--task", "b",
    ]  # fmt: skip
    assert check_names_as_options(["--tasks", "tasks", "tasks", "check", "a"]) == [
        "--tasks", "tasks", "tasks", "check", "--task", "a",
    ]  # fmt: skip
    assert check_names_as_options(["--tasks=x", "tasks", "check", "--task", "a", "b"]) == [
        "--tasks=x", "tasks", "check", "--task", "a", "--task", "b",
    ]  # fmt: skip
    for untouched in (["tasks", "import", "icae-eval", "p"], ["tasks"], ["run", "--task", "x"]):
        assert check_names_as_options(untouched) == untouched


def test_an_unknown_task_is_bad_usage(tmp_path, capsys):
    copy_mini(tmp_path)
    status = main(["--tasks", str(tmp_path / "tasks"), "tasks", "check", "mini", "nosuch"])
    assert status == 2
    assert "no such task(s)" in capsys.readouterr().err


class NoRegistry:
    """An engine that has no image but the Debian bases and reaches no registry: a named base
    cannot be had, as here with Docker Hub. Building a task's images would be a bug."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def base_image(self, progress: Any = None, *, name: str | None = None) -> str:
        self.asked.append(str(name))
        raise ImageBuildError(f"image {name!r} is not on the engine and could not be pulled "
                              "(no registry)")  # fmt: skip

    async def task_images(self, task: Any, progress: Any = None) -> TaskImages:
        raise AssertionError(f"{task.id}: its image cannot be had: nothing is built")


async def test_a_task_whose_base_image_cannot_be_had_fails_naming_the_field(tmp_path):
    folder = copy_mini(tmp_path)
    edit_toml(folder, 'language = "python"', 'language = "ruby"')
    edit_toml(folder, "[interface]", '[image]\nbase = "ruby:3.2"\n\n[interface]')
    engine, said = NoRegistry(), []
    status = await check_tasks(cast(Sandbox, engine), [load_mini(folder)], {}, said.append)
    assert status == 1 and engine.asked == ["ruby:3.2"]
    assert said == [
        "mini: 1 problem (1 image)",
        "  mini: task.toml: field 'image.base': image 'ruby:3.2' is not on the engine and could "
        "not be pulled (no registry)",
        "checked 1 task: 0 sound, 1 with problems (1 image); fix each file and field above, "
        "then check again",
    ]


async def test_a_language_no_registry_here_provides_fails_with_what_to_supply(tmp_path):
    folder = copy_mini(tmp_path)
    edit_toml(folder, 'language = "python"', 'language = "Kotlin"')
    task = load_mini(folder)  # it loads: only its image cannot be had
    engine = NoRegistry()
    [problem] = await image_problems(cast(Sandbox, engine), task)
    assert engine.asked == []  # the Debian base: nothing to ask the engine
    assert (problem.kind, problem.file, problem.field) == (Kind.IMAGE, "task.toml", "language")
    assert problem.line().startswith(
        "mini: task.toml: field 'language': language kotlin (1.9.25 in ICAE-EVAL) is not "
        "provided here: Debian trixie's kotlin is 1.3.31"
    )
    assert "`docker load -i FILE.tar` an image such as kotlin:1.9.25" in problem.message
    said: list[str] = []
    assert await check_tasks(cast(Sandbox, engine), [task], {}, said.append) == 1
    assert said[0] == "mini: 1 problem (1 image)"


async def test_a_task_on_the_debian_base_asks_the_engine_nothing(fixture_catalog):
    engine = NoRegistry()
    assert await image_problems(cast(Sandbox, engine), fixture_catalog.tasks["mini"]) == []
    assert engine.asked == []
