"""Issue 38, items 12 and 14b: a golden repository's symbolic links and a git clone's `.git`
(kept as links / left out, refused by name when they leave it), and a level whose own public
cases differ when the tree has no rcb_tests/public_test_cases. Trees of the tests' own
(tests/importers/icae_tree.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from icae_tui.importers.icae_eval import Outcome, import_tree
from icae_tui.importers.icae_export import export_tasks
from icae_tui.importers.problems import Problem, Severity
from tests.importers.icae_tree import build_tree, icae_json, write

BASE = "icae-base:bookworm"
GOLDEN = "realcode_repos/acme__wordtool"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "ICAE-EVAL")


def _import(tree: Path, into: Path):
    return {t.alias: t for t in import_tree(tree, into, base=BASE).tasks}["realcode@101"]


def _has(problems: list[Problem], severity: Severity, file: str, field: str, *texts: str) -> bool:
    return any(
        p.severity is severity and p.file == file and p.field == field
        and all(t in p.message for t in texts)
        for p in problems
    )  # fmt: skip


def _workspace(tree: Path) -> Path:
    """The golden repository as a Rust-like workspace whose member is a link inside it."""
    repo = tree / GOLDEN
    write(repo, "shared/member/Cargo.toml", '[package]\nname = "member"\n')
    write(repo, "shared/member/src/lib.rs", "pub fn f() {}\n")
    (repo / "crates").mkdir()
    (repo / "crates" / "member").symlink_to("../shared/member", target_is_directory=True)
    (repo / "NOTES.md").symlink_to("README.md")
    return repo


def test_links_inside_the_golden_repository_are_kept_as_links(tree, tmp_path):
    _workspace(tree)
    into = tmp_path / "tasks"
    task = _import(tree, into)
    assert task.outcome is Outcome.CREATED, task.problems
    assert not [p for p in task.problems if "symbolic link" in p.message]
    oracle = into / "realcode-101" / "oracle"
    assert (oracle / "crates/member").is_symlink()
    assert os.readlink(oracle / "crates/member") == "../shared/member"
    assert (oracle / "crates/member/src/lib.rs").read_text() == "pub fn f() {}\n"
    assert os.readlink(oracle / "NOTES.md") == "README.md"
    # again: nothing changes, the links included
    assert _import(tree, into).outcome is Outcome.UNCHANGED
    # and the export gives the links back as links
    export_tasks([into / "realcode-101"], tmp_path / "out")
    out = tmp_path / "out" / GOLDEN
    assert os.readlink(out / "crates/member") == "../shared/member"
    assert os.readlink(out / "NOTES.md") == "README.md"
    assert (out / "shared/member/Cargo.toml").is_file()


def test_a_link_that_leaves_the_golden_repository_is_refused_by_name(tree, tmp_path):
    repo = tree / GOLDEN
    (repo / "vendor").symlink_to("../../elsewhere/vendor", target_is_directory=True)
    (repo / "tools").mkdir()
    (repo / "tools" / "cc").symlink_to("/usr/bin/cc")
    task = _import(tree, tmp_path / "tasks")
    assert task.outcome is Outcome.FAILED
    assert _has(task.problems, Severity.ERROR, f"{GOLDEN}/vendor", "", "symbolic link",
                "outside the repository", "../../elsewhere/vendor")  # fmt: skip
    assert _has(task.problems, Severity.ERROR, f"{GOLDEN}/tools/cc", "", "symbolic link",
                "absolute", "/usr/bin/cc")  # fmt: skip
    assert not (tmp_path / "tasks" / "realcode-101").exists()


def test_a_git_clones_history_is_left_out_of_the_oracle_and_said(tree, tmp_path):
    repo = tree / GOLDEN
    write(repo, ".git/HEAD", "ref: refs/heads/main\n")
    write(repo, ".git/objects/ab/cdef", "blob")
    write(repo, "docs/.git/keep", "a folder named .git below the top is the code's own\n")
    into = tmp_path / "tasks"
    task = _import(tree, into)
    assert task.outcome is Outcome.CREATED
    assert _has(task.problems, Severity.NOTE, f"{GOLDEN}/.git", "", "left out")
    oracle = into / "realcode-101" / "oracle"
    assert not (oracle / ".git").exists()
    assert (oracle / "tool.py").is_file() and (oracle / "docs/.git/keep").is_file()


def test_a_levels_differing_public_cases_are_named_with_what_was_used(tree, tmp_path):
    shutil.rmtree(tree / "rcb_tests_repos/acme__wordtool/rcb_tests/public_test_cases")
    medium = tree / "user_agent/prd_json_medium/realcode@101.json"
    data = json.loads(medium.read_text())
    data["public_test_cases"]["feature2_upper.json"]["cases"][0]["expected_output"] = "AB!\n"
    medium.write_text(icae_json(data))
    easy = tree / "user_agent/prd_json_easy/realcode@101.json"
    data = json.loads(easy.read_text())
    del data["public_test_cases"]["feature1_count.json"]
    easy.write_text(icae_json(data))
    into = tmp_path / "tasks"
    task = _import(tree, into)
    assert task.outcome is Outcome.CREATED
    used = "the normal level's (L1, user_agent/prd_json/realcode@101.json)"
    assert _has(task.problems, Severity.WARNING, "user_agent/prd_json_medium/realcode@101.json",
                'public_test_cases["feature2_upper.json"]', "differs from", used)  # fmt: skip
    assert _has(task.problems, Severity.WARNING, "user_agent/prd_json_easy/realcode@101.json",
                "public_test_cases", "lacks feature1_count.json", used)  # fmt: skip
    scored = json.loads((into / "realcode-101/cases/public/feature2_upper.json").read_text())
    assert scored["cases"][0]["expected_output"] == "AB\n"  # L1's, as said
    # the level's own file still round-trips (kept verbatim for an export)
    export_tasks([into / "realcode-101"], tmp_path / "out")
    assert (tmp_path / "out" / "user_agent/prd_json_medium/realcode@101.json").read_bytes() == (
        medium.read_bytes()
    )
