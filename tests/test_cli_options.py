"""Bad options refused up front: an agent that is not one of the task's, an `--agents` file
that cannot be read or is not TOML. Each is one line on stderr, exit status 2, and nothing
stored: no run row, no events (no Docker; an engine reached by mistake is a dead socket)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icae_tui.agents.base import AgentError
from icae_tui.agents.config import file_error
from icae_tui.agents.registry import check_agent, make_agent
from icae_tui.catalog import load_catalog
from icae_tui.cli import main
from icae_tui.store import RunStore
from tests.conftest import BUNDLED_TASKS, FIXTURE_TASKS

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
    tasks = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS / "mini", tasks / "mini")
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
