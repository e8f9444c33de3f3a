"""`icae tasks import cli-tool-bench` without an engine: the fuzzer's box is replaced by a
runner that answers as a box would (the fuzzer itself never runs on the host). What the
importer asks of the box (the files, the seed), how it maps a fuzzer's cases onto a task,
and how it treats hostile or broken output: each problem located, the other tools imported.
The real fuzzers in real boxes: tests/integration/test_ctb_import_engine.py."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from icae_tui.catalog.loader import load_catalog, load_task
from icae_tui.cli import main
from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import SideRun
from icae_tui.errors import ImageBuildError
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.cli_tool_bench import FuzzJob, FuzzRun
from icae_tui.importers.icae_eval import Outcome
from icae_tui.importers.problems import Severity
from icae_tui.packages import installed
from icae_tui.sandbox.docker import images
from tests.importers.ctb_tree import COWSAY, MOO, REV, build_tree, checkout

INSTALL = ["sh -c 'mkdir -p /repo && cd /repo && git clone https://github.com/acme/revtool.git "
           "&& cd revtool && install -m 755 revtool.py /usr/local/bin/revtool'"]  # fmt: skip


def _case(command="revtool upper 'a b'", category="revtool upper <text>", **more):
    return {"command": command, "category": category, "prep_script": "", "mount_files": {},
            "env_vars": {}, **more}  # fmt: skip


def _output(cases, install=INSTALL, base="python:3.11") -> bytes:
    return json.dumps({"base_image": base, "install": install, "cases": cases}).encode()


class Box:
    """Answers each tool's job with the bytes given for it, and keeps the jobs."""

    def __init__(self, answers: dict[str, FuzzRun]):
        self.answers, self.jobs = answers, []

    def __call__(self, job: FuzzJob) -> FuzzRun:
        self.jobs.append(job)
        tool = next(t for t in self.answers if f"/repo/{t}/start.py" in job.argv[-1])
        return self.answers[tool]


@pytest.fixture
def tree(tmp_path):
    return build_tree(tmp_path / "tree")


def test_the_box_gets_the_fuzzer_its_base_adapter_and_the_seed(tree, tmp_path):
    box = Box({REV: FuzzRun(0, _output([_case(), _case("revtool upper x")]))})
    ctb.import_tree(tree, tmp_path / "tasks", runner=box, oracles={REV: str(checkout(tmp_path / "co"))},
                    only=[REV], seed=7)  # fmt: skip
    (job,) = box.jobs
    assert set(job.files) == {"/fuzz/run_differential_test/BaseRepoAdapter.py",
                              "/fuzz/run_differential_test/repo/acme/revtool/start.py",
                              "/fuzz/icae_fuzz_main.py"}  # fmt: skip
    assert job.argv[:3] == ["python3", "/fuzz/icae_fuzz_main.py", "7"]
    assert job.env["PYTHONHASHSEED"] == "7" and job.cap_bytes == ctb.MAX_OUTPUT
    spec = tomllib.loads((tmp_path / "tasks" / "ctb-acme-revtool" / "task.toml").read_text())
    assert spec["origin"]["seed"] == 7 and spec["cases"]["workdir"] == "/test_data"


