"""Run setup (icae_tui/ui/screens/run_setup.py): it starts on the agent, not on Start; it
offers the task's scripted agents and the configured ones, with their state; an agent that is
not ready cannot start, and says what to set; broken entries are listed. It opens on the last
choices of the task (settings.toml, in the temporary config folder of tests/ui/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, OptionList, Select, Static

from icae_tui import cli
from icae_tui.catalog.loader import Catalog
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level
from icae_tui.runs.config import RunConfig
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.run_setup import AgentChoice, Initial, RunSetupScreen, initial_choices
from icae_tui.ui.settings import (
    SETTINGS_FILE,
    SETUP_FIELDS,
    Settings,
    SetupChoice,
    config_dir,
    load_settings,
    save_setup,
    save_theme,
)
from tests.generated_catalog import catalog_of, make_task

from .helpers import until

KEY_VAR = "ICAE_TEST_CHOOSER_KEY"  # never set: the keyed agent misses its key

AGENTS = f"""\
[agents.local]
kind = "model"
model = "qwen2.5-coder:7b"
base_url = "http://127.0.0.1:9/v1"
limits = {{ max_steps = 40, max_model_calls = 100 }}

[agents.keyed]
kind = "model"
model = "gpt-4.1"
base_url = "https://api.example.com/v1"
api_key_env = "{KEY_VAR}"

[agents.broken]
kind = "model"
model = 7

