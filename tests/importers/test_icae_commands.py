"""`icae tasks import icae-eval PATH` and `icae tasks export icae-eval OUT` from the command
line: the per-task lines, the exit status, and the tasks they leave. No engine."""

from __future__ import annotations

import json

from icae_tui.cli import main
from tests.importers.icae_tree import build_tree, icae_json, tree_files


def test_import_prints_one_line_per_task_with_its_problems_and_fails_on_a_task_left_out(
    tmp_path, capsys
):
    tree = build_tree(tmp_path / "tree")
    tasks = tmp_path / "tasks"
    argv = ["--tasks", str(tasks), "tasks", "import", "icae-eval", str(tree),
            "--base-image", "icae-base:bookworm"]  # fmt: skip
    assert main(argv) == 1  # realcode@103 was not imported
    out = capsys.readouterr().out.splitlines()
    heads = [line for line in out if not line.startswith("  ")]
    assert heads == [
        "realcode-101 (realcode@101): created · cases differential against its golden repository",
        "realcode-102 (realcode@102): created · cases judged against their stored expected "
        "outputs (as ICAE-EVAL)",
        "realcode-103 (realcode@103): not imported",
        f"3 aliases: 2 imported into {tasks} (2 created, 0 updated, 0 unchanged), 1 not imported",
    ]
    first_of_103 = out[out.index("realcode-103 (realcode@103): not imported") + 1]
    assert first_of_103 == ("  error: user_agent/prd_json_easy/realcode@103.json: missing: the "
                            "easy level (L3) has no user-agent data")  # fmt: skip
    assert ("  warning: rcb_tests_repos/acme__lentool/rcb_tests/test_cases/feature3_len.json: "
            "field 'cases[0].expected_output': not a string (int): scored as its JSON text '3', "
            "as ICAE-EVAL scores it") in out  # fmt: skip

    assert main(["--tasks", str(tasks), "tasks"]) == 0
    listed = capsys.readouterr().out
    assert "realcode-101 dispatcher public   2 · hidden   3 · enhanced   1" in listed

    assert main(argv + ["--task", "realcode@101", "--task", "realcode-102"]) == 0
    again = capsys.readouterr().out.splitlines()
    assert again[-1] == f"2 aliases: 2 imported into {tasks} (0 created, 0 updated, 2 unchanged), 0 not imported"


def test_export_writes_the_imported_tasks_in_icae_evals_layout(tmp_path, capsys):
    tree = build_tree(tmp_path / "tree")
    tasks = tmp_path / "tasks"
    main(["--tasks", str(tasks), "tasks", "import", "icae-eval", str(tree)])
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["--tasks", str(tasks), "tasks", "export", "icae-eval", str(out),
                 "--task", "realcode-101"]) == 0  # fmt: skip
    assert capsys.readouterr().out.startswith("exported 1 tasks (")
    files = tree_files(out)
    original = tree_files(tree)
    assert all(files[k] == original[k] for k in files if k != "repo_alias.json")
    assert json.loads(files["repo_alias.json"]) == {
        "realcode@101": json.loads(original["repo_alias.json"])["realcode@101"]
    }
    assert files["repo_alias.json"].decode() == icae_json(json.loads(files["repo_alias.json"]))
    assert main(["--tasks", str(tasks), "tasks", "export", "icae-eval", str(out),
                 "--task", "nope"]) == 1  # fmt: skip
    assert "skipped" in capsys.readouterr().out


def test_a_path_that_is_no_icae_eval_tree_exits_2(tmp_path, capsys):
    assert main(["--tasks", str(tmp_path / "t"), "tasks", "import", "icae-eval", str(tmp_path)]) == 2
    assert "no ICAE-EVAL tasks" in capsys.readouterr().out
    assert main(["tasks", "import"]) == 2
    assert "usage: icae tasks import icae-eval PATH" in capsys.readouterr().out
