"""Importing a task again keeps what the operator set in its task.toml (importers/
operator_edits.py): `[packages]`, `[image] packages`, `[oracle] requires` and `[fuzz] requires`,
for both importers, on trees the tests write. And the contracts the PRDs end with say how to
install packages (and an export still takes an earlier import's contract off)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers import icae_eval
from icae_tui.importers.cli_tool_bench import FuzzJob, FuzzRun
from icae_tui.importers.icae_contract import CONTRACT, FORMER_CONTRACTS, without_contract
from icae_tui.importers.icae_eval import Outcome
from icae_tui.importers.operator_edits import Edits, Listed
from icae_tui.importers.problems import Severity
from tests.importers.ctb_tree import REV, build_tree, checkout
from tests.importers.icae_tree import build_tree as build_icae_tree

PACKAGES = (
    '[packages]\nallow = ["pypi:click", "npm:@types/*"]\ndeny = ["left-pad"]\nbudget_mb = 64\n'
)


def _set(text: str, table: str, key: str, value: list[str]) -> str:
    """task.toml with `[table] key = value` (replaced, or added to the table, or a new one)."""
    line = f"{key} = {json.dumps(value)}\n"
    head = re.search(rf"^\[{table}\]\n", text, re.M)
    if head is None:
        return text + f"\n[{table}]\n{line}"
    body_end = re.compile(r"^\[", re.M).search(text, head.end())
    end = body_end.start() if body_end else len(text)
    body = text[head.end() : end]
    found = re.search(rf"^{key} = (\[[^\]]*\]|.*)\n", body, re.M)
    body = body[: found.start()] + line + body[found.end() :] if found else body + line
    return text[: head.end()] + body + text[end:]


@pytest.mark.parametrize(("kept", "found", "before", "merged"), [
    (None, ["a", "b"], None, ["a", "b"]),  # nothing kept: what the import found
    (["a", "x"], ["a", "b"], {Listed.FUZZ_REQUIRES: ["a"]}, ["a", "x", "b"]),  # added, found anew
    (["x"], ["a"], {Listed.FUZZ_REQUIRES: ["a"]}, ["x"]),  # the operator removed a
    (["a", "x"], [], {Listed.FUZZ_REQUIRES: ["a"]}, ["x"]),  # no longer found: goes
    (["a", "x"], ["b"], None, ["a", "x", "b"]),  # no record of the last import: all stay
    ([], ["a"], {}, ["a"]),
])  # fmt: skip
def test_a_kept_list_merged_with_what_the_import_finds(kept, found, before, merged):
    edits = Edits(lists={} if kept is None else {Listed.FUZZ_REQUIRES: kept})
    assert edits.merged(Listed.FUZZ_REQUIRES, found, before) == merged


# --- CLI-Tool-Bench ----------------------------------------------------------------------


def _rev_output() -> bytes:
    case = {"command": "revtool upper a", "category": "revtool upper <text>"}
    return json.dumps({"base_image": "python:3.11", "install": [
        "sh -c 'git clone https://github.com/acme/revtool.git && cd revtool && pip install .'"],
        "cases": [case, case]}).encode()  # fmt: skip


def _ctb_import(tree: Path, tasks: Path, co: Path):
    def box(job: FuzzJob) -> FuzzRun:
        return FuzzRun(0, _rev_output())

    report = ctb.import_tree(tree, tasks, runner=box, oracles={REV: str(co)}, only=[REV])
    return report.tasks[0]


@pytest.fixture
def ctb_task(tmp_path):
    tree = build_tree(tmp_path / "tree")
    start = tree / "run_differential_test" / "repo" / REV / "start.py"
    start.write_text("import yaml\n" + start.read_text())
    co = checkout(tmp_path / "co")
    (co / "pyproject.toml").write_text('[project]\nname = "r"\ndependencies = ["click>=8"]\n')
    tasks = tmp_path / "tasks"
    assert _ctb_import(tree, tasks, co).outcome is Outcome.CREATED
    return tree, tasks, co, tasks / "ctb-acme-revtool" / "task.toml"


def test_a_cli_tool_bench_reimport_keeps_the_operators_tables(ctb_task):
    tree, tasks, co, toml = ctb_task
    text = toml.read_text()
    text = _set(text, "image", "packages", ["python3-pip", "python3-setuptools", "jq"])  # -wheel
    text = _set(text, "oracle", "requires", ["pip:click>=8", "pip:six"])
    text = _set(text, "fuzz", "requires", ["pip:PyYAML", "pip:toml"])
    toml.write_text(text + "\n" + PACKAGES)
    # the tool changed meanwhile: one more dependency declared
    (co / "pyproject.toml").write_text(
        '[project]\nname = "r"\ndependencies = ["click>=8", "rich"]\n'
    )
    result = _ctb_import(tree, tasks, co)
    assert result.outcome is Outcome.UPDATED, result.problems
    spec = load_catalog(tasks).tasks["ctb-acme-revtool"].spec
    assert spec.packages.model_dump() == {"allow": ["pypi:click", "npm:@types/*"],
                                          "deny": ["left-pad"], "budget_mb": 64}  # fmt: skip
    assert spec.image.packages == ["python3-pip", "python3-setuptools", "jq"]  # wheel stays out
    assert spec.oracle is not None
    assert spec.oracle.requires == ["pip:click>=8", "pip:six", "pip:rich"]
    assert spec.fuzz is not None and spec.fuzz.requires == ["pip:PyYAML", "pip:toml"]
    # and again: nothing changes
    assert _ctb_import(tree, tasks, co).outcome is Outcome.UNCHANGED


def test_an_import_made_before_the_record_keeps_every_name(ctb_task):
    tree, tasks, co, toml = ctb_task
    origin = tasks / "ctb-acme-revtool" / "origin" / "cli-tool-bench.json"
    recorded = json.loads(origin.read_text())
    del recorded["found"]
    origin.write_text(json.dumps(recorded))
    toml.write_text(_set(toml.read_text(), "image", "packages", ["jq"]))
    _ctb_import(tree, tasks, co)
    spec = load_catalog(tasks).tasks["ctb-acme-revtool"].spec
    assert spec.image.packages == ["jq", "python3-pip", "python3-setuptools", "python3-wheel"]


def test_a_kept_value_the_format_refuses_leaves_the_folder_as_it_is(ctb_task):
    tree, tasks, co, toml = ctb_task
    toml.write_text(toml.read_text() + "\n[packages]\nbudget_mb = -1\n")
    before = toml.read_bytes()
    result = _ctb_import(tree, tasks, co)
    (problem,) = result.problems
    assert result.outcome is Outcome.FAILED and problem.severity is Severity.ERROR
    assert problem.file == str(toml) and problem.field == "packages.budget_mb"
    assert "a new import keeps this value; fix it" in problem.message
    assert toml.read_bytes() == before


def test_the_cli_tool_bench_contract_says_how_to_install_packages():
    text = ctb.contract("revtool")
    assert "no package is installed" not in text
    assert "`pip install NAME` and `npm install NAME` work as usual" in text
    assert "refused, with a message" in text and "package-lock.json" in text


# --- ICAE-EVAL ---------------------------------------------------------------------------


def test_an_icae_reimport_keeps_the_operators_tables(tmp_path):
    tree = build_icae_tree(tmp_path / "ICAE-EVAL")
    tasks = tmp_path / "tasks"
    only = ["realcode@101"]
    icae_eval.import_tree(tree, tasks, base="icae-base:bookworm", only=only)
    toml = tasks / "realcode-101" / "task.toml"
    text = _set(toml.read_text(), "image", "packages", ["jq"])
    text = _set(text, "oracle", "requires", ["pip:six", "npm:minimist@^1.2"])
    text = _set(text, "fuzz", "requires", ["pip:PyYAML"])
    toml.write_text(text + "\n" + PACKAGES)
    report = icae_eval.import_tree(tree, tasks, base="icae-base:bookworm", only=only)
    assert report.tasks[0].outcome is not Outcome.FAILED, report.tasks[0].problems
    spec = tomllib.loads(toml.read_text())
    assert spec["packages"] == {"allow": ["pypi:click", "npm:@types/*"], "deny": ["left-pad"],
                                "budget_mb": 64}  # fmt: skip
    assert spec["image"]["packages"] == ["jq"]
    assert spec["oracle"]["requires"] == ["pip:six", "npm:minimist@^1.2"]
    assert spec["fuzz"] == {"requires": ["pip:PyYAML"]}
    again = icae_eval.import_tree(tree, tasks, base="icae-base:bookworm", only=only)
    assert again.tasks[0].outcome is Outcome.UNCHANGED


def test_the_icae_contract_says_how_to_install_and_an_older_one_still_comes_off():
    assert "whatever test.sh needs must already" not in CONTRACT
    assert "`pip install` and `npm install` work as usual" in CONTRACT
    assert "install them from test.sh" in CONTRACT
    prd = "## PRD\n\nDo it.\n"
    for contract in (CONTRACT, *FORMER_CONTRACTS):
        assert without_contract((prd + contract).encode()) == prd.encode()
    assert "whatever test.sh needs must already\nbe in the workspace" in FORMER_CONTRACTS[0]
