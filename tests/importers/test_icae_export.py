"""Imported tasks exported back to ICAE-EVAL's layout, byte for byte; and a whole tree of
480 aliases imported, re-imported and exported in one go. No engine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.importers.icae_export import export_tasks, origin_of
from icae_tui.importers.json_format import ICAE, JsonFormat, detect, dump
from tests.importers.icae_tree import (
    ENHANCED,
    HIDDEN,
    PUBLIC,
    alias_record,
    build_tree,
    icae_json,
    tree_files,
    write,
    write_alias,
)

BASE = "icae-base:bookworm"


def _tasks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir())


def _without(files: dict[str, bytes], *names: str) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if not any(n in k for n in names)}


def test_export_gives_the_imported_trees_files_back_byte_for_byte(tmp_path):
    tree = build_tree(tmp_path / "tree")
    # realcode@103 is not imported: the tree to compare with has what was
    aliases = json.loads((tree / "repo_alias.json").read_text())
    del aliases["realcode@103"]
    (tree / "repo_alias.json").write_text(icae_json(aliases))
    expected = _without(tree_files(tree), "realcode@103", "acme__copycat")
    import_tree(tree, tmp_path / "tasks", base=BASE)
    report = export_tasks(_tasks(tmp_path / "tasks"), tmp_path / "out")
    assert report.exported == ["realcode@101", "realcode@102"] and report.skipped == []
    assert tree_files(tmp_path / "out") == expected
    # written again from the task's files, but files no json.dumps writes (realcode@101's
    # case files) and the one file whose stored value changed
    assert sorted(origin_of(tmp_path / "tasks/realcode-101").verbatim) == sorted(
        p for p in expected if p.startswith("rcb_tests_repos/acme__wordtool/") and
        p.endswith(".json"))  # fmt: skip
    assert origin_of(tmp_path / "tasks/realcode-102").verbatim == [
        "rcb_tests_repos/acme__lentool/rcb_tests/test_cases/feature3_len.json"
    ]
    # the rcb_tests repository's harness, with its mode, where it was (not in the golden one)
    harness = "rcb_tests_repos/acme__wordtool/rcb_tests/test.sh"
    assert (tmp_path / "out" / harness).stat().st_mode == (tree / harness).stat().st_mode
    assert not (tmp_path / "out/realcode_repos/acme__wordtool/rcb_tests").exists()


def test_an_edited_task_exports_its_edit(tmp_path):
    tree = build_tree(tmp_path / "tree")
    import_tree(tree, tmp_path / "tasks", base=BASE)
    case = tmp_path / "tasks/realcode-101/cases/hidden/feature2_upper.json"
    data = json.loads(case.read_text())
    data["cases"][0]["expected_output"] = "É SS!\n"
    case.write_text(json.dumps(data))
    prd = tmp_path / "tasks/realcode-101/prd/L2.md"
    prd.write_text(prd.read_text().replace("(medium)", "(medium, edited)"))
    export_tasks([tmp_path / "tasks/realcode-101"], tmp_path / "out")
    out = json.loads((tmp_path / "out/rcb_tests_repos/acme__wordtool/rcb_tests/test_cases/"
                      "feature2_upper.json").read_text())  # fmt: skip
    assert out["cases"][0]["expected_output"] == "É SS!\n"
    start = (tmp_path / "out/fuzzy_prds_medium/realcode@101/start.md").read_text()
    assert "(medium, edited)" in start and "How your delivery is run" not in start
    # the case file kept as it was (no json.dumps writes it) is written from the edit now;
    # its unedited neighbour still as it was
    neighbour = "rcb_tests_repos/acme__wordtool/rcb_tests/test_cases/feature1_count.json"
    assert (tmp_path / "out" / neighbour).read_bytes() == (tree / neighbour).read_bytes()


def test_export_skips_folders_that_are_not_icae_imports(tmp_path):
    native = tmp_path / "tasks/mini"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures/tasks/mini", native)
    report = export_tasks([native], tmp_path / "out")
    assert report.exported == [] and report.skipped == [(str(native), "not imported from ICAE-EVAL")]


@pytest.mark.parametrize(
    "fmt",
    [ICAE, JsonFormat(newline=True), JsonFormat(indent=4, ensure_ascii=True),
     JsonFormat(indent=None), JsonFormat(indent=None, compact=True, newline=True)],
)  # fmt: skip
def test_a_json_format_is_found_from_the_bytes_it_wrote(fmt):
    data = {"b": [1, {"é": "x\u2028y"}], "a": None, "c": 1.5}
    assert detect(dump(data, fmt), data) == fmt


def test_formatting_no_dumps_reproduces_has_no_format():
    assert detect(b'{"a":  1}', {"a": 1}) is None
    assert detect(b'{"a": 1, "a": 2}', {"a": 2}) is None


def _big_tree(root: Path, n: int) -> Path:
    """`n` aliases, each with three levels and its three case folders (no golden repository:
    the small tree's tests run those)."""
    records = {}
    for i in range(1, n + 1):
        alias = f"realcode@{i:03d}"
        hidden = {name: {**c, "description": f"{c['description']} #{i}"} for name, c in HIDDEN.items()}
        write_alias(root, alias, golden=False, hidden=hidden)
        records[alias] = alias_record(alias, ("Python", "Go", "Rust")[i % 3], 100 + i)
    write(root, "repo_alias.json", icae_json(records))
    return root


def test_a_tree_of_480_aliases_imports_reimports_and_exports_in_one_go(tmp_path):
    tree = _big_tree(tmp_path / "tree", 480)
    report = import_tree(tree, tmp_path / "tasks", base=BASE)
    assert len(report.tasks) == 480 and report.failed == []
    assert {t.outcome for t in report.tasks} == {Outcome.CREATED}
    catalog = load_catalog(tmp_path / "tasks")
    assert len(catalog.tasks) == 480 and catalog.errors == []
    assert catalog.tasks["realcode-480"].spec.language == "Python"
    assert len(catalog.tasks["realcode-007"].cases) == len(PUBLIC) + 3 + sum(
        len(c["cases"]) for c in ENHANCED.values()
    )
    again = import_tree(tree, tmp_path / "tasks", base=BASE)
    assert {t.outcome for t in again.tasks} == {Outcome.UNCHANGED}
    exported = export_tasks(_tasks(tmp_path / "tasks"), tmp_path / "out")
    assert len(exported.exported) == 480
    assert tree_files(tmp_path / "out") == tree_files(tree)


def test_an_origin_record_naming_a_path_outside_the_layout_is_not_exported(tmp_path):
    import_tree(build_tree(tmp_path / "tree"), tmp_path / "tasks", base=BASE)
    folder = tmp_path / "tasks/realcode-101"
    record = folder / "origin/icae-eval.json"
    data = json.loads(record.read_text())
    data["levels"][0]["json_file"] = "../../outside.json"
    record.write_text(json.dumps(data))
    report = export_tasks([folder], tmp_path / "out")
    assert report.exported == [] and "outside the layout: ../../outside.json" in report.skipped[0][1]
    assert not (tmp_path / "outside.json").exists() and not (tmp_path / "out").exists()
