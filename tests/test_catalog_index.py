"""The catalog's index (icae_tui/catalog/index.py): an unchanged task is listed without reading
its large files, any change is validated again at listing, and a lost or foreign index is
rebuilt."""

from __future__ import annotations

import json
import os
import shutil

from icae_tui.catalog import index as catalog_index
from icae_tui.catalog.loader import TaskError, load_catalog, load_failure
from icae_tui.catalog.search import TaskCard
from icae_tui.domain.task import Level, Split
from tests.conftest import FIXTURE_TASKS


def _tasks(tmp_path, *names):
    folder = tmp_path / "tasks"
    for name in names:
        dest = folder / name
        shutil.copytree(FIXTURE_TASKS / "mini", dest)
        toml = dest / "task.toml"
        toml.write_text(toml.read_text().replace('id = "mini"', f'id = "{name}"'))
    return folder


def _garble_keeping_stat(path):
    """Rewrite the file in place with text of the same length that is not JSON, its
    modification time restored: what the index keys on is unchanged, what it says is not."""
    st = path.stat()
    path.write_bytes(b"!" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_an_unchanged_task_is_listed_without_reading_its_cases(tmp_path):
    folder = _tasks(tmp_path, "alpha", "beta")
    first = load_catalog(folder)
    assert first.errors == [] and sorted(first.cards) == ["alpha", "beta"]
    case_file = folder / "alpha" / "cases" / "hidden" / "ops.json"
    _garble_keeping_stat(case_file)

    listed = load_catalog(folder)
    # listed from the index: the garbled file was not read, so nothing is reported yet ...
    assert listed.errors == []
    assert listed.cards["alpha"] == first.cards["alpha"]  # counts, PRDs (read now), words
    # ... and the task is read when it is used: then the file's error, located
    assert listed.tasks.get("alpha") is None
    assert "ops.json" in load_failure(listed.tasks, "alpha")
    assert listed.tasks["beta"].cases_in(Split.HIDDEN)


def test_a_changed_file_is_validated_again_when_listed(tmp_path):
    folder = _tasks(tmp_path, "alpha", "beta")
    assert load_catalog(folder).errors == []
    (folder / "alpha" / "cases" / "hidden" / "ops.json").write_text('{"cases": [{"nope": 1}]}')
    listed = load_catalog(folder)
    assert sorted(listed.cards) == ["beta"]
    [err] = listed.errors
    assert isinstance(err, TaskError) and err.path.name == "ops.json"
    assert "nope" in err.message


def test_added_and_removed_files_change_the_counts(tmp_path):
    folder = _tasks(tmp_path, "alpha")
    before = load_catalog(folder).cards["alpha"].by_split[Split.ENHANCED]
    extra = {"cases": [{"input": {"op": "upper", "text": "x"}, "expected_output": "X"}]}
    (folder / "alpha" / "cases" / "enhanced" / "more.json").write_text(json.dumps(extra))
    assert load_catalog(folder).cards["alpha"].by_split[Split.ENHANCED] == before + 1
    (folder / "alpha" / "cases" / "enhanced" / "more.json").unlink()
    assert load_catalog(folder).cards["alpha"].by_split[Split.ENHANCED] == before


def test_errors_are_listed_from_the_index_too(tmp_path):
    folder = _tasks(tmp_path, "alpha", "beta")
    (folder / "beta" / "solutions" / "bad.yaml").write_text("steps: [unclosed\n")
    (folder / "alpha" / "prd" / "L2.md").unlink()
    first, second = load_catalog(folder), load_catalog(folder)
    assert [str(e) for e in second.errors] == [str(e) for e in first.errors]
    assert {e.path.name for e in second.errors} == {"L2.md", "bad.yaml"}
    assert sorted(second.cards) == ["beta"] and "bad" not in second.cards["beta"].solutions


def test_a_torn_or_foreign_index_is_rebuilt(tmp_path):
    folder = _tasks(tmp_path, "alpha")
    load_catalog(folder)
    path = catalog_index.index_path(folder)
    for garbage in ("{not json", '{"schema": "other", "tasks": {}}', '{"schema": 1}', "[]"):
        path.write_text(garbage)
        listed = load_catalog(folder)
        assert listed.errors == [] and listed.tasks["alpha"].cases
        assert json.loads(path.read_text())["schema"] == catalog_index.SCHEMA


def test_the_index_can_be_turned_off(tmp_path, monkeypatch):
    folder = _tasks(tmp_path, "alpha")
    monkeypatch.setenv("ICAE_CATALOG_INDEX", "0")
    assert load_catalog(folder).errors == []
    assert not catalog_index.index_path(folder).exists()
    monkeypatch.delenv("ICAE_CATALOG_INDEX")
    load_catalog(folder)
    assert catalog_index.index_path(folder).exists()


def test_a_card_from_the_index_is_the_card_of_the_loaded_task(tmp_path):
    folder = _tasks(tmp_path, "alpha")
    load_catalog(folder)
    listed = load_catalog(folder)
    fresh = TaskCard.of(listed.tasks["alpha"])
    card = listed.cards["alpha"]
    for name in ("id", "title", "language", "summary", "interface", "origin", "capabilities",
                 "root", "solutions", "budgets", "by_split", "by_pattern"):  # fmt: skip
        assert getattr(card, name) == getattr(fresh, name), name
    assert {lv: card.prd[lv] for lv in Level} == {lv: fresh.prd[lv] for lv in Level}
    assert {lv: card.prd_words(lv) for lv in Level} == {lv: fresh.prd_words(lv) for lv in Level}


def test_a_removed_task_leaves_the_index(tmp_path):
    folder = _tasks(tmp_path, "alpha", "beta")
    load_catalog(folder)
    shutil.rmtree(folder / "beta")
    assert sorted(load_catalog(folder).cards) == ["alpha"]
    assert sorted(json.loads(catalog_index.index_path(folder).read_text())["tasks"]) == ["alpha"]
