"""Issue 38 on CLI-Tool-Bench-shaped trees of our own (tests/importers/ctb_tree.py), the
fuzzer's box replaced by a runner answering as a box would. Item 6: the tool's name comes from
its repository (package metadata, pinned package, folder) and its prompt, the cases' command
words only confirming it; a system command (`cat FILE | tool` listed first on a tie) is never
taken unless the repository installs it; an ambiguous name is refused, its candidates named.
Item 8b: a pinned-package import's summary line names the package, not a golden repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.cli.importers import print_import
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.cli_tool_bench import Declared, FuzzCase, FuzzJob, FuzzRun
from icae_tui.importers.icae_eval import Outcome
from icae_tui.importers.problems import Severity
from tests.importers.ctb_tree import COWSAY, MOO, REV, build_tree, checkout

START = f"run_differential_test/repo/{REV}/start.py"


def _case(command: str, category: str) -> dict[str, object]:
    return {"command": command, "category": category, "prep_script": "", "mount_files": {},
            "env_vars": {}}  # fmt: skip


INSTALL = ["sh -c 'cd /repo && git clone https://github.com/acme/revtool.git && cd revtool "
           "&& install -m 755 revtool.py /usr/local/bin/revtool'"]  # fmt: skip


def _runner(cases: list[dict[str, object]]):
    def run(job: FuzzJob) -> FuzzRun:
        return FuzzRun(0, json.dumps({"base_image": "python:3.11", "install": INSTALL,
                                      "cases": cases}).encode())  # fmt: skip

    return run


# `cat FILE | revtool` first: a tie of categories' first words (cat 2, revtool 2)
TIE = [
    _case("cat /test_data/a | revtool upper -", "cat <file> | revtool upper -"),
    _case("cat /test_data/b | revtool upper -", "cat <file> | revtool upper -"),
    _case("revtool reverse x", "revtool reverse <text>"),
    _case("revtool reverse y", "revtool reverse <text>"),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "tree")


def _prompt(tree: Path, name: str) -> None:
    prompt = tree / "agent_prompt" / REV / "agent_prompt.txt"
    prompt.write_text(prompt.read_text().replace("**CLI Tool Name**: revtool",
                                                 f"**CLI Tool Name**: {name}"))  # fmt: skip


def _import(tree: Path, tmp_path: Path, cases, source: Path | None = None):
    source = source or checkout(tmp_path / "co")
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=_runner(cases), oracles={REV: str(source)},
                             only=[REV])  # fmt: skip
    (result,) = report.tasks
    return result, tasks, report


def test_a_tie_with_cat_listed_first_names_the_tool_after_its_repository(tree, tmp_path):
    result, tasks, _ = _import(tree, tmp_path, TIE)
    assert result.outcome is Outcome.CREATED, result.problems
    task = load_catalog(tasks).tasks["ctb-acme-revtool"]
    assert task.spec.interface.tool == "revtool"
    assert task.spec.oracle is not None and task.spec.oracle.entry == "/opt/icae-oracle-bin/revtool"
    assert "command -v revtool" in task.spec.oracle.install[-1]
    assert sorted(c.case.command for c in task.cases) == sorted(str(c["command"]) for c in TIE)
    assert not [p for p in result.problems if "CLI Tool Name" in p.field]


def test_the_repositorys_console_script_is_the_name_the_prompt_renames(tree, tmp_path):
    _prompt(tree, "flip")  # the prompt's own name, called by no case: the delivery's
    co = checkout(tmp_path / "co")
    (co / "pyproject.toml").write_text('[project]\nname = "rev-tools"\n\n'
                                       '[project.scripts]\nrt = "revtool:main"\n')  # fmt: skip
    cases = [_case("cat /test_data/a | rt upper -", "cat <file> | rt upper -"),
             _case("rt reverse x", "rt reverse <text>"), _case("rt reverse y", "rt reverse <text>")]  # fmt: skip
    result, tasks, _ = _import(tree, tmp_path, cases, co)
    assert result.outcome is Outcome.CREATED, result.problems
    task = load_catalog(tasks).tasks["ctb-acme-revtool"]
    assert task.spec.oracle is not None and task.spec.oracle.entry == "/opt/icae-oracle-bin/rt"
    assert sorted(c.case.command for c in task.cases) == [
        "cat /test_data/a | flip upper -", "flip reverse x", "flip reverse y"]  # fmt: skip


def test_a_name_only_the_commands_give_is_refused_naming_the_candidates(tree, tmp_path):
    _prompt(tree, "cat")  # a system command: the prompt alone cannot make the tool cat
    cases = [_case("cat /test_data/a | sort", "cat <file> | sort"), _case("cat x", "cat <x>")]
    result, tasks, _ = _import(tree, tmp_path, cases)
    assert result.outcome is Outcome.FAILED and not (tasks / "ctb-acme-revtool").exists()
    (error,) = [p for p in result.problems if p.severity is Severity.ERROR]
    assert str(error) == (
        f"error: {START}: field 'cases[].category': which command is the tool is not clear: the "
        "repository and prompt name it revtool, co, cat, and the cases call none of these "
        "(they call cat, sort)"
    )


def test_two_of_the_repositorys_scripts_called_are_ambiguous_unless_the_prompt_says(tree, tmp_path):
    co = checkout(tmp_path / "co")
    (co / "setup.cfg").write_text("[metadata]\nname = revtool\n\n[options.entry_points]\n"
                                  "console_scripts =\n    rt-up = revtool:up\n"
                                  "    rt-rev = revtool:rev\n")  # fmt: skip
    cases = [_case("rt-up x | rt-rev", "rt-up <text> | rt-rev"), _case("rt-rev y", "rt-rev <t>"),
             _case("rt-rev z", "rt-rev <t>")]  # fmt: skip
    result, _, _ = _import(tree, tmp_path, cases, co)
    assert result.outcome is Outcome.FAILED
    assert [p.message for p in result.problems if p.severity is Severity.ERROR] == [
        "which command is the tool is not clear: the cases call more than one of its names: "
        "rt-up, rt-rev"
    ]
    _prompt(tree, "rt-rev")
    result, tasks, _ = _import(tree, tmp_path / "again", cases, co)
    assert result.outcome is Outcome.CREATED, result.problems
    assert load_catalog(tasks).tasks["ctb-acme-revtool"].spec.interface.tool == "rt-rev"


def test_a_system_name_is_taken_when_the_repository_installs_it():
    cases = [FuzzCase(command="cat f | sort -r", category="cat <file> | sort -r"),
             FuzzCase(command="sort f", category="sort <file>")]  # fmt: skip
    assert ctb.tool_name(Declared(["sort"], ["mysort"], ["mysort"]), None, cases) == ("sort", "")
    assert ctb.tool_name(Declared([], [], ["sort"]), "sort", cases)[0] is None


def test_the_repositorys_metadata_gives_its_names(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "package.json").write_text(
        '{"name": "@acme/jq-lite", "bin": {"jql": "x.js"}}'
    )
    assert ctb.declared_names("acme/jql", str(tmp_path / "a")) == Declared(
        ["jql"], ["jq-lite"], ["jql", "a"]
    )
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "package.json").write_text('{"name": "tidy", "bin": "cli.js"}')
    (tmp_path / "b" / "setup.py").write_text(
        "setup(name='tidy-py', entry_points={'console_scripts': ['tidypy = tidy.cli:main']})"
    )
    assert ctb.declared_names("acme/tidy", str(tmp_path / "b")) == Declared(
        ["tidypy", "tidy"], ["tidy-py", "tidy"], ["tidy", "b"]
    )
    assert ctb.declared_names(MOO, COWSAY) == Declared([], ["cowsay"], ["moo"])
    assert ctb.declared_names("a/j", "npm:@scope/json@11.0.0").names == ["json"]


def test_a_pinned_package_imports_summary_names_the_package(tmp_path, capsys):
    tree = build_tree(tmp_path / "tree", tools=(MOO, REV))
    out = {"base_image": "python:latest", "install": ["pip install ."],
           "cases": [_case("cowsay -t a", "cowsay -t <text>"),
                     _case("cowsay -t b", "cowsay -t <text>")]}  # fmt: skip
    runs = {MOO: json.dumps(out).encode(),
            REV: json.dumps({"base_image": "python:3.11", "install": INSTALL, "cases": TIE}).encode()}  # fmt: skip

    def run(job: FuzzJob) -> FuzzRun:
        return FuzzRun(0, next(v for k, v in runs.items() if f"/repo/{k}/" in job.argv[-1]))

    report = ctb.import_tree(tree, tmp_path / "tasks", runner=run,
                             oracles={MOO: COWSAY, REV: str(checkout(tmp_path / "co"))})  # fmt: skip
    print_import(report)
    lines = capsys.readouterr().out.splitlines()
    assert "ctb-acme-moo (acme/moo): created · cases differential against the pinned registry "\
        "package cowsay==6.1" in lines  # fmt: skip
    assert "ctb-acme-revtool (acme/revtool): created · cases differential against its golden "\
        "repository" in lines  # fmt: skip