def test_cases_keep_category_fixtures_prep_and_environment(tree, tmp_path):
    cases = [_case(mount_files={"/in/a.txt": "x\n"}, prep_script="touch /test_data/p",
                   env_vars={"LANG": "C", "X_1": "a b"}),
             _case("revtool upper y"), _case("revtool save f 'z'", "revtool save <file> <text>")]  # fmt: skip
    box = Box({REV: FuzzRun(0, _output(cases))})
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=box, oracles={REV: str(checkout(tmp_path / "co"))},
                             only=[REV])  # fmt: skip
    assert [t.outcome for t in report.tasks] == [Outcome.CREATED]
    task = load_catalog(tasks).tasks["ctb-acme-revtool"]
    by_id = {c.id: c for c in task.cases}
    assert sorted(by_id) == ["hidden/revtool_upper_text#0", "public/revtool_save_file_text#0",
                             "public/revtool_upper_text#0"]  # fmt: skip
    first = by_id["public/revtool_upper_text#0"]
    assert first.pattern == "revtool upper <text>"
    assert first.case.command == "export LANG=C X_1='a b'; revtool upper 'a b'"
    assert first.case.files == {"in/a.txt": "x\n"} and first.case.prep == "touch /test_data/p"
    assert task.spec.interface.tool == "revtool" and task.spec.interface.kind == "command"
    assert all(prd.endswith(ctb.contract("revtool")) for prd in task.prd.values())
    oracle = task.spec.oracle
    assert oracle is not None and oracle.package is None
    assert oracle.install[0] == ("mkdir -p /repo && cd /repo && cp -a /opt/oracle revtool && cd "
                                 "revtool && install -m 755 revtool.py /usr/local/bin/revtool")  # fmt: skip


def test_a_pinned_package_is_the_oracle_and_brings_its_client(tree, tmp_path):
    box = Box({MOO: FuzzRun(0, _output([_case("cowsay -t a", "cowsay -t <text>")] * 2,
                                       install=["pip install ."], base="python:latest"))})  # fmt: skip
    tasks = tmp_path / "tasks"
    ctb.import_tree(tree, tasks, runner=box, oracles={MOO: COWSAY}, only=[MOO])
    spec = load_catalog(tasks).tasks["ctb-acme-moo"].spec
    assert spec.oracle is not None and spec.oracle.package == COWSAY
    assert spec.origin is not None and spec.origin.oracle_source == COWSAY
    assert spec.image.packages == ["python3-pip"] and spec.language == "python"
    recorded = json.loads((tasks / "ctb-acme-moo" / "origin" / "cli-tool-bench.json").read_text())
    assert (
        recorded["install_oracle"] == ["pip install ."]
        and recorded["base_image"] == "python:latest"
    )


def test_a_pinned_pip_oracle_on_a_go_adapter_gets_pythons_runtime_not_go(tree, tmp_path):
    """The oracle is a PyPI package: the Go toolchain (739 MB) was installed for nothing."""
    box = Box({MOO: FuzzRun(0, _output([_case("cowsay -t a", "cowsay -t <text>")] * 2,
                                       install=["pip install ."], base="golang:1.22"))})  # fmt: skip
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=box, oracles={MOO: COWSAY}, only=[MOO])
    spec = load_catalog(tasks).tasks["ctb-acme-moo"].spec
    assert spec.language == "python" and spec.image.packages == ["python3-pip"]
    (note,) = [p for p in report.tasks[0].problems if p.field == "base_image"]
    assert note.severity is Severity.NOTE
    assert note.message == ("golang:1.22 is go's, but the oracle is the pip package "
                            "cowsay==6.1: the task's runtime is python's")  # fmt: skip


@pytest.mark.parametrize(("run", "field", "message"), [
    (FuzzRun(0, b"generating...\n{"), "", "the fuzzer's output: Invalid JSON"),
    (FuzzRun(0, b"", overflowed=True), "", "the fuzzer printed more than the bound in its box"),
    (FuzzRun(1, b"", b"Traceback: boom"), "", "the fuzzer exited 1 in its box:\nTraceback: boom"),
    (FuzzRun(0, _output([_case(env_vars={"BAD NAME": "x"})])), "cases[0].env_vars.BAD NAME.[key]",
     "the fuzzer's output: String should match pattern"),
    (FuzzRun(0, _output([_case(mount_files={"../escape": "x"})])), "cases[0].files",
     "Value error, fixture path must be relative and stay inside: '../escape'"),
    (FuzzRun(0, _output([])), "cases", "the fuzzer's output: List should have at least 1 item"),
])  # fmt: skip
def test_hostile_or_broken_output_is_located_and_writes_nothing(
    tree, tmp_path, run, field, message
):
    moo = FuzzRun(0, _output([_case("cowsay -t a", "cowsay -t <text>")] * 2))
    box = Box({REV: run, MOO: moo})
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=box,
                             oracles={REV: str(checkout(tmp_path / "co")), MOO: COWSAY})  # fmt: skip
    outcomes = {t.alias: t for t in report.tasks}
    assert outcomes[MOO].outcome is Outcome.CREATED  # the other tool still imports
    (problem,) = outcomes[REV].problems
    assert outcomes[REV].outcome is Outcome.FAILED and not (tasks / "ctb-acme-revtool").exists()
    assert problem.file == "run_differential_test/repo/acme/revtool/start.py"
    assert problem.field == field
    assert problem.message.startswith(message)


