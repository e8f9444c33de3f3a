"""Agent configuration: TOML entries, their validation with file/line/field, their state, and
`icae agents`. Pure: no Docker, no network."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from icae_tui.agents.base import AgentError
from icae_tui.agents.config import (
    DEFAULTS_FILE,
    AgentKind,
    AgentState,
    CommandAgentConfig,
    ModelAgentConfig,
    TraceParser,
    key_lines,
    load_agent_config,
    user_config_file,
    what_to_set,
)
from icae_tui.agents.registry import available_agents, configured_agents, make_agent
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.cli import main
from tests.conftest import FIXTURE_TASKS

READY_AGENT = """
[agents.mine]
kind = "model"
model = "qwen2.5-coder"
base_url = "http://localhost:8000/v1"
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def line_of(path: Path, needle: str, after: str = "") -> int:
    """1-based line of the first line of `path` that starts with `needle`, past the first line
    that starts with `after` (a test-side oracle independent of the loader's scanner)."""
    lines = path.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(after))
    return next(n for n, line in enumerate(lines, 1) if n > start and line.startswith(needle))


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A clean environment: XDG_CONFIG_HOME in tmp_path, no key variables."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("OPENAI_API_KEY", "ICAE_TEST_KEY"):
        monkeypatch.delenv(name, raising=False)
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def user_file(tmp_path: Path) -> Path:
    return tmp_path / "xdg" / "icae-tui" / "agents.toml"


# --- loading and overriding ----------------------------------------------------------------


def test_defaults_load(env):
    config = load_agent_config(environ=env)
    assert config.errors == []
    assert config.files == [DEFAULTS_FILE]
    entry = config.agents["openai-compatible"]
    assert isinstance(entry.settings, ModelAgentConfig)
    assert entry.kind is AgentKind.MODEL
    assert entry.settings.base_url is None
    assert entry.settings.api_key_env == "OPENAI_API_KEY"
    assert entry.source == DEFAULTS_FILE
    assert entry.line == line_of(DEFAULTS_FILE, "[agents.openai-compatible]")
    assert entry.state({"OPENAI_API_KEY": "x"}) is AgentState.NEEDS_ENDPOINT
    assert all(e.kind is not AgentKind.SCRIPTED for e in config.agents.values())


def test_defaults_are_package_data():
    import tomllib

    data = tomllib.loads(Path("pyproject.toml").read_text())
    assert "agents/defaults.toml" in data["tool"]["setuptools"]["package-data"]["icae_tui"]


def test_user_file_overrides_defaults_whole_entry(tmp_path, env):
    path = write(
        user_file(tmp_path),
        """
        [agents.openai-compatible]
        kind = "model"
        model = "gpt-4.1"
        base_url = "https://api.openai.com/v1"
        api_key_env = "OPENAI_API_KEY"
        """
        + READY_AGENT,
    )
    config = load_agent_config(environ=env)
    assert config.errors == []
    assert config.files == [DEFAULTS_FILE, path]
    entry = config.agents["openai-compatible"]
    assert entry.source == path and entry.line == 1
    assert entry.settings.model == "gpt-4.1"
    assert entry.settings.limits.max_steps is None  # replaced whole, not merged
    assert config.agents["mine"].line == line_of(path, "[agents.mine]")


def test_agents_file_wins_over_user_file_and_later_files_win(tmp_path, env):
    write(user_file(tmp_path), READY_AGENT)
    first = write(tmp_path / "first.toml", READY_AGENT.replace("qwen2.5-coder", "first"))
    second = write(tmp_path / "second.toml", READY_AGENT.replace("qwen2.5-coder", "second"))
    config = load_agent_config([first], environ=env)
    assert config.agents["mine"].settings.model == "first"
    assert config.agents["mine"].source == first
    config = load_agent_config([first, second], environ=env)
    assert config.agents["mine"].settings.model == "second"
    assert "openai-compatible" in config.agents  # defaults still there


def test_missing_user_file_is_quiet_but_missing_agents_file_is_an_error(tmp_path, env):
    config = load_agent_config([tmp_path / "nope.toml"], environ=env)
    [err] = config.errors
    assert err.path == tmp_path / "nope.toml" and "not found" in err.message
    assert "openai-compatible" in config.agents


def test_relative_xdg_config_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_config_file({"XDG_CONFIG_HOME": "relative"}) == (
        tmp_path / ".config" / "icae-tui" / "agents.toml"
    )
    assert user_config_file({"XDG_CONFIG_HOME": "/x"}) == Path("/x/icae-tui/agents.toml")


