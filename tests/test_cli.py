"""The `icae` command line (icae_tui/cli/root.py). Bad options refused up front: an agent that is not
one of the task's, an `--agents` file that cannot be read or is not TOML, run options out of
range, `icae runs --export` without a run. Each is one line on stderr, exit status 2, and
nothing stored: no run row, no events (no Docker; an engine reached by mistake is a dead
socket). A run's config refuses what the command line would; a closed stdout ends quietly."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from icae_tui.agents.base import AgentError
from icae_tui.agents.config import file_error
from icae_tui.agents.registry import check_agent, make_agent
from icae_tui.catalog.loader import load_catalog
from icae_tui.cli import main
from icae_tui.display.plain import PlainPrinter
from icae_tui.domain.events import CasesPlanned
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.store.database import RunStore
from tests.conftest import BUNDLED_TASKS, FIXTURE_TASKS
from tests.task_copies import copy_mini
from tests.ui.helpers import started

RECORDING = BUNDLED_TASKS / "semver" / "recordings" / "good-L1.jsonl"
KNOWN = "(known: broken, good, partial)"  # the solutions of the fixture task `mini`
BROKEN_TOML = '[agents.local]\nkind = \nmodel = "m"\n'  # a value missing on line 2
READY_AGENT = '[agents.local]\nkind = "model"\nmodel = "m"\nbase_url = "http://127.0.0.1:9"\n'


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ICAE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user agents file
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    return tmp_path / "home"


def icae(*argv: str) -> int:
    return main(["--tasks", str(FIXTURE_TASKS), *argv])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1 and err.strip(), err
    return err.rstrip("\n")


def stored_runs(home: Path) -> list:
    db = home / "runs.db"
    if not db.exists():
        return []
    store = RunStore(db)
    try:
        return store.runs()
    finally:
        store.close()


# --- the agent ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../../x", "../solutions/good", "good/../good", "..\\good", "/etc/passwd", "nope"]
)
def test_a_name_that_is_not_a_solution_stores_no_run(home, capsys, name):
    assert icae("run", "--task", "mini", "--agent", f"scripted:{name}") == 2
    assert one_error_line(capsys) == (
        f"error: agent {'scripted:' + name!r}: {name!r} is not a solution of task mini {KNOWN}"
    )
    assert stored_runs(home) == []


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ("scripted:", "name a solution, e.g. scripted:good"),
        ("gpt:x", "unknown kind 'gpt'"),
        ("model:nope", "no model agent 'nope' configured"),
    ],
)
def test_other_unknown_agents_store_no_run(home, capsys, agent, says):
    assert icae("run", "--task", "mini", "--agent", agent) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: agent {agent!r}: ") and says in line
    assert stored_runs(home) == []


def test_check_agent_names_what_is_wrong_and_builds_nothing(fixture_catalog, home, tmp_path):
    task = fixture_catalog.tasks["mini"]
    agents = tmp_path / "agents.toml"
    agents.write_text(READY_AGENT + '[agents.bad]\nkind = "model"\nmodel = 5\n')
    assert check_agent("scripted:good", task) is None
    assert check_agent("model:local", task, [agents]) is None  # a broken entry hides no other
    assert "agents.bad.model" in (check_agent("model:bad", task, [agents]) or "")
    assert "is not a solution of task mini" in (check_agent("scripted:../good", task) or "")


@pytest.mark.parametrize("name", ["../good", "good/../good", "..\\good", "x..y"])
def test_make_agent_refuses_path_like_solution_names(tmp_path, name):
    tasks = copy_mini(tmp_path).parent
    solutions = tasks / "mini" / "solutions"
    shutil.copy(solutions / "good.yaml", solutions / "x..y.yaml")  # a real file, still refused
    task = load_catalog(tasks).tasks["mini"]
    with pytest.raises(AgentError, match="is not a solution of task mini"):
        make_agent(f"scripted:{name}", task)
    assert make_agent("scripted:good", task).name == "scripted:good"


# --- the --agents files ---------------------------------------------------------------------


@pytest.fixture
def quiet_console(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The console and the web server stand in: a command that got past the check records
    itself instead of opening a terminal app or a port."""
    from icae_tui.ui import serve
    from icae_tui.ui.app import IcaeApp

    started: list[str] = []
    monkeypatch.setattr(IcaeApp, "run", lambda self, *a, **k: started.append("console"))
    monkeypatch.setattr(serve, "serve", lambda *a, **k: started.append("serve"))
    return started


COMMANDS = {
    "run scripted": ["run", "--task", "mini", "--agent", "scripted:good"],
    "run model": ["run", "--task", "mini", "--agent", "model:local"],
    "agents": ["agents"],
    "console": ["console"],
    "no command": [],
    "replay": ["replay", str(RECORDING), "--headless", "--speed", "0"],
    "serve": ["serve"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_agents_file_that_is_not_toml_stops_the_command(
    home, tmp_path, capsys, quiet_console, command
):
    agents = tmp_path / "agents.toml"
    agents.write_text(BROKEN_TOML)
    assert icae("--agents", str(agents), *COMMANDS[command]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"{agents}:2: invalid TOML: ") and "(at line 2, column" in line
    assert quiet_console == [] and stored_runs(home) == []


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_agents_file_stops_the_command(home, tmp_path, capsys, quiet_console, command):
    good = tmp_path / "good.toml"
    good.write_text(READY_AGENT)
    missing = tmp_path / "nowhere.toml"
    assert icae("--agents", str(good), "--agents", str(missing), *COMMANDS[command]) == 2
    assert one_error_line(capsys) == f"{missing}: cannot read: No such file or directory"
    assert quiet_console == [] and stored_runs(home) == []


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param(None, "cannot read: Is a directory", id="a folder"),
        pytest.param(b"\xff\xfe", "cannot read: 'utf-8' codec can't decode", id="not utf-8"),
        pytest.param(
            b'[agents.x]\nkind = "model"\n[agents.x]\n',
            ":3: invalid TOML: ",
            id="a table declared twice",
        ),
        pytest.param(
            READY_AGENT.encode() + b'[agents.bad]\nkind = "model"\nmodel = 5\n',
            None,
            id="a broken entry",
        ),
    ],
)
def test_file_error_is_about_the_file_never_its_entries(tmp_path, content, says):
    path = tmp_path / "agents.toml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    err = file_error(path)
    if says is None:
        assert err is None  # broken entries: reported by load_agent_config, the rest loads
    else:
        assert err is not None and str(err).startswith(str(path)) and says in str(err)