def test_the_command_line_says_what_each_tool_needs(tree, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("icae_tui.cli.importers.fuzz_in_a_box", Box({}))
    argv = ["--tasks", str(tmp_path / "tasks"), "tasks", "import", "cli-tool-bench", str(tree)]
    assert main([*argv, "--tool", REV]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "ctb-acme-revtool (acme/revtool): not imported",
        "  error: run_differential_test/repo/acme/revtool/start.py: field 'install_oracle': the "
        "adapter installs its oracle from a live, unpinned source: give --oracle "
        "acme/revtool=pip:NAME==V, npm:NAME@V or a local checkout",
        f"1 tools: 0 imported into {tmp_path / 'tasks'} (0 created, 0 updated, 0 unchanged), "
        "1 not imported",
    ]
    assert main([*argv, "--oracle", "acme/revtool"]) == 2
    assert "not OWNER/REPO=SOURCE" in capsys.readouterr().out
    assert main(["--tasks", str(tmp_path), "tasks", "import", "cli-tool-bench", str(tmp_path)]) == 2
    assert "no CLI-Tool-Bench tools" in capsys.readouterr().out


def test_a_folder_that_is_not_this_tools_import_is_left_as_it_is(tree, tmp_path):
    tasks = tmp_path / "tasks"
    (tasks / "ctb-acme-revtool").mkdir(parents=True)
    (tasks / "ctb-acme-revtool" / "task.toml").write_text('id = "ctb-acme-revtool"\n')
    box = Box({REV: FuzzRun(0, _output([_case(), _case()]))})
    report = ctb.import_tree(tree, tasks, runner=box, oracles={REV: str(checkout(tmp_path / "co"))},
                             only=[REV])  # fmt: skip
    (problem,) = report.tasks[0].problems
    assert (
        problem.message
        == "the task folder exists and it is not a CLI-Tool-Bench import: left as it is"
    )
    assert (
        box.jobs == []
        and (tasks / "ctb-acme-revtool" / "task.toml").read_text() == 'id = "ctb-acme-revtool"\n'
    )


def test_the_prompts_tool_name_is_the_one_the_cases_call(tree, tmp_path):
    prompt = tree / "agent_prompt" / REV / "agent_prompt.txt"
    prompt.write_text(
        prompt.read_text().replace("**CLI Tool Name**: revtool", "**CLI Tool Name**: flip")
    )
    cases = [
        _case("revtool upper a | revtool reverse b"),
        _case("echo revtool.py; revtool upper c"),
    ]
    box = Box({REV: FuzzRun(0, _output(cases))})
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=box, oracles={REV: str(checkout(tmp_path / "co"))},
                             only=[REV])  # fmt: skip
    assert str(report.tasks[0].problems[0]) == (
        f"note: agent_prompt/{REV}/agent_prompt.txt: field 'CLI Tool Name': the prompt calls the "
        "tool flip: so do the cases' commands (the oracle's revtool answers for it)"
    )
    task = load_catalog(tasks).tasks["ctb-acme-revtool"]
    assert [c.case.command for c in task.cases] == [
        "flip upper a | flip reverse b",
        "echo revtool.py; flip upper c",
    ]
    assert {c.pattern for c in task.cases} == {"flip upper <text>"}
    assert task.spec.interface.tool == "flip" and task.spec.delivery.entry == "/workspace/flip"
    assert task.spec.oracle is not None and task.spec.oracle.entry == "/opt/icae-oracle-bin/revtool"


