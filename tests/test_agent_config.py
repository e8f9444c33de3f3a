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
)
from icae_tui.agents.registry import available_agents, configured_agents, make_agent
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.cli import main

READY_AGENT = """
[agents.local]
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
    assert config.agents["local"].line == line_of(path, "[agents.local]")


def test_agents_file_wins_over_user_file_and_later_files_win(tmp_path, env):
    write(user_file(tmp_path), READY_AGENT)
    first = write(tmp_path / "first.toml", READY_AGENT.replace("qwen2.5-coder", "first"))
    second = write(tmp_path / "second.toml", READY_AGENT.replace("qwen2.5-coder", "second"))
    config = load_agent_config([first], environ=env)
    assert config.agents["local"].settings.model == "first"
    assert config.agents["local"].source == first
    config = load_agent_config([first, second], environ=env)
    assert config.agents["local"].settings.model == "second"
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
    assert {"openai-compatible", "local", "after"} <= set(config.agents)
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
    assert (err.line, err.field) == (line_of(path, "api_key_env"), "agents.local.api_key_env")
    assert "SECRET" not in str(err)


def test_invalid_toml_is_one_error_and_other_files_load(tmp_path, env):
    bad = write(user_file(tmp_path), READY_AGENT + "\n[agents.x]\nkind = \nmodel = 3\n")
    good = write(tmp_path / "good.toml", READY_AGENT.replace("local", "good"))
    config = load_agent_config([good], environ=env)
    [err] = config.errors
    assert err.path == bad and err.line == line_of(bad, "kind =", after="[agents.x]")
    assert "invalid TOML" in err.message
    assert "local" not in config.agents  # nothing of a file that does not parse
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
        "local": AgentState.MISSING_KEY,
        "nokey": AgentState.READY,
        "cli": AgentState.NEEDS_ENDPOINT,  # command agents' models go through the gateway too
    }
    monkeypatch.setenv("ICAE_TEST_KEY", "")
    assert states()["local"] is AgentState.MISSING_KEY  # empty is unset
    monkeypatch.setenv("ICAE_TEST_KEY", "secret")
    assert states()["local"] is AgentState.READY
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
    assert list(config.agents) == ["openai-compatible", "mini-swe-agent", "claude-code", "codex",
                                   "aider", "local"]  # fmt: skip


# --- icae agents ---------------------------------------------------------------------------


def test_icae_agents_with_defaults_only_lists_and_exits_1(env, capsys):
    assert main(["agents"]) == 1
    out, err = capsys.readouterr()
    [row] = [line for line in out.splitlines() if line.startswith("openai-compatible")]
    assert "model" in row and "gpt-4o-mini @ (no endpoint)" in row
    assert "needs an endpoint" in row
    assert f"{DEFAULTS_FILE}:{line_of(DEFAULTS_FILE, '[agents.openai-compatible]')}" in row
    assert "no configured agent is ready" in err


def test_icae_agents_lists_states_sources_and_errors(tmp_path, env, capsys, monkeypatch):
    write(user_file(tmp_path), READY_AGENT + 'api_key_env = "ICAE_TEST_KEY"\n')
    extra = write(
        tmp_path / "extra.toml",
        '[agents.cli]\nkind = "command"\nrun = "aider"\nmodel = "m"\n[agents.bad]\nkind = "model"\nmodel = 5\n',
    )
    assert main(["--agents", str(extra), "agents"]) == 1  # local lacks its key
    out, err = capsys.readouterr()
    [local] = [line for line in out.splitlines() if line.startswith("local")]
    assert "missing key variable ICAE_TEST_KEY" in local
    assert f"{user_file(tmp_path)}:1" in local
    [cli] = [line for line in out.splitlines() if line.startswith("cli")]
    assert "needs an endpoint" in cli and "installs on first run" in cli and f"{extra}:1" in cli
    assert f"{extra}:7: agents.bad.model: Input should be a valid string" in err

    monkeypatch.setenv("ICAE_TEST_KEY", "secret")
    assert main(["--agents", str(extra), "agents"]) == 0
    out, err = capsys.readouterr()
    assert "ready" in out and "secret" not in out + err
    assert "no configured agent is ready" not in err


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
    assert "local" in config.agents