# --- broken entries ------------------------------------------------------------------------

BROKEN = {
    "unknown key": (
        """
        [agents.broken]
        kind = "model"
        model = "m"
        temprature = 0.2
        """,
        "temprature =",
        "agents.broken.temprature",
        "Extra inputs are not permitted",
    ),
    "wrong type": (
        """
        [agents.broken]
        kind = "model"
        model = "m"
        temperature = "warm"
        """,
        "temperature =",
        "agents.broken.temperature",
        "valid number",
    ),
    "negative limit": (
        """
        [agents.broken]
        kind = "model"
        model = "m"

        [agents.broken.limits]
        max_seconds = 60
        max_steps = -3
        """,
        "max_steps =",
        "agents.broken.limits.max_steps",
        "greater than 0",
    ),
    "limit in an inline table": (
        """
        [agents.broken]
        kind = "command"
        model = "m"
        run = "agent --task {task}"
        limits = { max_tokens = 0 }
        """,
        "limits =",
        "agents.broken.limits.max_tokens",
        "greater than 0",
    ),
    "unknown kind": (
        """
        [agents.broken]
        model = "m"
        kind = "robot"
        """,
        "kind =",
        "agents.broken.kind",
        "unknown kind 'robot'",
    ),
    "missing field": (
        """
        [agents.broken]
        kind = "command"
        model = "m"
        """,
        "[agents.broken]",
        "agents.broken.run",
        "Field required",
    ),
    "unknown parser": (
        """
        [agents.broken]
        kind = "command"
        model = "m"
        run = "x"
        parser = "json"
        """,
        "parser =",
        "agents.broken.parser",
        "'claude-stream-json'",
    ),
    "limits string instead of number": (
        """
        [agents.broken]
        kind = "model"
        model = "m"
        limits.max_steps = "10"
        """,
        "limits.max_steps =",
        "agents.broken.limits.max_steps",
        "valid integer",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_entry_is_located_and_the_others_load(tmp_path, env, case):
    broken, needle, field, message = BROKEN[case]
    path = write(
        tmp_path / "agents.toml",
        READY_AGENT
        + textwrap.dedent(broken)
        + '\n[agents.after]\nkind = "command"\nmodel = "m"\nrun = "aider --yes"\nparser = "aider"\n',
    )
    config = load_agent_config([path], environ=env)
    [err] = config.errors
    expected_line = line_of(path, needle, after="[agents.broken]")
    assert (err.path, err.line, err.field) == (path, expected_line, field)
    assert message in err.message
    assert str(err).startswith(f"{path}:{err.line}: {field}: ")
    assert "broken" not in config.agents
    assert {"openai-compatible", "mine", "after"} <= set(config.agents)
    after = config.agents["after"].settings
    assert isinstance(after, CommandAgentConfig) and after.parser is TraceParser.AIDER


def test_broken_override_hides_the_entry_it_replaced(tmp_path, env):
    path = write(tmp_path / "a.toml", '[agents.openai-compatible]\nkind = "model"\n')
    config = load_agent_config([path], environ=env)
    [err] = config.errors
    assert (err.line, err.field) == (1, "agents.openai-compatible.model")
    assert "openai-compatible" not in config.agents


def test_scripted_kind_is_not_declared_in_toml(tmp_path, env):
    path = write(tmp_path / "a.toml", '[agents.s]\nkind = "scripted"\n')
    [err] = load_agent_config([path], environ=env).errors
    assert (err.line, err.field) == (2, "agents.s.kind")
    assert "scripted:<solution>" in err.message


def test_api_key_env_must_be_a_name_not_a_key(tmp_path, env):
    path = write(tmp_path / "a.toml", READY_AGENT + 'api_key_env = "sk-proj-THIS-IS-A-SECRET"\n')
    [err] = load_agent_config([path], environ=env).errors
    assert (err.line, err.field) == (line_of(path, "api_key_env"), "agents.mine.api_key_env")
    assert "SECRET" not in str(err)


def test_invalid_toml_is_one_error_and_other_files_load(tmp_path, env):
    bad = write(user_file(tmp_path), READY_AGENT + "\n[agents.x]\nkind = \nmodel = 3\n")
    good = write(tmp_path / "good.toml", READY_AGENT.replace("mine", "good"))
    config = load_agent_config([good], environ=env)
    [err] = config.errors
    assert err.path == bad and err.line == line_of(bad, "kind =", after="[agents.x]")
    assert "invalid TOML" in err.message
    assert "mine" not in config.agents  # nothing of a file that does not parse
    assert {"openai-compatible", "good"} <= set(config.agents)


def test_key_lines_understand_quoted_dotted_keys_and_skip_multiline_strings():
    text = textwrap.dedent(
        """
        [agents."my.agent"]
        kind = "command"
        run = '''
        [agents.fake]
        kind = "model"
        '''
        'install' = ["a",
          "b"]
        limits . max_steps = 1
        [[agents.arr]]
        """
    ).lstrip("\n")
    lines = key_lines(text)
    assert lines[("agents", "my.agent")] == 1
    assert lines[("agents", "my.agent", "run")] == 3
    assert ("agents", "fake") not in lines
    assert lines[("agents", "my.agent", "install")] == 7
    assert lines[("agents", "my.agent", "limits")] == 9
    assert lines[("agents", "my.agent", "limits", "max_steps")] == 9
    assert lines[("agents", "arr")] == 10


# --- state ---------------------------------------------------------------------------------


def test_states_follow_the_environment(tmp_path, env, monkeypatch):
    import os

    path = write(
        tmp_path / "a.toml",
        READY_AGENT
        + 'api_key_env = "ICAE_TEST_KEY"\n'
        + '[agents.nokey]\nkind = "model"\nmodel = "m"\nbase_url = "http://h:11434/v1"\n'
        + '[agents.cli]\nkind = "command"\nmodel = "m"\nrun = "claude -p {prompt_file}"\n'
        + 'env = ["ANTHROPIC_API_KEY"]\nparser = "claude-stream-json"\n',
    )
    config = load_agent_config([path], environ=env)
    assert config.errors == []
    states = lambda: {n: e.state(os.environ) for n, e in config.agents.items()}  # noqa: E731
    shipped = {"mini-swe-agent", "claude-code", "codex", "aider"}  # all need an endpoint
    assert {states()[n] for n in shipped} == {AgentState.NEEDS_ENDPOINT}
    assert {n: s for n, s in states().items() if n not in shipped} == {
        "openai-compatible": AgentState.NEEDS_ENDPOINT,
        "mine": AgentState.MISSING_KEY,
        "nokey": AgentState.READY,
        "cli": AgentState.NEEDS_ENDPOINT,  # command agents' models go through the gateway too
        # the shipped local-model entries: the tests' models folder has none installed
        "local": AgentState.NEEDS_LOCAL_MODEL,
        "mini-swe-agent-local": AgentState.NEEDS_LOCAL_MODEL,
        "aider-local": AgentState.NEEDS_LOCAL_MODEL,
    }
    monkeypatch.setenv("ICAE_TEST_KEY", "")
    assert states()["mine"] is AgentState.MISSING_KEY  # empty is unset
    monkeypatch.setenv("ICAE_TEST_KEY", "secret")
    assert states()["mine"] is AgentState.READY
    monkeypatch.setenv("OPENAI_API_KEY", "secret")
    assert states()["openai-compatible"] is AgentState.NEEDS_ENDPOINT  # a key is no endpoint


# --- the registry keeps scripted specs working --------------------------------------------


def test_scripted_specs_work_as_before_and_configured_agents_are_listed(
    fixture_catalog, tmp_path, env
):
    task = fixture_catalog.tasks["mini"]
    assert available_agents(task) == ["scripted:broken", "scripted:good", "scripted:partial"]
    assert isinstance(make_agent("scripted:good", task), ScriptedAgent)
    with pytest.raises(AgentError, match="unknown kind"):
        make_agent("local:x", task)
    path = write(tmp_path / "a.toml", READY_AGENT)
    config = configured_agents([path])
    assert list(config.agents) == ["openai-compatible", "local", "mini-swe-agent", "claude-code",
                                   "codex", "aider", "mini-swe-agent-local", "aider-local",
                                   "mine"]  # fmt: skip


# --- icae agents ---------------------------------------------------------------------------


def agents_listing(capsys, *argv: str, status: int = 0) -> tuple[dict[str, list[str]], str]:
    """`icae agents` on the fixture tasks: each agent's row and the lines under it (each
    wrapped line joined to the one it continues), by agent; and stderr. The model endpoints'
    section, after a blank line, is tests/test_model_entries.py's."""
    assert main(["--tasks", str(FIXTURE_TASKS), *argv]) == status
    out, err = capsys.readouterr()
    lines = out.split("\n\n")[0].splitlines()
    assert lines[0].split() == ["AGENT", "STATE"]
    blocks: dict[str, list[str]] = {}
    for line in lines[1:]:
        if not line.startswith(" "):
            blocks[line.split()[0]] = [line]
        elif line.startswith("      "):  # a wrapped line goes on the line above
            last = list(blocks.values())[-1]
            last[-1] += " " + line.strip()
        else:
            list(blocks.values())[-1].append(line.strip())
    return blocks, err


def fits(line: str, width: int = 80) -> bool:
    """Within the width, or one word (a path) alone on its line, never broken."""
    return len(line) <= width or len(line.split()) == 1


def test_icae_agents_lists_every_agent_and_exits_0_when_no_configured_one_is_ready(env, capsys):
    blocks, err = agents_listing(capsys, "agents")
    assert err == ""  # a listing: nothing is wrong when no configured agent is ready
    row, detail, where, todo = blocks["model:openai-compatible"]
    assert row.split(maxsplit=1)[1] == "needs an endpoint"
    assert detail.startswith("gpt-4o-mini @ (no endpoint) · limits 50 steps")
    assert where == f"from {DEFAULTS_FILE}:{line_of(DEFAULTS_FILE, '[agents.openai-compatible]')}"
    # what to set, where, and the key variable the entry will read
    assert todo.startswith("to run it: declare [agents.openai-compatible] with its settings")
    assert 'base_url (e.g. "http://localhost:8000/v1")' in todo
    assert 'extends = "openai-compatible"' in todo
    assert str(user_file(Path(env["XDG_CONFIG_HOME"]).parent)) in todo
    assert "environment variable OPENAI_API_KEY" in todo
    row, detail, where, todo = blocks["command:claude-code"]
    assert "installs on first run" in detail and "ANTHROPIC_API_KEY" in todo
    # the scripted agents of the tasks, ready, with the tasks that have them
    assert [a for a in blocks if a.startswith(AgentKind.SCRIPTED.prefix)] == [
        "scripted:broken", "scripted:good", "scripted:partial"
    ]  # fmt: skip
    row, detail = blocks["scripted:good"]
    assert row.split() == ["scripted:good", "ready"] and detail.endswith("in mini")


def test_icae_agents_never_runs_past_80_columns(tmp_path, env, capsys, monkeypatch):
    extra = write(
        tmp_path / "wide.toml",
        '[agents.a-rather-long-agent-name-for-a-command-agent]\nkind = "command"\n'
        'run = "x"\nmodel = "some-provider/a-very-long-model-name-with-a-date-20250101"\n'
        'api_key_env = "A_RATHER_LONG_NAME_FOR_AN_API_KEY_VARIABLE"\n'
        'base_url = "https://a-long-host-name.example.com/some/path/v1"\n',
    )
    assert main(["--tasks", str(FIXTURE_TASKS), "--agents", str(extra), "agents"]) == 0
    out = capsys.readouterr().out
    assert "a-rather-long-agent-name-for-a-command-agent" in out
    assert all(fits(line) for line in out.splitlines()), [
        line for line in out.splitlines() if not fits(line)
    ]
    rows = [line for line in out.splitlines() if not line.startswith(" ")]
    assert all(len(line) <= 80 for line in rows)
    [row] = [r for r in rows if r.startswith("command:a-rather-long-agent-name")]
    assert row.split(maxsplit=1)[1] == "missing key variable"


def test_icae_agents_lists_states_sources_and_errors(tmp_path, env, capsys, monkeypatch):
    write(user_file(tmp_path), READY_AGENT + 'api_key_env = "ICAE_TEST_KEY"\n')
    extra = write(
        tmp_path / "extra.toml",
        '[agents.cli]\nkind = "command"\nrun = "aider"\nmodel = "m"\n[agents.bad]\nkind = "model"\nmodel = 5\n',
    )
    blocks, err = agents_listing(capsys, "--agents", str(extra), "agents")
    row, detail, where, todo = blocks["model:mine"]
    assert row.split(maxsplit=1)[1] == "missing key variable"
    assert where == f"from {user_file(tmp_path)}:1"
    assert todo.startswith("to run it: set the environment variable ICAE_TEST_KEY (the ")
    assert f"[agents.mine] at {user_file(tmp_path)}:1" in todo
    row, detail, where, todo = blocks["command:cli"]
    assert row.split(maxsplit=1)[1] == "needs an endpoint"
    assert "installs on first run" in detail and where == f"from {extra}:1"
    assert todo.startswith(
        f'to run it: set base_url (e.g. "http://localhost:8000/v1") in [agents.cli] at {extra}:1'
    )
    assert "sends no API key" in todo and "api_key_env" in todo  # it names no key variable
    assert f"{extra}:7: agents.bad.model: Input should be a valid string" in err

    monkeypatch.setenv("ICAE_TEST_KEY", "secret")
    blocks, err = agents_listing(capsys, "--agents", str(extra), "agents")
    assert blocks["model:mine"][0].split() == ["model:mine", "ready"]
    assert len(blocks["model:mine"]) == 3  # nothing to set
    assert "secret" not in str(blocks) + err


def test_icae_agents_check_says_whether_an_agent_is_ready(tmp_path, env, capsys, monkeypatch):
    def check(*argv: str, status: int) -> str:
        assert main(["--tasks", str(FIXTURE_TASKS), *argv]) == status
        return capsys.readouterr().err

    err = check("agents", "--check", status=1)  # the defaults only: none has an endpoint
    assert err.startswith("not ready: no configured agent is ready")
    err = check("agents", "--check", "model:openai-compatible", status=1)
    assert err.startswith("not ready: model:openai-compatible needs an endpoint: declare ")
    assert check("agents", "--check", "scripted:good", status=0) == ""
    assert "is not a solution of any task" in check("agents", "--check", "scripted:x", status=2)
    assert "no model agent 'nope'" in check("agents", "--check", "model:nope", status=2)

    extra = write(tmp_path / "a.toml", READY_AGENT + 'api_key_env = "ICAE_TEST_KEY"\n')
    err = check("--agents", str(extra), "agents", "--check", "model:mine", status=1)
    assert "set the environment variable ICAE_TEST_KEY" in err
    monkeypatch.setenv("ICAE_TEST_KEY", "secret")
    assert check("--agents", str(extra), "agents", "--check", "model:mine", status=0) == ""
    assert check("--agents", str(extra), "agents", "--check", "mine", status=0) == ""
    assert check("--agents", str(extra), "agents", "--check", status=0) == ""


def test_what_to_set_for_a_shipped_entry_works_as_it_says(tmp_path, env, monkeypatch):
    """The advice for a shipped entry, followed to the letter, makes it ready."""
    config = load_agent_config([], environ=env)
    entry = config.agents["openai-compatible"]
    todo = what_to_set(entry, env)
    assert 'extends = "openai-compatible"' in todo and str(user_config_file(env)) in todo
    write(user_config_file(env), '[agents.openai-compatible]\nextends = "openai-compatible"\n'
          'base_url = "http://localhost:8000/v1"\n')  # fmt: skip
    entry = load_agent_config([], environ=env).agents["openai-compatible"]
    assert entry.state({}) is AgentState.MISSING_KEY
    assert what_to_set(entry, {}).startswith("set the environment variable OPENAI_API_KEY")
    assert entry.state({"OPENAI_API_KEY": "k"}) is AgentState.READY
    assert what_to_set(entry, {"OPENAI_API_KEY": "k"}) == ""


def test_the_run_setup_says_what_to_set_in_the_same_words_once(tmp_path, env):
    from icae_tui.ui.screens.run_setup import configured_choice

    path = write(tmp_path / "a.toml", READY_AGENT.replace('base_url = "http://localhost:8000/v1"\n',
                                                          'api_key_env = "ICAE_TEST_KEY"\n'))  # fmt: skip
    config = load_agent_config([path], environ=env)
    for name in ("openai-compatible", "mine", "codex"):
        entry = config.agents[name]
        choice = configured_choice(entry, env)
        assert choice.fix == what_to_set(entry, env) != ""
        assert choice.state not in choice.fix and "give it an endpoint" not in choice.fix


def test_icae_agents_escapes_control_characters_from_files(tmp_path, env, capsys):
    extra = write(
        tmp_path / "esc.toml",
        READY_AGENT.replace("qwen2.5-coder", "evil\\u001b[2J")
        + '[agents."bad\\u001b]0;x\\u0007"]\nkind = "model"\n',
    )
    main(["--agents", str(extra), "agents"])
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in err
    assert "evil\\x1b[2J" in out
    assert "\\x1b]0;x\\x07" in err


def test_unknown_top_level_table_and_non_table_entries_are_located(tmp_path, env):
    path = write(
        tmp_path / "a.toml",
        '[agent.typo]\nkind = "model"\n\n[agents]\nplain = 3\n\n[[agents.many]]\nkind = "model"\n'
        + READY_AGENT,
    )
    config = load_agent_config([path], environ=env)
    assert [(e.line, e.field) for e in config.errors] == [
        (1, "agent"),
        (5, "agents.plain"),
        (7, "agents.many"),
    ]
    assert "mine" in config.agents