def _side(stdout: bytes, **bounds) -> SideOutcome:
    run = SideRun(exit_code=0, stdout=stdout.decode(errors="replace"), stderr="", **bounds)
    return SideOutcome(run, stdout)


class Oracle:
    """Answers each case of the task it is given with a stdout of its own; keeps the tasks."""

    def __init__(self, broken: dict[str, dict[str, bool]] | None = None, fails: bool = False,
                 locked: list[str] | None = None):  # fmt: skip
        self.broken, self.fails, self.tasks = broken or {}, fails, []
        self.locked = locked or []

    def __call__(self, task):
        self.tasks.append(task)
        if self.fails:
            raise ImageBuildError("oracle image: `pip install .` exited 1")
        return ctb.OracleRecord(
            {ref.id: _side(f"out of {ref.id}\n".encode() + b"\xff", **self.broken.get(ref.id, {}))
             for ref in task.cases}, self.locked)  # fmt: skip


def test_each_cases_expected_output_is_its_oracles_stdout(tree, tmp_path):
    cases = [_case(), _case("revtool upper x"),
             _case("revtool save f 'z'", "revtool save <file> <text>")]  # fmt: skip
    box = Box({REV: FuzzRun(0, _output(cases))})
    oracle = Oracle({"hidden/revtool_upper_text#0": {"timed_out": True}})
    tasks, oracles = tmp_path / "tasks", {REV: str(checkout(tmp_path / "co"))}
    report = ctb.import_tree(tree, tasks, runner=box, oracles=oracles, only=[REV], outputs=oracle)
    (result,) = report.tasks
    assert result.outcome is Outcome.CREATED
    (staged,) = oracle.tasks  # run on the task as staged, before the folder is written
    assert staged.root != str(tasks / "ctb-acme-revtool") and not Path(staged.root).exists()
    task = load_catalog(tasks).tasks["ctb-acme-revtool"]
    assert {c.id: c.case.expected_output for c in task.cases} == {
        i: f"out of {i}\n\ufffd" for i in ("public/revtool_upper_text#0",
                                           "hidden/revtool_upper_text#0",
                                           "public/revtool_save_file_text#0")}  # fmt: skip
    warned = [str(p) for p in result.problems if p.severity is Severity.WARNING]
    assert warned == ["warning: cases/hidden/revtool_upper_text.json: field "
                      "'cases[0].expected_output': the oracle's run timed out: stored is what it "
                      "printed until then"]  # fmt: skip
    assert str(result.problems[-1]).endswith("; expected outputs: its stdout, run once here")
    again = ctb.import_tree(tree, tasks, runner=box, oracles=oracles, only=[REV], outputs=Oracle())
    assert again.tasks[0].outcome is Outcome.UNCHANGED  # the same outputs: nothing rewritten


def test_an_oracle_image_that_does_not_build_fails_the_tool(tree, tmp_path):
    box = Box({REV: FuzzRun(0, _output([_case(), _case()]))})
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=box, oracles={REV: str(checkout(tmp_path / "co"))},
                             only=[REV], outputs=Oracle(fails=True))  # fmt: skip
    (result,) = report.tasks
    assert result.outcome is Outcome.FAILED and not (tasks / "ctb-acme-revtool").exists()
    assert [str(p) for p in result.problems] == [
        "error: run_differential_test/repo/acme/revtool/start.py: field 'install_oracle': the "
        "oracle's image did not build: oracle image: `pip install .` exited 1",
    ]


