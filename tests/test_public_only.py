"""A task imported with its public cases alone (`[origin] public_only`): the catalog takes it
without hidden cases, and its score line says overall is unknown because only public cases
ran — never a bare figure that reads like a full score."""

from __future__ import annotations

import shutil

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.display.wording import score_line
from icae_tui.domain.results import Score, SplitScore
from icae_tui.domain.task import Split
from tests.task_copies import copy_mini


def test_the_catalog_takes_a_public_only_task_and_refuses_one_without_the_mark(tmp_path):
    folder = copy_mini(tmp_path)
    for split in ("hidden", "enhanced"):
        shutil.rmtree(folder / "cases" / split)
    catalog = load_catalog(folder.parent)
    assert "mini" not in catalog.tasks
    assert any("no hidden cases" in str(e) for e in catalog.errors)
    with (folder / "task.toml").open("a") as toml:
        toml.write('\n[origin]\nsource = "icae-eval"\nalias = "realcode@900"\npublic_only = true\n')
    task = load_catalog(folder.parent).tasks["mini"]
    assert task.spec.origin is not None and task.spec.origin.public_only
    assert task.cases_in(Split.PUBLIC) and not task.cases_in(Split.HIDDEN, Split.ENHANCED)


@pytest.mark.parametrize(("splits", "said"), [
    ({Split.PUBLIC: SplitScore(total=2, passed=2)}, True),
    ({Split.PUBLIC: SplitScore(total=2, passed=2), Split.HIDDEN: SplitScore(total=3, passed=1)},
     False),
])  # fmt: skip
def test_a_score_of_public_cases_alone_says_so(splits, said):
    line = score_line(Score(done=2, planned=2, by_split=splits))
    assert ("public cases only" in line) is said
    if said:
        assert "overall —" in line  # unknown, not the public pass rate
