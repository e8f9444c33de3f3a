"""Presenting: the console's themes (files, switched live, remembered), its keys (remapped
from keymap.toml), the help screen and the command palette. `IcaeApp` is one of these; a
problem in the user's files is notified, never raised."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from icae_tui.ui.commands import action_commands, key_rows
from icae_tui.ui.keymap import keyed, load_keymap
from icae_tui.ui.screens.help import HelpScreen
from icae_tui.ui.settings import (
    KEYMAP_FILE,
    SETTINGS_FILE,
    THEMES_FOLDER,
    Problem,
    config_dir,
    load_settings,
    save_theme,
)
from icae_tui.ui.theme import (
    DEFAULT_THEME,
    FALLBACK_THEME,
    ThemeFile,
    bundled_themes_dir,
    load_themes,
    theme_order,
)


class PresentingApp(App[None]):
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "app",
        [
            Binding("ctrl+p", "command_palette", "Commands", show=False, priority=True),
            Binding("question_mark", "help", "Help (keys)", show=False),
            Binding("f2", "next_theme", "Next theme", show=False),
        ],
    )
    # Textual's own palette commands that the console's replace: its theme picker (the
    # console's themes are "Theme: <name>"), its keys panel (? is "Help (keys)"), its quit
    # (the app's binding, which cancels a running run first).
    REPLACED_COMMANDS = frozenset({"Theme", "Keys", "Quit"})

    def __init__(self) -> None:
        super().__init__()
        self.setup_presenting()

    def setup_presenting(self) -> None:
        """Themes (bundled, then the user's), the remembered theme, the keymap. What is wrong
        in their files is kept in `problems` and notified once the app runs."""
        folder = config_dir()
        self.settings_file = folder / SETTINGS_FILE
        self.keymap_file = folder / KEYMAP_FILE
        self.problems: list[Problem] = []
        self.remembering = False  # from mount on, a theme chosen is saved
        self.default_ansi = (self.ansi_theme_dark, self.ansi_theme_light)
        files, found = load_themes([bundled_themes_dir(), folder / THEMES_FOLDER])
        self.problems += found
        self.theme_files: dict[str, ThemeFile] = {f.name: f for f in files}
        self.theme_files.setdefault(DEFAULT_THEME, ThemeFile(FALLBACK_THEME))
        for theme_file in self.theme_files.values():
            self.register_theme(theme_file.theme)
        settings, found = load_settings(self.settings_file)
        self.problems += found
        self.remembered_theme = settings.theme
        start = settings.theme or DEFAULT_THEME
        if start not in self.available_themes:
            names = ", ".join(theme_order(self.theme_files))
            self.problems.append(Problem(
                self.settings_file, "theme", f"no theme {start!r} (themes: {names}); "
                f"using {DEFAULT_THEME}",
            ))  # fmt: skip
            start = DEFAULT_THEME
        self.theme = start
        keymap, found = load_keymap(self.keymap_file)
        self.problems += found
        self.set_keymap(keymap)
        if palette_keys := keymap.get("app.command_palette"):
            # The footer shows it. Textual declares it a ClassVar but reads it from the app:
            # set on this app, as its keymap is, not on the class (every app would get it).
            self.COMMAND_PALETTE_BINDING = palette_keys.split(",")[0]  # type: ignore[misc]

    def on_mount(self) -> None:
        self.remembering = True
        self.report(self.problems)

    def report(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            self.notify(
                str(problem), title=problem.file.name, severity="warning", timeout=20, markup=False
            )

    def watch_theme(self, theme: str) -> None:
        """Named colours (verdicts, modes) as the theme file has them; the choice saved."""
        theme_file = self.theme_files.get(theme)
        dark, light = self.default_ansi
        self.ansi_theme_dark = theme_file.terminal_theme(dark) if theme_file else dark
        self.ansi_theme_light = theme_file.terminal_theme(light) if theme_file else light
        if self.remembering and theme != self.remembered_theme:
            problem = save_theme(self.settings_file, theme)
            if problem is None:
                self.remembered_theme = theme
            else:
                self.report([problem])

    def use_theme(self, name: str) -> None:
        self.theme = name
        self.notify(f"Theme: {name}", timeout=3)

    def action_next_theme(self) -> None:
        names = theme_order(self.theme_files)
        at = names.index(self.theme) if self.theme in names else -1
        self.use_theme(names[(at + 1) % len(names)])

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: every action `screen` can run now (its keys', the app's), a command
        per theme, Textual's screenshot and maximize."""
        for command in super().get_system_commands(screen):
            if command.title not in self.REPLACED_COMMANDS:
                yield command
        yield from action_commands(self, screen)
        if not any(row.action == "help" for row in key_rows(screen)):
            yield SystemCommand("Help (keys)", "the keys of this screen", self.action_help)
        for name in theme_order(self.theme_files):
            now = " (the theme now)" if name == self.theme else ""
            yield SystemCommand(
                f"Theme: {name}", f"switch to {name}{now}", partial(self.use_theme, name)
            )
