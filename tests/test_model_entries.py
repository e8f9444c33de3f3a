"""`[models.<name>]` entries in the agents files (icae_tui/agents/config.py): endpoints for the
run's own model roles, parsed and located like agents' entries; `icae agents` lists them in a
section of their own; `icae run --user/--judge/--critic-endpoint NAME` and `icae runs rescore
--judge-endpoint NAME` resolve them (icae_tui/cli/model_endpoints.py) or refuse with one line on
stderr, exit status 2, nothing stored. Pure: no engine, no network. That the entry reaches the
judge is tests/test_semantic_run.py's (a local scripted endpoint)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from icae_tui.agents.config import (
    DEFAULTS_FILE,
    AgentConfig,
    AgentState,
    load_files,
    parse_text,
    what_to_set,
)
from icae_tui.cli import main
from icae_tui.cli.model_endpoints import EndpointRole, endpoint_config
from icae_tui.store.database import RunStore
from icae_tui.users.model_user import ModelConfig
from tests.conftest import FIXTURE_TASKS

KEY = "ICAE_TEST_MODEL_KEY"


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def parsed(path: Path, text: str) -> AgentConfig:
    config = AgentConfig()
    parse_text(path, textwrap.dedent(text).lstrip("\n"), config)
    return config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user agents file, no key variable, no engine to reach by mistake."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.delenv(KEY, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path / "home"


def icae(home: Path, *argv: str) -> int:
    return main(["--home", str(home), "--tasks", str(FIXTURE_TASKS), *argv])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


# --- parsing --------------------------------------------------------------------------------


def test_a_model_entry_has_its_fields_and_where_it_is_declared(tmp_path):
    path = tmp_path / "a.toml"
    config = parsed(
        path,
        f"""
        [agents.x]
        kind = "model"
        model = "m"

        [models.j]
        model = "judge-1"
        base_url = "http://127.0.0.1:9/v1"
        api_key_env = "{KEY}"
        timeout_s = 5
    """,
    )
    assert config.errors == []
    entry = config.models["j"]
    assert (entry.settings.model, entry.settings.base_url) == ("judge-1", "http://127.0.0.1:9/v1")
    assert (entry.settings.api_key_env, entry.settings.timeout_s) == (KEY, 5.0)
    assert entry.where == f"{path}:5" and entry.table == "[models.j]"
    assert list(config.agents) == ["x"]  # the sections stay apart
    assert entry.state({}) is AgentState.MISSING_KEY
    assert entry.state({KEY: "k"}) is AgentState.READY
    bare = parsed(path, '[models.n]\nmodel = "m"\n').models["n"]
    assert bare.settings.timeout_s == 60.0 and bare.state({}) is AgentState.NEEDS_ENDPOINT


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("timeout_s = 0", "timeout_s", "Input should be greater than 0"),
        ('api_key_env = "sk-abc123"', "api_key_env", "must be the NAME of an environment variable"),
        ('base_url = "ftp://host"', "base_url", "must be an http:// or https:// URL"),
        ("temperature = 0.5", "temperature", "Extra inputs are not permitted"),
        ('model = ""', "model", "String should have at least 1 character"),
    ],
)
def test_a_bad_field_is_located_at_its_line(tmp_path, line, field, message):
    path = tmp_path / "a.toml"
    model = "" if line.startswith("model") else 'model = "m"\n'
    config = parsed(path, f"# models\n\n[models.j]\n{model}{line}\n")
    assert "j" not in config.models
    [error] = config.errors
    at = 5 if model else 4
    assert str(error).startswith(f"{path}:{at}: models.j.{field}: {message}"), str(error)


def test_a_missing_model_is_reported_at_the_entry_header(tmp_path):
    path = tmp_path / "a.toml"
    [error] = parsed(path, '# mine\n[models.j]\nbase_url = "http://h"\n').errors
    assert str(error) == f"{path}:2: models.j.model: Field required"


def test_an_unknown_table_names_both_sections(tmp_path):
    path = tmp_path / "a.toml"
    [error] = parsed(path, '[model.j]\nmodel = "m"\n').errors
    assert str(error) == (
        f"{path}:1: model: unknown table; agents go in [agents.<name>], model endpoints in "
        "[models.<name>]"
    )


def test_extends_builds_on_the_shipped_entry_and_a_later_file_replaces_it(tmp_path):
    mine = write(
        tmp_path / "mine.toml",
        """
        [models.judge]
        extends = "judge"
        base_url = "https://api.example.com/v1"
    """,
    )
    config = load_files([DEFAULTS_FILE, mine])
    assert config.errors == []
    judge = config.models["judge"]
    assert judge.source == mine and judge.where == f"{mine}:1"
    assert judge.settings.model == "gpt-4o-mini"  # the shipped entry's
    assert judge.settings.api_key_env == "OPENAI_API_KEY"
    assert judge.settings.base_url == "https://api.example.com/v1"
    # without extends a later file's entry replaces the earlier one whole
    first = write(tmp_path / "first.toml", '[models.j]\nmodel = "a"\ntimeout_s = 5\n')
    second = write(tmp_path / "second.toml", '[models.j]\nmodel = "b"\n')
    j = load_files([first, second]).models["j"]
    assert (j.settings.model, j.settings.timeout_s, j.source) == ("b", 60.0, second)


def test_extends_names_only_an_earlier_model_entry(tmp_path):
    path = write(
        tmp_path / "a.toml",
        """
        [agents.x]
        kind = "model"
        model = "m"

        [models.j]
        extends = "x"
    """,
    )
    config = load_files([path])
    [error] = config.errors
    assert str(error) == (
        f"{path}:6: models.j.extends: no earlier entry 'x' to extend (known: none)"
    )


def test_a_broken_override_hides_the_entry_it_replaced(tmp_path):
    bad = write(tmp_path / "bad.toml", '[models.judge]\nmodel = "m"\ntimeout_s = -1\n')
    config = load_files([DEFAULTS_FILE, bad])
    assert "judge" not in config.models
    assert [str(e) for e in config.errors] == [
        f"{bad}:3: models.judge.timeout_s: Input should be greater than 0"
    ]


# --- what to set ----------------------------------------------------------------------------


def test_what_to_set_for_the_shipped_judge_and_for_an_entry_of_ones_own(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    judge = load_files([DEFAULTS_FILE]).models["judge"]
    todo = what_to_set(judge, env)
    assert todo.startswith('declare [models.judge] with its settings and a base_url (e.g. "')
    assert str(tmp_path / "icae-tui" / "agents.toml") in todo
    assert 'extends = "judge" keeps its settings' in todo
    assert todo.endswith("read from the environment variable OPENAI_API_KEY")
    mine = write(tmp_path / "a.toml", f'[models.j]\nmodel = "m"\napi_key_env = "{KEY}"\n')
    j = load_files([mine]).models["j"]
    assert what_to_set(j, env).startswith(f'set base_url (e.g. "http://localhost:8000/v1") in '
                                          f"[models.j] at {mine}:1")  # fmt: skip
    keyed = write(tmp_path / "b.toml",
                  f'[models.k]\nmodel = "m"\nbase_url = "http://h"\napi_key_env = "{KEY}"\n')  # fmt: skip
    k = load_files([keyed]).models["k"]
    assert what_to_set(k, env) == (
        f"set the environment variable {KEY} (the api_key_env of [models.k] at {keyed}:1), "
        "then start icae again"
    )
    assert what_to_set(k, {**env, KEY: "secret"}) == ""


def test_a_ready_entry_is_the_model_config_the_flags_build(tmp_path):
    path = write(
        tmp_path / "a.toml",
        f"""
        [models.j]
        model = "judge-1"
        base_url = "http://127.0.0.1:9/v1"
        api_key_env = "{KEY}"
        timeout_s = 7.5
    """,
    )
    found = endpoint_config(EndpointRole.JUDGE, "j", load_files([path]), {KEY: "secret"})
    assert found == ModelConfig(model="judge-1", base_url="http://127.0.0.1:9/v1",
                                api_key_env=KEY, timeout_s=7.5)  # fmt: skip


# --- icae agents ----------------------------------------------------------------------------


def test_icae_agents_lists_the_model_entries_in_a_section_of_their_own(home, tmp_path, capsys):
    mine = write(tmp_path / "mine.toml", '[models.local]\nmodel = "m"\nbase_url = "http://h/v1"\n')
    assert icae(home, "--agents", str(mine), "agents") == 0
    out, err = capsys.readouterr()
    assert err == ""
    agents, models = out.split("\n\n")
    assert agents.startswith("AGENT") and "[models." not in agents
    head, _, rows = models.partition("\nMODEL ")
    assert "--user-endpoint" in head and "--judge-endpoint" in head
    assert "--critic-endpoint" in head
    lines: list[str] = []
    for line in rows.splitlines():  # a wrapped line joined to the one it continues
        if line.startswith("      "):
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    assert lines[1].split(maxsplit=1) == ["judge", "needs an endpoint"]
    assert lines[2].strip() == "gpt-4o-mini @ (no endpoint) · timeout 60 s"
    assert lines[3].strip().startswith(f"from {DEFAULTS_FILE}:")
    assert lines[4].strip().startswith("to use it: declare [models.judge]")
    local = lines.index(next(line for line in lines if line.startswith("local ")))
    assert lines[local].split() == ["local", "ready"]
    assert lines[local + 1 :] == ["    m @ http://h/v1 · timeout 60 s", f"    from {mine}:1"]
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in out.splitlines())


def test_agents_check_is_about_agents_only(home, tmp_path, capsys):
    mine = write(tmp_path / "mine.toml", '[models.local]\nmodel = "m"\nbase_url = "http://h/v1"\n')
    assert icae(home, "--agents", str(mine), "agents", "--check") == 1  # no agent is ready
    assert "no configured agent is ready" in capsys.readouterr().err


# --- the --<role>-endpoint flags refused -----------------------------------------------------

RUN = ("run", "--task", "mini", "--agent", "scripted:good")


def refused(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert icae(home, *argv) == 2
    line = one_error_line(capsys)
    db = home / "runs.db"  # `icae runs` opens the store first; no run is stored in it
    assert not db.exists() or RunStore(db).runs() == []
    return line


@pytest.mark.parametrize("role", list(EndpointRole))
def test_an_endpoint_and_the_model_flags_together_are_refused(home, capsys, role):
    line = refused(home, capsys, *RUN, f"--{role}-endpoint", "judge", f"--{role}-model", "m",
                   f"--{role}-base-url", "http://h")  # fmt: skip
    assert line == (
        f"error: --{role}-endpoint and --{role}-model and --{role}-base-url both give the "
        f"{role}'s endpoint: drop --{role}-model and --{role}-base-url to use the "
        f"[models.<name>] entry, or --{role}-endpoint to use the flags"
    )


def test_an_unknown_entry_lists_the_known_ones_and_where_they_are(home, tmp_path, capsys):
    mine = write(tmp_path / "mine.toml", '[models.local]\nmodel = "m"\nbase_url = "http://h"\n')
    line = refused(home, capsys, "--agents", str(mine), *RUN, "--critic-endpoint", "nope")
    judge_at = load_files([DEFAULTS_FILE]).models["judge"].where
    assert line == (
        "error: --critic-endpoint 'nope': no model entry 'nope' in the agents files (known: "
        f"judge ({judge_at}), local ({mine}:1))"
    )


def test_a_broken_entry_says_why_it_is_unknown(home, tmp_path, capsys):
    mine = write(tmp_path / "mine.toml", '[models.j]\nmodel = "m"\ntimeout_s = 0\n')
    line = refused(home, capsys, "--agents", str(mine), *RUN, "--user-endpoint", "j")
    assert "(known: judge (" in line
    assert f"({mine}:3: models.j.timeout_s: Input should be greater than 0)" in line


def test_an_entry_that_is_not_ready_says_what_to_set(home, tmp_path, capsys):
    line = refused(home, capsys, *RUN, "--judge-endpoint", "judge")
    assert line.startswith("error: --judge-endpoint 'judge': [models.judge] needs an endpoint: "
                           "declare [models.judge] with its settings and a base_url")  # fmt: skip
    keyed = write(tmp_path / "k.toml",
                  f'[models.k]\nmodel = "m"\nbase_url = "http://h"\napi_key_env = "{KEY}"\n')  # fmt: skip
    line = refused(home, capsys, "--agents", str(keyed), *RUN, "--judge-endpoint", "k")
    assert line == (
        f"error: --judge-endpoint 'k': [models.k] missing key variable: set the environment "
        f"variable {KEY} (the api_key_env of [models.k] at {keyed}:1), then start icae again"
    )


def test_rescore_refuses_the_same_way_before_reading_the_run(home, tmp_path, capsys):
    rescore = ("runs", "rescore", "no-such-run")
    line = refused(home, capsys, *rescore, "--judge-endpoint", "judge", "--judge-model", "m")
    assert line.startswith("error: --judge-endpoint and --judge-model both give the judge's")
    line = refused(home, capsys, *rescore, "--judge-endpoint", "nope")
    assert line.startswith("error: --judge-endpoint 'nope': no model entry 'nope'")
    line = refused(home, capsys, *rescore, "--judge-endpoint", "judge")
    assert "[models.judge] needs an endpoint: declare [models.judge]" in line
