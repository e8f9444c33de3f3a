"""Issue 38, item 9: a tree with only the public data (no rcb_tests test_cases, no enhanced
cases) is offered with its public cases alone, marked public-only; until the task format can
mark such a task (task.toml [origin] public_only) the catalog refuses it and nothing is
written. Trees of the tests' own (tests/importers/icae_tree.py)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.task import Split
from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.importers.icae_layout import Layout
from icae_tui.importers.icae_read import AliasIndex, read_alias
from icae_tui.importers.icae_task import PUBLIC_ONLY_MARK, build_task
from icae_tui.importers.problems import Problem, Severity, errors_in
from tests.importers.icae_tree import build_tree

BASE = "icae-base:bookworm"
RCB = "rcb_tests_repos/acme__wordtool/rcb_tests"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = build_tree(tmp_path / "ICAE-EVAL")
    shutil.rmtree(root / RCB / "test_cases")
    shutil.rmtree(root / RCB / "enhanced_test_cases")
    return root


def _has(problems: list[Problem], severity: Severity, file: str, *texts: str) -> bool:
    return any(p.severity is severity and p.file == file and all(t in p.message for t in texts)
               for p in problems)  # fmt: skip


def test_public_data_alone_is_read_as_a_public_only_task(tree):
    layout = Layout.of(tree)
    index = AliasIndex.read(layout)
    data = read_alias(layout, "realcode@101", index)
    assert data.public_only and not errors_in(data.problems)
    assert _has(data.problems, Severity.WARNING, f"{RCB}/test_cases", "missing: no hidden cases",
                "imported with its 2 public case files alone, marked public-only")  # fmt: skip
    built = build_task(data, index, base=BASE)
    assert sorted(p for p in built.files if p.startswith("cases/")) == [
        "cases/public/feature1_count.json", "cases/public/feature2_upper.json"]  # fmt: skip
    toml = built.files["task.toml"].decode()
    assert "# PUBLIC CASES ONLY" in toml and "public_only = true" in toml
    top = tomllib.loads(toml)
    assert top["title"] == f"realcode@101 {PUBLIC_ONLY_MARK}"
    assert top["summary"].startswith(PUBLIC_ONLY_MARK)
    assert top["origin"]["public_only"] is True


def test_public_cases_from_the_levels_alone_are_public_only_too(tree):
    shutil.rmtree(tree / "rcb_tests_repos/acme__wordtool")  # no rcb_tests repository at all
    layout = Layout.of(tree)
    data = read_alias(layout, "realcode@101", AliasIndex.read(layout))
    assert data.public_only and [f.name for f in data.public] == [
        "feature1_count.json", "feature2_upper.json"]  # fmt: skip
    assert _has(data.problems, Severity.WARNING, RCB, "no hidden cases", "public-only")


def test_no_public_and_no_hidden_cases_is_still_no_task(tree):
    shutil.rmtree(tree / "rcb_tests_repos/acme__wordtool")
    layout = Layout.of(tree)
    for level in ("prd_json", "prd_json_medium", "prd_json_easy"):
        path = tree / "user_agent" / level / "realcode@101.json"
        path.write_text(path.read_text().replace('"public_test_cases"', '"unused"'))
    data = read_alias(layout, "realcode@101", AliasIndex.read(layout))
    assert not data.public_only
    assert _has(data.problems, Severity.ERROR, RCB, "missing: no hidden cases")


def test_a_public_only_import_is_marked_on_the_task_and_loads(tree, tmp_path):
    into = tmp_path / "tasks"
    task = {t.alias: t for t in import_tree(tree, into, base=BASE).tasks}["realcode@101"]
    assert _has(task.problems, Severity.WARNING, f"{RCB}/test_cases", "marked public-only")
    assert task.outcome is Outcome.CREATED
    loaded = load_catalog(into).tasks["realcode-101"]
    assert loaded.spec.title.endswith(PUBLIC_ONLY_MARK)
    assert loaded.spec.origin is not None and loaded.spec.origin.public_only
    assert not loaded.cases_in(Split.HIDDEN, Split.ENHANCED)
    assert len(loaded.cases_in(Split.PUBLIC)) == 2
