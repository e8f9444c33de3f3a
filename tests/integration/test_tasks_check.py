"""`icae tasks check` on the real engine: a copy of the fixture task `mini` with a case whose
oracle output is random and a data defect (two user-agent records with one id), both
reported with their file and field, the other cases sound; and a task that does not load."""

from __future__ import annotations

import json
import shutil

import pytest

from icae_tui.cli import main
from tests.task_copies import copy_mini, edit_toml

pytestmark = pytest.mark.docker


def test_check_reports_a_nondeterministic_case_and_a_data_defect(tmp_path, capsys):
    folder = copy_mini(tmp_path)
    (folder / "cases" / "enhanced" / "extra.json").write_text(
        json.dumps({"description": "random", "cases": [{"input": {"op": "rand"}}]})
    )
    records = folder / "user_agent" / "L2.json"
    records.write_text(records.read_text().replace('"C002"', '"C001"'))

    shutil.copytree(folder, folder.parent / "other")  # its task.toml still says id = "mini"

    status = main(["--tasks", str(folder.parent), "tasks", "check", "mini", "other"])

    out = capsys.readouterr().out
    lines = out.splitlines()
    assert status == 1, out
    assert lines[0] == "mini: 2 problems (1 data, 1 nondeterministic)"
    assert sorted(lines[1:3]) == [
        "  mini: cases/enhanced/extra.json: field 'cases[0]': nondeterministic: the oracle's "
        "two runs differ",
        "  mini: user_agent/L2.json: field 'oracle_data.hidden_constraints[1].constraint_id': "
        "'C001' is the id of an earlier record",
    ]
    assert lines[3:5] == [  # not loaded: the catalog's error, no oracle run
        "other: 1 problem (1 data)",
        "  other: task.toml: field 'id': 'mini' differs from folder name 'other'",
    ]
    assert lines[5] == (
        "checked 2 tasks: 0 sound, 2 with problems (2 data, 1 nondeterministic); fix each file "
        "and field above, then check again"
    )
    assert len(lines) == 6  # every other case of mini deterministic, equal to its stored output


def test_check_of_the_fixture_task_as_it_is_finds_nothing(capsys):
    from tests.conftest import FIXTURE_TASKS

    status = main(["--tasks", str(FIXTURE_TASKS), "tasks", "check"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.splitlines()[0].startswith("mini: ok — data sound; ")
    assert out.splitlines()[-1] == "checked 1 task: all sound"


def test_check_fails_a_task_whose_image_cannot_be_had(tmp_path, capsys):
    """On the real engine: a named base that is neither there nor pullable, and a language no
    registry here provides; each names task.toml and its field, and no oracle is run."""
    folder = copy_mini(tmp_path)
    shutil.copytree(folder, folder.parent / "kt")
    edit_toml(folder.parent / "kt", 'id = "mini"', 'id = "kt"')
    edit_toml(folder.parent / "kt", 'language = "python"', 'language = "kotlin"')
    edit_toml(folder, "[interface]", '[image]\nbase = "icae-test-no-such-image:0"\n\n[interface]')

    status = main(["--tasks", str(folder.parent), "tasks", "check", "mini", "kt"])

    lines = capsys.readouterr().out.splitlines()
    assert status == 1, lines
    assert lines[0] == "mini: 1 problem (1 image)"
    assert lines[1].startswith(
        "  mini: task.toml: field 'image.base': image 'icae-test-no-such-image:0' is not on the "
        "engine and could not be pulled"
    )
    assert lines[2:4] == ["kt: 1 problem (1 image)", lines[3]]
    assert lines[3].startswith("  kt: task.toml: field 'language': language kotlin (1.9.25 in "
                               "ICAE-EVAL) is not provided here")  # fmt: skip
    assert lines[4].startswith("checked 2 tasks: 0 sound, 2 with problems (2 image)")
