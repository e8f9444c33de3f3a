"""Presenting: themes from files (switched from the palette or F2, remembered, a bad file
reported), keys remapped from keymap.toml (a bad entry reported, the others applied), the
help screen generated from the bindings, and every action of a screen in the palette.

The user's config folder is a fresh temporary one in each test (tests/ui/conftest.py sets
XDG_CONFIG_HOME); no test sleeps: each waits for the state it needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.color import Color
from textual.command import CommandPalette

from icae_tui.catalog.loader import Catalog
from icae_tui.store.database import RunStore
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.commands import key_rows
from icae_tui.ui.keymap import KNOWN, action_id, keyed, normalise_key, parse_keymap
from icae_tui.ui.screens.help import HelpScreen
from icae_tui.ui.screens.history import HistoryScreen
from icae_tui.ui.screens.task_list import TaskListScreen
from icae_tui.ui.settings import Problem, Settings, config_dir, load_settings, save_theme
from icae_tui.ui.theme import (
    FALLBACK_THEME,
    bundled_themes_dir,
    load_theme_file,
    load_themes,
    parse_theme,
)

from .helpers import open_palette, still_console, until

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def config() -> Path:
    folder = config_dir()
    assert str(folder).startswith(os.environ["XDG_CONFIG_HOME"])  # never the user's own
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def console(fixture_catalog: Catalog, store: RunStore):
    return lambda: still_console(fixture_catalog, store)


def background(app: IcaeApp) -> Color:
    return Color.parse(app.theme_variables["background"])


# --- themes ---------------------------------------------------------------------------------


def test_bundled_themes_load_clean_and_dark_is_the_fallback():
    themes, problems = load_themes([bundled_themes_dir()])
    assert problems == []
    by_name = {t.name: t.theme for t in themes}
    assert {"dark", "light", "projector"} <= set(by_name)
    assert by_name["dark"] == FALLBACK_THEME  # the file and the code's fallback agree
    assert by_name["projector"].dark is False
    assert by_name["projector"].foreground == "#000000"
    assert by_name["projector"].background == "#FFFFFF"


def test_the_themes_folder_is_at_the_top_and_ships_in_the_package():
    """`themes/` beside pyproject.toml (the design card); the package's `ui/themes` links to
    it, and package data carries its files into the wheel."""
    import tomllib

    assert (ROOT / "themes" / "projector.toml").is_file()
    assert bundled_themes_dir().resolve() == (ROOT / "themes").resolve()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "ui/themes/*.toml" in data["package-data"]["icae_tui"]


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ('primary = "#zz0000"', "primary", "not a colour"),
        ('primary = "#000000"\nprimay = "#111111"', "primay", "unknown field"),
        ('accent = "#000000"', "primary", "missing"),
        ('primary = "#000000"\ndark = "yes"', "dark", "not true or false"),
        ('primary = "#000000"\nname = "two words"', "name", "not a theme name"),
        ('primary = "#000000"\ntext_alpha = 3', "text_alpha", "from 0 to 1"),
        ('primary = "#000000"\n[variables]\ntext-muted = "{oops}"', "variables.text-muted", ""),
        ('primary = "#000000"\n[ansi]\npurple = "#000000"', "ansi.purple", "named colour"),
        ('primary = "#000000"\n[ansi]\nred = 3', "ansi.red", "not a colour"),
    ],
)
def test_a_malformed_theme_is_reported_by_file_and_field(tmp_path, text, field, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    theme, problems = load_theme_file(path)
    assert theme is None
    assert [p.field for p in problems] == [field]
    assert str(path) in str(problems[0]) and words in problems[0].message


def test_theme_variables_and_named_colours_are_checked_before_the_css_sees_them(tmp_path):
    ok = {
        "primary": "#000000",
        "variables": {"text-muted": "#333333 70%", "block-cursor-text-style": "bold"},
        "ansi": {"yellow": "#8A5A00", "bright_red": "rgb(200, 0, 0)"},
    }
    theme_file, problems = parse_theme(tmp_path / "ok.toml", ok)
    assert problems == [] and theme_file is not None
    assert theme_file.ansi == {3: (138, 90, 0), 9: (200, 0, 0)}


def test_a_theme_file_that_is_not_toml_is_reported(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("primary = \n")
    _, problems = load_theme_file(path)
    assert "not valid TOML" in str(problems[0]) and str(path) in str(problems[0])


async def test_switching_theme_from_the_palette_is_remembered(console, config):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.theme == "dark"
        await open_palette(pilot, "Theme: projector")
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "projector" and not CommandPalette.is_open(app))
        assert background(app) == Color.parse("#FFFFFF")
        assert ("", "Theme: projector") in [(title, told) for title, told, _ in app.notified]
    assert 'theme = "projector"' in (config / "settings.toml").read_text()

    again = console()  # the next start of the console
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert again.theme == "projector"
        assert background(again) == Color.parse("#FFFFFF")
        assert again.notified == []


async def test_f2_goes_through_the_themes_and_the_named_colours_follow(console, config):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        dark_yellow = tuple(app.ansi_theme.ansi_colors[3])
        await pilot.press("f2")
        await until(pilot, lambda: app.theme == "light")
        await pilot.press("f2")
        await until(pilot, lambda: app.theme == "projector")
        assert tuple(app.ansi_theme.ansi_colors[3]) == (138, 90, 0)  # projector.toml [ansi]
        await pilot.press("f2")
        await until(pilot, lambda: app.theme == "dark")
        assert tuple(app.ansi_theme.ansi_colors[3]) == dark_yellow
    assert load_settings(config / "settings.toml")[0].theme == "dark"


async def test_a_malformed_user_theme_is_notified_and_the_good_ones_load(console, config):
    themes = config / "themes"
    themes.mkdir()
    (themes / "broken.toml").write_text('name = "broken"\nprimary = "#12345"\n')
    (themes / "stage.toml").write_text('primary = "#FF0000"\nbackground = "#000000"\n')
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.notified)
        title, message, _ = app.notified[0]
        assert title == "broken.toml"
        assert str(themes / "broken.toml") in message and "field 'primary'" in message
        assert "broken" not in app.available_themes
        assert app.theme == "dark"  # the console started as ever
        await open_palette(pilot, "Theme: stage")  # the good user theme is offered
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "stage")
        assert background(app) == Color.parse("#000000")


async def test_a_remembered_theme_that_is_gone_is_reported(console, config):
    (config / "settings.toml").write_text('theme = "gone"\n')
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.notified)
        assert app.theme == "dark"
        assert "field 'theme'" in app.notified[0][1] and "'gone'" in app.notified[0][1]


def test_saving_the_theme_keeps_the_rest_of_the_settings_file(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('# mine\ntheme = "light"  # was\nother = 1\n[table]\ntheme = "kept"\n')
    assert save_theme(path, "projector") is None
    assert path.read_text() == '# mine\ntheme = "projector"\nother = 1\n[table]\ntheme = "kept"\n'
    fresh = tmp_path / "new" / "settings.toml"
    assert save_theme(fresh, "dark") is None
    assert load_settings(fresh) == (Settings(theme="dark"), [])
    broken = tmp_path / "broken.toml"
    broken.write_text("theme = \n")
    problem = save_theme(broken, "dark")
    assert isinstance(problem, Problem) and "not valid TOML" in problem.message
    assert broken.read_text() == "theme = \n"  # left alone


# --- keys -----------------------------------------------------------------------------------


def test_every_binding_of_the_console_has_an_action_id():
    assert {"app.help", "app.quit", "app.next_theme", "app.command_palette"} <= set(KNOWN)
    assert {"run.cancel_run", "run.back", "run.focus.trace", "history.back"} <= set(KNOWN)
    assert {"run.cycle.human", "run.cycle_typing.human", "setup.start", "tasks.history"} <= set(
        KNOWN
    )
    assert action_id("x", "focus('#call-detail')") == "x.focus.call-detail"
    assert action_id("x", "app.quit") == "x.quit"


def test_keyed_gives_a_priority_twin_of_an_action_its_own_id():
    bindings = keyed("t", [("m", "cycle('a')", "Cycle"), ("escape,q", "back", "Back")])
    assert [(b.key, b.id) for b in bindings] == [("m", "t.cycle.a"), ("escape", "t.back"), ("q", "t.back")]  # fmt: skip
    from textual.binding import Binding

    twin = keyed("t2", [Binding("m", "go", "Go"), Binding("ctrl+t", "go", "Go", priority=True)])
    assert [b.id for b in twin] == ["t2.go", "t2.go.ctrl_t"]


def test_keys_are_checked_and_normalised():
    assert normalise_key("?") == "question_mark"
    assert normalise_key("ctrl+x") == "ctrl+x"
    assert normalise_key("f12") == "f12"
    assert normalise_key("question_mark") == "question_mark"
    for bad in ("", "ctrl+", "hyperdrive+x", "notakey", "a,b"):
        assert normalise_key(bad) is None, bad


def test_the_keymap_resolves_groups_and_tables_and_reports_each_bad_entry(tmp_path):
    path = tmp_path / "keymap.toml"
    table = {
        "run.cycle": "n",  # a group: the three modes of m
        "run": {"follow": ["ctrl+f", "F"]},  # a table is a scope
        "run.cancle_run": "x",  # a typo
        "app.help": "ctrl+notakey",
        "history.back": 3,
    }
    keymap, problems = parse_keymap(path, table)
    assert keymap == {
        "run.cycle.assisted": "n",
        "run.cycle.human": "n",
        "run.cycle.simulated": "n",
        "run.follow": "ctrl+f,F",
    }
    assert [(p.field, p.file) for p in problems] == [
        ("run.cancle_run", path), ("app.help", path), ("history.back", path)
    ]  # fmt: skip
    assert "did you mean 'run.cancel_run'" in problems[0].message
    assert "not a key" in problems[1].message


def test_a_key_another_action_of_the_screen_has_is_applied_and_reported(tmp_path):
    keymap, problems = parse_keymap(tmp_path / "k.toml", {"run.follow": "c"})
    assert keymap == {"run.follow": "c"}
    assert len(problems) == 1 and "is also run.cancel_run" in problems[0].message
    _, none = parse_keymap(tmp_path / "k.toml", {"run.follow": "c", "run.cancel_run": "x"})
    assert none == []  # cancel moved away: no clash


async def test_a_remapped_key_runs_the_action_and_the_old_one_does_not(console, config):
    (config / "keymap.toml").write_text('"history.back" = "b"\n"app.help" = "f5"\n')
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_history()
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("escape")  # no longer Back
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("f5")  # the app's help, moved
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))
        assert app.notified == []


async def test_a_bad_keymap_entry_is_notified_and_the_others_apply(console, config):
    (config / "keymap.toml").write_text(
        '"history.bakc" = "b"\n"app.next_theme" = "f6"\n"app.help" = "ctrl+notakey"\n'
    )
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: len(app.notified) == 2)
        (title, typo, _), (_, key, _) = app.notified
        assert title == "keymap.toml" and str(config / "keymap.toml") in typo
        assert "field 'history.bakc'" in typo and "did you mean 'history.back'" in typo
        assert "field 'app.help'" in key and "not a key: 'ctrl+notakey'" in key
        await pilot.press("f6")  # the good entry applies
        await until(pilot, lambda: app.theme == "light")
        await pilot.press("question_mark")  # the bad one changed nothing
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_a_keymap_that_is_not_toml_is_notified(console, config):
    (config / "keymap.toml").write_text('"app.help" = \n')
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.notified)
        assert "keymap.toml" in app.notified[0][1] and "not valid TOML" in app.notified[0][1]


# --- help and palette -----------------------------------------------------------------------


async def test_help_lists_the_screen_and_app_keys_with_the_remapped_one(console, config):
    (config / "keymap.toml").write_text('"history.back" = ["b", "escape"]\n')
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_history()
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_screen = app.screen
        rows = {r.action_id: r for r in help_screen.rows}
        assert rows["history.back"].keys == ["b", "esc"]
        assert rows["history.back"].description == "Back" and not rows["history.back"].everywhere
        assert rows["app.help"].keys == ["?"] and rows["app.help"].everywhere
        assert rows["app.quit"].keys == ["^q"]
        table = help_screen.query_one("#help-keys")
        cells = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["b, esc", "Back", "history.back"] in cells
        assert ["f2", "Next theme", "app.next_theme"] in cells
        await pilot.press("question_mark")  # ? closes it again
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))


async def test_the_palette_runs_a_screens_action(console):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))
        hits = await open_palette(pilot, "Past runs")
        assert "h · tasks.history" in str(hits.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))


async def test_every_action_of_a_screen_is_in_the_palette(console):
    app = console()
    async with app.run_test(size=(120, 40)) as pilot:
        for opened in (None, app.open_history):
            if opened is not None:
                opened()
                await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
            screen = app.screen
            titles = {c.title for c in app.get_system_commands(screen)}
            actions = {r.description for r in key_rows(screen) if r.enabled}
            assert actions - {"Commands"} <= titles, actions - titles
            assert {"Theme: dark", "Theme: light", "Theme: projector", "Help (keys)"} <= titles
            assert not {"Theme", "Keys"} & titles  # Textual's own, replaced


def test_the_readme_keymap_example_applies_clean(tmp_path):
    import re
    import tomllib

    readme = (ROOT / "README.md").read_text()
    example = re.search(r"```toml\n(\"run\.cancel_run\".*?)```", readme, re.S)
    assert example, "the keymap example is gone from the README"
    keymap, problems = parse_keymap(tmp_path / "keymap.toml", tomllib.loads(example[1]))
    assert problems == []
    assert keymap["history.back"] == "b,escape" and keymap["run.cycle.human"] == "n"
