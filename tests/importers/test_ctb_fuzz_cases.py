"""Issue 38 on CLI-Tool-Bench-shaped trees of our own (tests/importers/ctb_tree.py), with the
fuzzer's box replaced by a runner answering as a box would: a pinned-package import passes
`icae tasks check`'s data checks; a case's `prep_script = None` is no prep; a case with a NUL
where it becomes an argv is left out, said, and the rest of the tool imported."""

from __future__ import annotations

import json

import pytest

from icae_tui.catalog.check import data_problems
from icae_tui.catalog.loader import load_catalog
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.cli_tool_bench import FuzzJob, FuzzRun
from icae_tui.importers.icae_eval import Outcome
from icae_tui.importers.problems import Severity
from tests.importers.ctb_tree import COWSAY, MOO, build_tree

START = "run_differential_test/repo/acme/moo/start.py"


def _case(command: str = "cowsay -t a", **more: object) -> dict[str, object]:
    return {"command": command, "category": "cowsay -t <text>", "prep_script": "",
            "mount_files": {}, "env_vars": {}, **more}  # fmt: skip


def _box(cases: list[dict[str, object]]):
    out = {"base_image": "python:latest", "install": ["pip install ."], "cases": cases}

    def run(job: FuzzJob) -> FuzzRun:
        assert job.argv[-1].endswith(f"/repo/{MOO}/start.py")
        return FuzzRun(0, json.dumps(out).encode())

    return run


@pytest.fixture
def tree(tmp_path):
    return build_tree(tmp_path / "tree", tools=(MOO,))


def _import(tree, tmp_path, cases):
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=_box(cases), oracles={MOO: COWSAY}, only=[MOO])
    (result,) = report.tasks
    return result, tasks


def test_a_pinned_package_import_passes_the_data_checks(tree, tmp_path):
    result, tasks = _import(tree, tmp_path, [_case(), _case("cowsay -t b")])
    assert result.outcome is Outcome.CREATED
    assert not (tasks / "ctb-acme-moo" / "oracle").exists()  # the package is the oracle's code
    task = load_catalog(tasks).tasks["ctb-acme-moo"]
    assert task.spec.oracle is not None and task.spec.oracle.package == COWSAY
    assert data_problems(task) == []


def test_a_null_prep_script_is_no_prep(tree, tmp_path):
    cases = [_case(prep_script=None), _case("cowsay -t b", prep_script="touch /test_data/p")]
    result, tasks = _import(tree, tmp_path, cases)
    assert result.outcome is Outcome.CREATED, [str(p) for p in result.problems]
    task = load_catalog(tasks).tasks["ctb-acme-moo"]
    assert [c.case.prep for c in task.cases] == [None, "touch /test_data/p"]


@pytest.mark.parametrize(("bad", "field"), [
    (_case('cowsay -t "\x00"'), "cases[1].command"),
    (_case(prep_script="printf 'a\x00b' > /test_data/x"), "cases[1].prep_script"),
    (_case(env_vars={"LANG": "C", "MOO": "a\x00"}), "cases[1].env_vars.MOO"),
])  # fmt: skip
def test_a_nul_where_an_argv_carries_it_leaves_the_case_out(tree, tmp_path, bad, field):
    result, tasks = _import(tree, tmp_path, [_case(), bad, _case("cowsay -t c")])
    assert result.outcome is Outcome.CREATED
    (warning,) = [p for p in result.problems if p.severity is Severity.WARNING]
    assert (warning.file, warning.field) == (START, field)
    assert "NUL" in warning.message and "left out" in warning.message
    assert "\x00" not in str(warning)  # said escaped, the case named by its command
    task = load_catalog(tasks).tasks["ctb-acme-moo"]
    assert [c.case.command for c in task.cases] == ["cowsay -t a", "cowsay -t c"]
    assert all("\x00" not in (c.case.command + (c.case.prep or "")) for c in task.cases)


def test_a_tool_whose_every_case_has_a_nul_is_not_imported(tree, tmp_path):
    result, tasks = _import(tree, tmp_path, [_case("cowsay \x00"), _case("cowsay -t '\x00'")])
    assert result.outcome is Outcome.FAILED and not (tasks / "ctb-acme-moo").exists()
    assert [p.field for p in result.problems if p.severity is Severity.ERROR] == ["cases"]