def test_the_adapters_sanitizer_and_two_oracle_runs_come_with_the_task(tree, tmp_path):
    """CLI-Tool-Bench masks both sides with the adapter's sanitize_stdout: the task gets the
    adapter's files and the program that runs it (in a box, at judging), and runs its oracle
    twice so what still varies is set apart."""
    out = json.loads(_output([_case(), _case()])) | {"sanitizes": True}
    box = Box({REV: FuzzRun(0, json.dumps(out).encode())})
    report = ctb.import_tree(tree, tmp_path / "tasks", runner=box,
                             oracles={REV: str(checkout(tmp_path / "co"))}, only=[REV])  # fmt: skip
    (result,) = report.tasks
    assert result.outcome is Outcome.CREATED
    assert not [p for p in result.problems if p.severity is Severity.WARNING]
    task = load_task(tmp_path / "tasks" / result.task_id)
    assert task.spec.sanitizer is not None and task.spec.cases.oracle_runs == 2
    folder = Path(task.root) / "sanitizer"
    program = (folder / "icae_sanitize.py").read_text()
    assert f"run_differential_test/repo/{REV}/start.py" in program
    assert (folder / f"run_differential_test/repo/{REV}/start.py").is_file()
    assert (folder / "run_differential_test/BaseRepoAdapter.py").is_file()


def test_an_npm_links_relative_bin_is_taken_off_path_still_working(tmp_path):
    """npm's global bin is a link relative to its folder: moved, it would point nowhere."""
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib" / "pkg" / "tool.js").write_text("#!/bin/sh\necho linked\n")
    (tmp_path / "lib" / "pkg" / "tool.js").chmod(0o755)
    (tmp_path / "bin" / "tool").symlink_to("../lib/pkg/tool.js")
    (tmp_path / "bin" / "plain").write_text("#!/bin/sh\necho plain\n")
    (tmp_path / "bin" / "plain").chmod(0o755)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    off = tmp_path / "off"
    for name in ("tool", "plain"):
        line = ctb.oracle_off_path(name).replace(ctb.ORACLE_BIN, str(off))
        subprocess.run(["sh", "-c", line], env=env, check=True)
        assert not (tmp_path / "bin" / name).exists()
    assert subprocess.run([off / "tool"], capture_output=True, text=True).stdout == "linked\n"
    assert subprocess.run([off / "plain"], capture_output=True, text=True).stdout == "plain\n"


def test_the_resolved_set_of_a_pinned_package_is_locked_in_the_task(tree, tmp_path):
    """Only the top package was pinned: what it installed is recorded, and built from."""
    box = Box({MOO: FuzzRun(0, _output([_case("cowsay -t a", "cowsay -t <text>")] * 2,
                                       install=["pip install ."], base="python:latest"))})  # fmt: skip
    tasks, locked = tmp_path / "tasks", ["pip:cowsay==6.1", "pip:wcwidth==0.2.13"]
    ctb.import_tree(tree, tasks, runner=box, oracles={MOO: COWSAY}, only=[MOO],
                    outputs=Oracle(locked=locked))  # fmt: skip
    spec = load_catalog(tasks).tasks["ctb-acme-moo"].spec
    assert spec.oracle is not None and spec.oracle.locked == locked
    assert images.package_install_line(COWSAY, locked) == (
        "python3 -m pip install --no-cache-dir --disable-pip-version-check "
        "--break-system-packages --no-deps cowsay==6.1 wcwidth==0.2.13")


def test_what_an_install_added_and_how_it_differs_from_its_lock():
    before = json.dumps([{"name": "pip", "version": "23.0"}]).encode()
    after = json.dumps([{"name": "pip", "version": "23.0"}, {"name": "cowsay", "version": "6.1"},
                        {"name": "local", "version": "file:///x"}]).encode()  # fmt: skip
    assert installed.locked_set("pip", before, after) == ["pip:cowsay==6.1"]
    npm = {"dependencies": {"json": {"version": "11.0.0", "dependencies": {
        "@a/b": {"version": "1.2.0"}}}}}  # fmt: skip
    assert installed.locked_set("npm", b"{}", json.dumps(npm).encode()) == [
        "npm:@a/b@1.2.0", "npm:json@11.0.0"]
    assert installed.difference(["pip:a==1", "pip:b==2"], {"pip:x==0"},
                                {"pip:x==0", "pip:a==1", "pip:b==3"}) == (
        "not installed: pip:b==2; not locked: pip:b==3")  # fmt: skip
    with pytest.raises(installed.UnreadableList):
        installed.pinned("pip", b"{not json")
