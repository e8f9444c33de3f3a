"""`import_tree` on small ICAE-EVAL trees the tests build (tests/importers/icae_tree.py):
the per-task messages with their files and fields, what an imported task holds, and that a
second import changes nothing. No engine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.task import Level, OriginSource, Reference, Split
from icae_tui.errors import ConfigError
from icae_tui.importers.icae_contract import CONTRACT, TOOL
from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.importers.icae_export import export_tasks, origin_of
from icae_tui.importers.problems import Problem, Severity
from tests.importers.icae_tree import HEADER, build_tree, icae_json, tree_files, write

BASE = "icae-base:bookworm"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "ICAE-EVAL")


def _import(tree: Path, into: Path, **kw):
    return import_tree(tree, into, base=BASE, **kw)


def _by_alias(report):
    return {t.alias: t for t in report.tasks}


def _has(problems: list[Problem], severity: Severity, file: str, field: str, text: str) -> bool:
    return any(
        p.severity is severity and p.file == file and p.field == field and text in p.message
        for p in problems
    )


def test_the_tree_imports_with_each_tasks_problems_named_by_file_and_field(tree, tmp_path):
    report = _import(tree, tmp_path / "tasks")
    tasks = _by_alias(report)
    assert list(tasks) == ["realcode@101", "realcode@102", "realcode@103"]

    golden = tasks["realcode@101"]
    assert golden.outcome is Outcome.CREATED and golden.reference is Reference.ORACLE
    assert not [p for p in golden.problems if p.severity is not Severity.NOTE]
    assert _has(golden.problems, Severity.NOTE, "realcode_repos/acme__wordtool", "",
                "differential against this golden repository")  # fmt: skip

    stored = tasks["realcode@102"]
    assert stored.outcome is Outcome.CREATED and stored.reference is Reference.EXPECTED
    warnings = [p for p in stored.problems if p.severity is Severity.WARNING]
    assert len(warnings) == 2
    assert _has(warnings, Severity.WARNING,
                "rcb_tests_repos/acme__lentool/rcb_tests/test_cases/feature3_len.json",
                "cases[0].expected_output",
                "not a string (int): scored as its JSON text '3', as ICAE-EVAL scores it")  # fmt: skip
    assert _has(warnings, Severity.WARNING, "user_agent/prd_json/realcode@102.json",
                "oracle_data.hidden_constraints[9]",
                "missing fixture: TC_feature9_gone serves the public case file "
                "feature9_gone.json")  # fmt: skip
    assert _has(stored.problems, Severity.NOTE, "realcode_repos/acme__lentool", "",
                "no golden repository: cases are judged against their stored expected outputs")  # fmt: skip

    broken = tasks["realcode@103"]
    assert broken.outcome is Outcome.FAILED and broken.reference is None
    errors = [p for p in broken.problems if p.severity is Severity.ERROR]
    assert _has(errors, Severity.ERROR, "user_agent/prd_json_easy/realcode@103.json", "",
                "missing: the easy level (L3) has no user-agent data")  # fmt: skip
    assert _has(errors, Severity.ERROR, "user_agent/prd_json_medium/realcode@103.json",
                "oracle_data.hidden_constraints[0]",
                "copied from another task: C002 is realcode@101's C002 "
                "(user_agent/prd_json/realcode@101.json)")  # fmt: skip
    assert len(errors) == 3  # the level, and the two copied records
    assert not (tmp_path / "tasks" / "realcode-103").exists()
    assert [t.alias for t in report.imported] == ["realcode@101", "realcode@102"]


def test_imported_tasks_load_with_their_levels_cases_and_interface(tree, tmp_path):
    _import(tree, tmp_path / "tasks")
    catalog = load_catalog(tmp_path / "tasks")
    assert catalog.errors == [] and sorted(catalog.tasks) == ["realcode-101", "realcode-102"]
    golden, stored = catalog.tasks["realcode-101"], catalog.tasks["realcode-102"]

    spec = golden.spec
    assert spec.language == "Python" and spec.title == "realcode@101" and spec.budget == 16
    assert spec.origin is not None and spec.origin.source is OriginSource.ICAE_EVAL
    assert (spec.origin.alias, spec.origin.size_loc, spec.origin.size_files) == ("realcode@101", 120, 3)
    assert spec.interface.kind == "dispatcher" and spec.interface.tool == TOOL
    assert spec.oracle is not None and spec.oracle.entry.endswith(" /opt/oracle")
    assert spec.cases.reference is Reference.ORACLE and spec.image.base == BASE
    assert stored.spec.oracle is None and stored.spec.cases.reference is Reference.EXPECTED

    # levels: normal, medium, easy → L1, L2, L3; each PRD is its start.md, then the protocol
    start = (tree / "fuzzy_prds_medium/realcode@101/start.md").read_text()
    assert golden.prd[Level.L2] == start + CONTRACT
    assert golden.prd[Level.L1].startswith(HEADER) and "(normal)" in golden.prd[Level.L1]
    assert "(easy)" in golden.prd[Level.L3] and "Rule 3 of realcode@101" in golden.prd[Level.GROUND]
    records = {lv: [r.constraint_id for r in golden.user_agent[lv].oracle_data.hidden_constraints]
               for lv in Level}  # fmt: skip
    assert records[Level.L1][:3] == ["C001", "C002", "C003"] and records[Level.L3][0] == "C003"
    assert golden.user_agent[Level.GROUND] == golden.user_agent[Level.L3]

    counts = {s: len(golden.cases_in(s)) for s in Split}
    assert counts == {Split.PUBLIC: 2, Split.HIDDEN: 3, Split.ENHANCED: 1}
    assert len(stored.cases_in(Split.HIDDEN)) == 5
    lens = [r.case.expected_output for r in stored.cases if r.stem == "feature3_len"]
    assert lens == ["3", "5"]  # the stored number as ICAE compares it
    oracle = tmp_path / "tasks/realcode-101/oracle"
    # the golden repository's files, and the rcb_tests repository's harness laid over them
    assert (oracle / "tool.py").read_bytes() == (
        tree / "realcode_repos/acme__wordtool/tool.py").read_bytes()  # fmt: skip
    assert (oracle / "rcb_tests/test.sh").read_bytes() == (
        tree / "rcb_tests_repos/acme__wordtool/rcb_tests/test.sh").read_bytes()  # fmt: skip
    assert (oracle / "rcb_tests/test.sh").stat().st_mode & 0o111
    assert not (oracle / "rcb_tests/test_cases").exists()
    assert not (tmp_path / "tasks/realcode-102/oracle").exists()


def test_importing_again_changes_nothing_and_keeps_the_users_files(tree, tmp_path):
    into = tmp_path / "tasks"
    _import(tree, into)
    solution = into / "realcode-101" / "solutions" / "mine.yaml"
    solution.parent.mkdir()
    solution.write_text("steps:\n- submit: mine\n")
    before = tree_files(into)
    stamps = {p: p.stat().st_mtime_ns for p in into.rglob("*") if p.is_file()}
    again = _import(tree, into)
    assert [t.outcome for t in again.tasks] == [Outcome.UNCHANGED, Outcome.UNCHANGED, Outcome.FAILED]
    assert tree_files(into) == before
    assert {p: p.stat().st_mtime_ns for p in into.rglob("*") if p.is_file()} == stamps

    # the tree changes: a hidden case file goes, one is edited; the import follows, no more
    (tree / "rcb_tests_repos/acme__wordtool/rcb_tests/test_cases/feature2_upper.json").unlink()
    count = tree / "rcb_tests_repos/acme__wordtool/rcb_tests/test_cases/feature1_count.json"
    data = json.loads(count.read_text())
    data["cases"] = data["cases"][:1]
    count.write_text(icae_json(data))
    third = _by_alias(_import(tree, into))
    assert third["realcode@101"].outcome is Outcome.UPDATED
    assert third["realcode@102"].outcome is Outcome.UNCHANGED
    task = load_catalog(into).tasks["realcode-101"]
    assert [r.id for r in task.cases_in(Split.HIDDEN)] == ["hidden/feature1_count#0"]
    assert not (into / "realcode-101/cases/hidden/feature2_upper.json").exists()
    assert solution.read_text() == "steps:\n- submit: mine\n"


def test_a_task_that_fails_again_keeps_its_earlier_import(tree, tmp_path):
    into = tmp_path / "tasks"
    _import(tree, into)
    before = tree_files(into / "realcode-101")
    (tree / "user_agent/prd_json_medium/realcode@101.json").write_text("{ not json")
    failed = _by_alias(_import(tree, into))["realcode@101"]
    assert failed.outcome is Outcome.FAILED
    assert _has(failed.problems, Severity.ERROR, "user_agent/prd_json_medium/realcode@101.json",
                "", "invalid JSON at line 1 column 3")  # fmt: skip
    assert tree_files(into / "realcode-101") == before


def test_a_folder_that_is_not_this_aliases_import_is_never_written(tree, tmp_path):
    into = tmp_path / "tasks"
    native = into / "realcode-101"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures/tasks/mini", native)
    before = tree_files(native)
    report = _by_alias(_import(tree, into))
    assert report["realcode@101"].outcome is Outcome.FAILED
    assert any("exists and it is not an ICAE-EVAL import: left as it is" in p.message
               for p in report["realcode@101"].problems)  # fmt: skip
    assert report["realcode@102"].outcome is Outcome.CREATED
    assert tree_files(native) == before


def test_data_the_task_format_refuses_is_named_by_field(tree, tmp_path):
    level = tree / "user_agent/prd_json/realcode@102.json"
    data = json.loads(level.read_text())
    data["oracle_data"]["hidden_constraints"][1]["trigger_keywords"] = []
    del data["oracle_data"]["fallback_response"]
    level.write_text(icae_json(data))
    case = tree / "rcb_tests_repos/acme__lentool/rcb_tests/enhanced_test_cases/edge_unknown.json"
    case.write_text(icae_json({"cases": [{"input": {}, "expected_output": "x", "weight": 2}]}))
    problems = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"].problems
    shown = "user_agent/prd_json/realcode@102.json"
    assert _has(problems, Severity.ERROR, shown, "oracle_data.hidden_constraints[1].trigger_keywords",
                "at least 1 item")  # fmt: skip
    assert _has(problems, Severity.ERROR, shown, "oracle_data.fallback_response", "required")
    assert _has(problems, Severity.ERROR,
                "rcb_tests_repos/acme__lentool/rcb_tests/enhanced_test_cases/edge_unknown.json",
                "cases[0].weight", "Extra inputs are not permitted")  # fmt: skip


def test_a_task_without_hidden_cases_imports_its_public_cases_alone(tree, tmp_path):
    shutil.rmtree(tree / "rcb_tests_repos/acme__lentool/rcb_tests/test_cases")
    shutil.rmtree(tree / "rcb_tests_repos/acme__lentool/rcb_tests/enhanced_test_cases")
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"]
    assert task.outcome is Outcome.CREATED  # marked public-only (test_icae_public_only.py)
    assert _has(task.problems, Severity.WARNING, "rcb_tests_repos/acme__lentool/rcb_tests/test_cases",
                "", "marked public-only")  # fmt: skip
    assert _has(task.problems, Severity.NOTE,
                "rcb_tests_repos/acme__lentool/rcb_tests/enhanced_test_cases", "", "no enhanced")  # fmt: skip


def test_without_rcb_public_cases_the_levels_public_test_cases_are_used(tree, tmp_path):
    shutil.rmtree(tree / "rcb_tests_repos/acme__wordtool/rcb_tests/public_test_cases")
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@101"]
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.NOTE, "user_agent/prd_json/realcode@101.json",
                "public_test_cases", "no rcb_tests/public_test_cases: the public cases are these")  # fmt: skip
    loaded = load_catalog(tmp_path / "tasks").tasks["realcode-101"]
    assert [r.id for r in loaded.cases_in(Split.PUBLIC)] == ["public/feature1_count#0",
                                                             "public/feature2_upper#0"]  # fmt: skip


def test_a_level_whose_examples_differ_from_the_authoritative_public_cases_is_warned(tree, tmp_path):
    level = tree / "user_agent/prd_json_easy/realcode@101.json"
    data = json.loads(level.read_text())
    data["public_test_cases"]["feature2_upper.json"]["cases"][0]["expected_output"] = "ab\n"
    level.write_text(icae_json(data))
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@101"]
    assert _has(task.problems, Severity.WARNING, "user_agent/prd_json_easy/realcode@101.json",
                'public_test_cases["feature2_upper.json"]',
                "differs from the authoritative rcb_tests/public_test_cases")  # fmt: skip
    assert task.outcome is Outcome.CREATED


def test_a_golden_repository_without_the_protocols_harness_cannot_be_the_oracle(tree, tmp_path):
    (tree / "rcb_tests_repos/acme__wordtool/rcb_tests/test.sh").unlink()
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@101"]
    assert task.outcome is Outcome.CREATED and task.reference is Reference.EXPECTED
    assert _has(task.problems, Severity.NOTE, "realcode_repos/acme__wordtool", "",
                "neither the golden repository nor its rcb_tests repository holds "
                "rcb_tests/test.sh")  # fmt: skip
    loaded = load_catalog(tmp_path / "tasks").tasks["realcode-101"]
    assert loaded.spec.oracle is None  # its files are kept (an export gives them back)
    assert (tmp_path / "tasks/realcode-101/oracle/tool.py").is_file()


def test_an_empty_case_file_counts_no_case_as_in_icae_and_is_kept_for_an_export(tree, tmp_path):
    rel = "rcb_tests_repos/acme__wordtool/rcb_tests/enhanced_test_cases/edge_none.json"
    write(tree, rel, icae_json({"description": "nothing yet", "cases": []}))
    into = tmp_path / "tasks"
    task = _by_alias(_import(tree, into))["realcode@101"]
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.WARNING, rel, "cases", "empty: ICAE-EVAL counts no case")
    assert not (into / "realcode-101/cases/enhanced/edge_none.json").exists()
    kept = into / "realcode-101/origin/tests/rcb_tests/enhanced_test_cases/edge_none.json"
    assert kept.read_bytes() == (tree / rel).read_bytes()
    export_tasks([into / "realcode-101"], tmp_path / "out")
    assert (tmp_path / "out" / rel).read_bytes() == (tree / rel).read_bytes()
    # a hidden folder whose every file is empty: no hidden cases
    hidden = tree / "rcb_tests_repos/acme__lentool/rcb_tests/test_cases"
    for path in hidden.glob("*.json"):
        path.write_text(icae_json({"description": "none", "cases": []}))
    task = _by_alias(_import(tree, into))["realcode@102"]
    assert task.outcome is Outcome.FAILED
    assert _has(task.problems, Severity.ERROR, "rcb_tests_repos/acme__lentool/rcb_tests/test_cases",
                "", "no hidden cases (its case files have none)")  # fmt: skip


def test_a_symbolic_link_in_the_rcb_tests_repository_is_named_and_left_out(tree, tmp_path):
    link = tree / "rcb_tests_repos/acme__lentool/rcb_tests/latest"
    link.symlink_to(tmp_path, target_is_directory=True)
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"]
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.WARNING, "rcb_tests_repos/acme__lentool/rcb_tests/latest",
                "", "a symbolic link: left out of the task")  # fmt: skip
    assert not (tmp_path / "tasks/realcode-102/origin/tests/rcb_tests/latest").exists()


def test_an_expected_output_icae_can_never_match_is_named(tree, tmp_path):
    case = tree / "rcb_tests_repos/acme__wordtool/rcb_tests/enhanced_test_cases/edge_unknown.json"
    data = json.loads(case.read_text())
    data["cases"][0]["expected_output"] = "error=unknown_action\r\n"
    case.write_text(icae_json(data))
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@101"]
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.WARNING, case.relative_to(tree).as_posix(),
                "cases[0].expected_output", "holds a carriage return")  # fmt: skip


def test_a_golden_repository_with_its_own_harness_runs_it(tree, tmp_path):
    own = "#!/bin/bash\n# the golden repository's own harness\n"
    write(tree, "realcode_repos/acme__wordtool/rcb_tests/test.sh", own)
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@101"]
    assert task.reference is Reference.ORACLE
    assert _has(task.problems, Severity.NOTE, "realcode_repos/acme__wordtool", "",
                "cases are differential against this golden repository")  # fmt: skip
    oracle = tmp_path / "tasks/realcode-101/oracle"
    assert (oracle / "rcb_tests/test.sh").read_text() == own
    # the rcb_tests repository's helper is not laid over a repository with its own harness
    assert not (oracle / "rcb_tests/run_cases.py").exists()
    assert origin_of(tmp_path / "tasks/realcode-101").oracle_overlay == []


def test_the_rcb_tests_repositorys_other_files_are_kept_as_they_are(tree, tmp_path):
    write(tree, "rcb_tests_repos/acme__lentool/rcb_tests/.results.txt", "PASS a\n")
    write(tree, "rcb_tests_repos/acme__lentool/rcb_tests/test_cases/notes.md", "# notes\n")
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"]
    assert task.outcome is Outcome.CREATED and task.reference is Reference.EXPECTED
    kept = tmp_path / "tasks/realcode-102/origin/tests/rcb_tests"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()) == [
        ".results.txt", "run_cases.py", "test.sh", "test_cases/notes.md"]  # fmt: skip
    assert origin_of(tmp_path / "tasks/realcode-102").tests_folder == "rcb_tests_repos/acme__lentool"
    # no golden repository: the harness alone is no oracle (its dispatcher is not there)
    assert not (tmp_path / "tasks/realcode-102/oracle").exists()


def test_a_missing_start_md_is_the_levels_fuzzy_prd_as_icae_writes_it(tree, tmp_path):
    (tree / "fuzzy_prds_easy/realcode@102/start.md").unlink()
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"]
    assert _has(task.problems, Severity.WARNING, "fuzzy_prds_easy/realcode@102/start.md", "",
                "missing: the L3 PRD is the level's fuzzy_prd")  # fmt: skip
    data = json.loads((tree / "user_agent/prd_json_easy/realcode@102.json").read_text())
    loaded = load_catalog(tmp_path / "tasks").tasks["realcode-102"]
    assert loaded.prd[Level.L3] == HEADER + data["fuzzy_prd"] + CONTRACT


def test_a_detailed_prd_is_the_ground_level(tree, tmp_path):
    write(tree, "detailed_prds/realcode@101/start.md", "## PRD\n\nEverything, precisely.\n")
    _import(tree, tmp_path / "tasks")
    loaded = load_catalog(tmp_path / "tasks").tasks["realcode-101"]
    assert loaded.prd[Level.GROUND] == "## PRD\n\nEverything, precisely.\n" + CONTRACT


def test_only_imports_the_aliases_named_and_names_unknown_ones(tree, tmp_path):
    report = _import(tree, tmp_path / "tasks", only=["realcode-102", "realcode@999"])
    assert [t.alias for t in report.tasks] == ["realcode@102"]
    assert [p.message for p in report.problems] == ["no alias 'realcode@999' in the tree"]


def test_a_task_without_a_repo_alias_entry_is_imported_under_its_alias(tree, tmp_path):
    aliases = json.loads((tree / "repo_alias.json").read_text())
    del aliases["realcode@102"]
    (tree / "repo_alias.json").write_text(icae_json(aliases))
    shutil.move(tree / "rcb_tests_repos/acme__lentool", tree / "rcb_tests_repos/realcode@102")
    # an image that brings its own runtime: the language is not known to choose one
    task = _by_alias(import_tree(tree, tmp_path / "tasks", base="python:3.11"))["realcode@102"]
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.WARNING, "repo_alias.json", "",
                "no entry for realcode@102: its language and size are unknown")  # fmt: skip
    loaded = load_catalog(tmp_path / "tasks").tasks["realcode-102"]
    assert loaded.spec.language == "unknown" and loaded.spec.origin is not None
    assert origin_of(tmp_path / "tasks/realcode-102").key == "realcode@102"


def test_a_folder_that_is_no_icae_eval_tree_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no ICAE-EVAL tasks"):
        import_tree(tmp_path, tmp_path / "tasks")
    with pytest.raises(ConfigError, match="not a folder"):
        import_tree(tmp_path / "nope", tmp_path / "tasks")


def test_a_public_case_name_that_would_leave_its_folder_is_refused(tree, tmp_path):
    level = tree / "user_agent/prd_json/realcode@101.json"
    data = json.loads(level.read_text())
    data["public_test_cases"]["../../escape.json"] = data["public_test_cases"]["feature1_count.json"]
    level.write_text(icae_json(data))
    shutil.rmtree(tree / "rcb_tests_repos/acme__wordtool/rcb_tests/public_test_cases")
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@101"]
    assert task.outcome is Outcome.FAILED
    assert _has(task.problems, Severity.ERROR, "user_agent/prd_json/realcode@101.json",
                'public_test_cases["../../escape.json"]', "not a plain file name")  # fmt: skip
    assert not list(tmp_path.rglob("escape.json"))


def test_a_short_record_two_tasks_share_by_chance_is_no_copy(tree, tmp_path):
    for alias in ("realcode@101", "realcode@102"):
        level = tree / f"user_agent/prd_json/{alias}.json"
        data = json.loads(level.read_text())
        data["oracle_data"]["hidden_constraints"][0]["oracle_response"] = "Print JSON."
        level.write_text(icae_json(data))
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"]
    assert task.outcome is Outcome.CREATED
    assert not any("copied" in p.message for p in task.problems)


def test_a_link_in_the_task_folder_is_never_followed_by_a_new_import(tree, tmp_path):
    into = tmp_path / "tasks"
    _import(tree, into)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    oracle = into / "realcode-101" / "oracle"
    shutil.rmtree(oracle)
    oracle.symlink_to(outside, target_is_directory=True)
    cases = into / "realcode-101" / "cases" / "hidden"
    shutil.rmtree(cases)
    cases.symlink_to(outside, target_is_directory=True)
    (into / "realcode-101" / "cases" / "extra").symlink_to(outside, target_is_directory=True)
    assert _by_alias(_import(tree, into))["realcode@101"].outcome is Outcome.UPDATED
    assert not (into / "realcode-101" / "cases" / "extra").exists()  # the link, not its files
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert not oracle.is_symlink() and (oracle / "tool.py").is_file()
    assert not cases.is_symlink() and (cases / "feature1_count.json").is_file()


def test_a_golden_file_whose_mode_changed_is_copied_again(tree, tmp_path):
    into = tmp_path / "tasks"
    _import(tree, into)
    (tree / "realcode_repos/acme__wordtool/tool.py").chmod(0o755)
    assert _by_alias(_import(tree, into))["realcode@101"].outcome is Outcome.UPDATED
    assert (into / "realcode-101/oracle/tool.py").stat().st_mode & 0o111


def test_a_language_the_debian_base_has_no_runtime_for_is_named_in_repo_alias(tree, tmp_path):
    aliases = json.loads((tree / "repo_alias.json").read_text())
    aliases["realcode@102"]["language"] = "Cobol"
    (tree / "repo_alias.json").write_text(icae_json(aliases))
    task = _by_alias(_import(tree, tmp_path / "tasks"))["realcode@102"]
    assert task.outcome is Outcome.FAILED
    assert _has(task.problems, Severity.ERROR, "repo_alias.json", "realcode@102.language",
                "no runtime recipe for language 'Cobol'")  # fmt: skip
    assert not (tmp_path / "tasks/realcode-102").exists()
    # on an image that brings its own runtime it imports
    again = _by_alias(import_tree(tree, tmp_path / "tasks", base="cobol:9"))["realcode@102"]
    assert again.outcome is Outcome.CREATED
    assert load_catalog(tmp_path / "tasks").tasks["realcode-102"].spec.image.base == "cobol:9"


def test_a_language_no_registry_here_provides_imports_with_what_to_supply(tree, tmp_path):
    """Kotlin (ICAE-EVAL's kotlin:1.9.25; Debian has 1.3): imported onto the Debian base with
    a warning naming the image to supply; the task loads (`icae tasks check` fails it)."""
    aliases = json.loads((tree / "repo_alias.json").read_text())
    aliases["realcode@102"]["language"] = "Kotlin"
    (tree / "repo_alias.json").write_text(icae_json(aliases))
    task = _by_alias(import_tree(tree, tmp_path / "tasks"))["realcode@102"]
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.WARNING, "repo_alias.json", "realcode@102.language",
                "`docker load -i FILE.tar` an image such as kotlin:1.9.25")  # fmt: skip
    loaded = load_catalog(tmp_path / "tasks").tasks["realcode-102"]
    assert loaded.spec.image.base == BASE  # ICAE-EVAL's Docker Hub image is not named
