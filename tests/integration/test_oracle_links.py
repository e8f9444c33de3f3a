"""A golden repository's inner links reach the oracle's box as links (the ICAE importer keeps
them: a Rust workspace member may be one), so an oracle run through one works; a link that
leaves oracle/ is refused when the image is built."""

from __future__ import annotations

import os
import shutil

import pytest

from icae_tui.errors import ImageBuildError
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.docker.images import tree_links
from tests.task_copies import copy_mini, edit_toml, load_mini

pytestmark = pytest.mark.docker


async def test_an_oracle_run_through_a_linked_folder_scores(tmp_path, store):
    folder = copy_mini(tmp_path)
    oracle = folder / "oracle"
    (oracle / "impl").mkdir()
    shutil.move(oracle / "mini.py", oracle / "impl" / "mini.py")
    os.symlink("impl", oracle / "lib")  # a linked folder: rglob never walks into it
    edit_toml(folder, 'entry = "python3 /opt/oracle/mini.py"',
              'entry = "python3 /opt/oracle/lib/mini.py"')  # fmt: skip
    task = load_mini(folder)
    outcome = await Run(RunConfig(task=task, agent="scripted:good", pace_s=0), store).execute()
    assert outcome.status == "completed", outcome.error
    assert outcome.score.overall == 1.0, [r.reason for r in outcome.results if not r.passed]


def test_a_link_out_of_the_oracle_is_refused(tmp_path):
    (tmp_path / "oracle").mkdir()
    os.symlink("../elsewhere", tmp_path / "oracle" / "out")
    os.symlink("/etc/passwd", tmp_path / "oracle" / "abs")
    with pytest.raises(ImageBuildError, match="a link out of oracle/"):
        tree_links(tmp_path / "oracle")
    (tmp_path / "oracle" / "abs").unlink()
    (tmp_path / "oracle" / "out").unlink()
    os.symlink("sub/x", tmp_path / "oracle" / "in")
    assert tree_links(tmp_path / "oracle") == {"in": "sub/x"}