[agents.nowhere]
kind = "model"
model = "m"
"""


@pytest.fixture
def agents_file(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv(KEY_VAR, raising=False)
    path = tmp_path / "agents.toml"
    path.write_text(AGENTS)
    return path


def static_text(widget: Static) -> str:
    return str(widget.render())


def option_labels(setup: RunSetupScreen) -> list[str]:
    options = setup.query_one("#agent", Select).query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def open_setup(app: IcaeApp, pilot) -> RunSetupScreen:
    await pilot.press("enter")  # the task list's first task: mini
    await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
    assert isinstance(app.screen, RunSetupScreen)
    return app.screen


async def test_the_chooser_lists_scripted_and_configured_agents_with_their_state(
    fixture_catalog, store, agents_file
):
    app = IcaeApp(catalog=fixture_catalog, store=store, agent_files=[agents_file])
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        labels = option_labels(setup)
        scripted = [f"scripted:{name}" for name in fixture_catalog.tasks["mini"].solutions]
        assert labels[: len(scripted)] == scripted
        configured = labels[len(scripted) :]
        assert "model:local — ready" in configured
        assert "model:keyed — missing key variable" in configured
        assert configured[0] == "model:local — ready"  # the ready ones first
        assert "model:openai-compatible — needs an endpoint" in configured  # the defaults'
        assert not any(label.startswith("model:broken") for label in labels)
        # the scripted default is chosen and ready; the plumbed file reaches the config
        assert setup.query_one("#agent", Select).value == "scripted:good"
        setup.query_one("#agent", Select).value = "model:local"
        await pilot.pause()
        assert not setup.query_one("#start", Button).disabled
        note = static_text(setup.query_one("#setup-note", Static))
        assert "qwen2.5-coder:7b @ http://127.0.0.1:9/v1" in note
        assert "limits 40 steps · 100 calls" in note and f"{agents_file}:1" in note
        config = setup.config()
        assert config is not None
        assert config.agent == "model:local" and config.agent_files == (agents_file,)


async def test_a_broken_entry_is_reported_with_its_file_and_line(
    fixture_catalog, store, agents_file
):
    app = IcaeApp(catalog=fixture_catalog, store=store, agent_files=[agents_file])
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        errors = setup.query_one("#setup-errors", Static)
        assert errors.display
        text = static_text(errors)
        assert "1 broken entry" in text
        assert f"{agents_file}:15: agents.broken.model: Input should be a valid string" in text


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ("model:openai-compatible", "declare [agents.openai-compatible] with its settings"),
        ("model:nowhere", "set base_url (e.g. "),
        ("model:keyed", f"set the environment variable {KEY_VAR}"),
    ],
)
async def test_an_agent_that_is_not_ready_cannot_start(
    fixture_catalog, store, agents_file, agent, says
):
    app = IcaeApp(catalog=fixture_catalog, store=store, agent_files=[agents_file])
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        told: list[str] = []
        setup.notify = lambda message, **_: told.append(message)  # type: ignore[method-assign]
        setup.query_one("#agent", Select).value = agent
        await pilot.pause()
        assert setup.query_one("#start", Button).disabled
        note = static_text(setup.query_one("#setup-note", Static))
        assert says in note.replace("\n", " ")
        await pilot.press("ctrl+s")  # refused: the dialog stays, and says why
        await pilot.pause()
        assert app.screen is setup
        assert len(told) == 1 and told[0].startswith(f"{agent} cannot start") and says in told[0]
        if agent == "model:nowhere":
            assert f"in [agents.nowhere] at {agents_file}:17" in told[0]


async def test_without_agents_files_the_defaults_are_offered(fixture_catalog, store):
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        assert "model:openai-compatible — needs an endpoint" in option_labels(setup)
        assert not setup.query_one("#setup-errors", Static).display
        config = setup.config()
        assert config is not None and config.agent_files == ()


async def test_a_missing_agents_file_is_an_error_not_a_crash(fixture_catalog, store, tmp_path):
    missing = tmp_path / "nowhere.toml"
    app = IcaeApp(catalog=fixture_catalog, store=store, agent_files=[missing])
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        assert f"{missing}: file not found" in static_text(setup.query_one("#setup-errors"))
        assert setup.query_one("#agent", Select).value == "scripted:good"


def test_the_console_command_plumbs_agents_files(monkeypatch, tmp_path, agents_file):
    opened: list[IcaeApp] = []
    monkeypatch.setattr(IcaeApp, "run", lambda self, *a, **k: opened.append(self))
    other = tmp_path / "more.toml"
    other.write_text("")  # a missing file would stop the command (tests/test_cli.py)
    argv = ["--home", str(tmp_path / "home"), "--agents", str(agents_file),
            "--agents", str(other), "console"]  # fmt: skip
    assert cli.main(argv) == 0
    assert len(opened) == 1 and opened[0].agent_files == (agents_file, other)


async def test_run_setup_starts_on_the_agent_not_on_start(fixture_catalog, store, monkeypatch):
    started_runs: list[object] = []
    monkeypatch.setattr(IcaeApp, "start_run", lambda self, config: started_runs.append(config))
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        assert app.focused is app.screen.query_one("#agent", Select)
        await pilot.press("enter")  # opens the agent's choices; starts nothing
        await pilot.pause()
        assert isinstance(app.screen, RunSetupScreen) and started_runs == []


# --- the last choices, remembered per task (issue 20) ----------------------------------------


def chosen(setup: RunSetupScreen) -> tuple[object, object, object]:
    return tuple(setup.query_one(f"#{name}", Select).value for name in SETUP_FIELDS)


async def start_with(app: IcaeApp, pilot, setup: RunSetupScreen, agent, level, responder):
    for name, value in zip(SETUP_FIELDS, (agent, level, responder), strict=True):
        setup.query_one(f"#{name}", Select).value = value
    await pilot.pause()
    await pilot.press("ctrl+s")
    await until(pilot, lambda: not isinstance(app.screen, RunSetupScreen))


@pytest.fixture
def two_tasks() -> Catalog:
    return catalog_of([make_task("alpha", "Alpha tool", "python"),
                       make_task("beta", "Beta tool", "go")])  # fmt: skip


async def test_setup_opens_on_the_last_choices_of_the_task(two_tasks, store, agents_file,
                                                           monkeypatch):  # fmt: skip
    started_runs: list[RunConfig] = []
    monkeypatch.setattr(IcaeApp, "start_run", lambda self, config: started_runs.append(config))
    app = IcaeApp(catalog=two_tasks, store=store, agent_files=[agents_file])
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)  # alpha
        assert chosen(setup) == ("scripted:good", "L1", "simulated")  # nothing remembered
        await start_with(app, pilot, setup, "model:local", "L2", "human")
        assert started_runs[-1].agent == "model:local"
        setup = await open_setup(app, pilot)
        assert chosen(setup) == ("model:local", "L2", "human")
        await pilot.press("escape")
        await pilot.press("down")  # beta: never run, so the last run's choices (alpha's)
        setup = await open_setup(app, pilot)
        assert setup.target.id == "beta"
        assert chosen(setup) == ("model:local", "L2", "human")
        await start_with(app, pilot, setup, "scripted:good", "L3", "assisted")
    settings, problems = load_settings(config_dir() / SETTINGS_FILE)
    assert problems == [] and list(settings.setups) == ["alpha", "beta"]  # the last run last
    app = IcaeApp(catalog=two_tasks, store=store, agent_files=[agents_file])  # a new session
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        assert setup.target.id == "alpha" and chosen(setup) == ("model:local", "L2", "human")
        await pilot.press("escape", "down")
        setup = await open_setup(app, pilot)
        assert chosen(setup) == ("scripted:good", "L3", "assisted")


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ("model:gone", "model:gone, chosen last time, is gone"),
        ("model:keyed", "model:keyed, chosen last time, is not ready (missing key variable)"),
    ],
)
async def test_a_remembered_agent_that_is_gone_or_not_ready_is_not_chosen(
    fixture_catalog, store, agents_file, agent, says
):
    settings = config_dir() / SETTINGS_FILE
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(f'[setup.mini]\nagent = "{agent}"\nlevel = "L3"\nresponder = "assisted"\n')
    app = IcaeApp(catalog=fixture_catalog, store=store, agent_files=[agents_file])
    async with app.run_test(size=(160, 45)) as pilot:
        setup = await open_setup(app, pilot)
        assert chosen(setup) == ("scripted:good", "L3", "assisted")  # the rest still holds
        assert not setup.query_one("#start", Button).disabled
        assert says in static_text(setup.query_one("#setup-note", Static))


def test_remembered_choices_this_version_does_not_offer_are_not_chosen():
    offered = {"scripted:good": AgentChoice("scripted:good")}
    initial = initial_choices(SetupChoice("scripted:good", "L9", "telepathic"), offered)
    assert initial == Initial("scripted:good", Level.L1, ResponderMode.SIMULATED)


def test_saving_a_setup_keeps_the_rest_of_the_settings_file(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('# mine\ntheme = "dark"\n\n[setup."a"]\nagent = "x"\n\n[other]\nk = 1\n')
    assert save_setup(path, "a", SetupChoice("scripted:good", "L2", "human")) is None
    assert save_setup(path, "b", SetupChoice("model:local", None, "simulated")) is None
    text = path.read_text()
    assert text.startswith('# mine\ntheme = "dark"\n') and "[other]\nk = 1\n" in text
    settings, problems = load_settings(path)
    assert problems == [] and settings.theme == "dark"
    assert settings.setups == {
        "a": SetupChoice("scripted:good", "L2", "human"),
        "b": SetupChoice("model:local", None, "simulated"),
    }
    assert save_theme(path, "light") is None  # the theme's line, the setups kept
    assert load_settings(path)[0] == Settings("light", settings.setups)


def test_a_settings_file_that_declares_setups_otherwise_is_left_alone(tmp_path):
    path = tmp_path / "settings.toml"
    original = '[setup]\na = { agent = "x" }\n'
    path.write_text(original)
    problem = save_setup(path, "a", SetupChoice("y"))
    assert problem is not None and "not saved" in problem.message
    assert path.read_text() == original
    path.write_text("[setup\n")
    assert "not valid TOML" in str(save_setup(path, "a", SetupChoice("y")))


def test_a_bad_setup_entry_is_reported_and_the_rest_kept(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('theme = "dark"\n[setup.a]\nagent = 7\nlevel = "L2"\n[setup]\nb = 3\n')
    settings, problems = load_settings(path)
    assert settings.theme == "dark" and settings.setups == {"a": SetupChoice(level="L2")}
    assert [p.field for p in problems] == ['setup."a".agent', 'setup."b"']