# --- run options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--concurrency", "-1", "--concurrency: must be at least 1, not -1"),
        ("--concurrency", "0", "--concurrency: must be at least 1, not 0"),
        ("--budget", "-3", "--budget: must be at least 0, not -3"),
        ("--concurrency", "many", "--concurrency: 'many' is not a number"),
    ],
)
def test_run_options_are_checked_before_anything_runs(capsys, tmp_path, option, value, message):
    argv = ["--tasks", str(FIXTURE_TASKS), "--home", str(tmp_path), "run", "--task", "mini",
            option, value]  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs.db").exists()  # nothing was started, nothing stored


def test_negative_pace_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--pace", "-1", "tasks"])
    assert "--pace: must be at least 0, not -1" in capsys.readouterr().err


def test_run_config_refuses_what_the_cli_would(fixture_catalog):
    task = fixture_catalog.tasks["mini"]
    for bad, word in (({"budget": -3}, "budget"), ({"concurrency": 0}, "concurrency"),
                      ({"pace_s": -1.0}, "pace"), ({"responder": "robot"}, "responder")):  # fmt: skip
        with pytest.raises(ValueError, match=word):
            RunConfig(task=task, **bad)


async def test_unknown_agent_and_missing_solution_fail_before_the_engine(
    fixture_catalog, store, monkeypatch, tmp_path
):
    # No engine here: a run that touched it would fail with an engine error instead.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    task = fixture_catalog.tasks["mini"]
    outcome = await Run(
        RunConfig(task=task, agent="scripted:nonexistent", pace_s=0), store
    ).execute()
    assert outcome.status == "failed"
    assert "nonexistent.yaml" in outcome.error and "good" in outcome.error
    outcome = await Run(RunConfig(task=task, agent="gpt:x", pace_s=0), store).execute()
    assert outcome.status == "failed" and "unknown kind" in outcome.error
    assert {r.status for r in store.runs()} == {"failed"}


# --- `icae runs --export` ---------------------------------------------------------------------


def test_exporting_a_missing_run_is_an_error(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "runs", "--export", "nonexistent"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no stored run 'nonexistent'" in captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--export", ""], "--export needs a run id"),
        (["--export", "  "], "--export needs a run id"),
        (["--trajectory"], "--trajectory goes with --export RUN_ID"),
    ],
)
def test_export_options_without_a_run_are_errors(tmp_path, capsys, args, message):
    assert main(["--home", str(tmp_path), "runs", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err


# --- a closed stdout --------------------------------------------------------------------------


def closed_stdout(*args: str, home) -> tuple[int, str]:
    """Run `icae` with its stdout a pipe that nobody reads (closed at once): its exit status
    and what it wrote to stderr."""
    env = {**os.environ, "PYTHONUNBUFFERED": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "icae_tui", "--home", str(home), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


@pytest.fixture
def full_store(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    for i in range(200):
        run_id = f"20240101-{i:06d}-abcdef"
        store.create_run(run_id, "semver", "scripted:good", "L1", "simulated", float(i))
        store.finish_run(run_id, "completed", float(i) + 1, 0.5, "x" * 80)
    ev = started()
    ev.run_id, ev.seq, ev.ts = "20240101-000000-abcdef", 1, 0.0
    ev.prd = "a long PRD line\n" * 20_000  # a report of some 300 KB
    store.append(ev)
    store.close()
    return tmp_path


@pytest.mark.parametrize(
    "args", [["runs"], ["runs", "--export", "20240101-000000-abcdef"], ["tasks"]]
)
def test_a_closed_stdout_ends_quietly(full_store, args):
    status, err = closed_stdout(*args, home=full_store)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert status == 141


def test_the_headless_printer_stops_printing_when_stdout_is_gone():
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    printer = PlainPrinter(Closed())
    printer(started())  # no exception into the run's log
    printer(CasesPlanned(case_ids=["public/a#0"]))
    assert printer.closed


def test_review_weights_and_model_options_are_checked_before_any_run(tmp_path, capsys):
    home = ["--home", str(tmp_path)]
    with pytest.raises(SystemExit) as bad:
        main([*home, "run", "--task", "semver", "--review-weights", "0.8"])
    assert bad.value.code == 2 and "two weights in [0, 1]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*home, "run", "--task", "semver", "--review-weights", "2,0.2"])
    capsys.readouterr()
    assert main([*home, "run", "--task", "semver", "--critic-model", "m"]) == 2
    assert "--critic-model needs --critic-base-url" in capsys.readouterr().err
    assert not (tmp_path / "runs.db").exists()  # nothing stored
