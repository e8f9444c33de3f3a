"""The console's themes: TOML files, one theme each.

The bundled ones are in `themes/` at the top of the repository (`dark`, `light`,
`projector`); the wheel carries them as `icae_tui/ui/themes/` (a link to that folder in a
checkout, a copy in the package). The user's own are in `$XDG_CONFIG_HOME/icae-tui/themes/`
and may replace a bundled one by its name. A file's fields:

    name = "projector"          # default: the file's name
    dark = false
    primary = "#0033CC"         # required; the other colours are optional
    secondary, accent, foreground, background, surface, panel, boost,
    success, warning, error     # colours: "#RRGGBB", "rgb(…)", a colour name
    luminosity_spread = 0.15    # optional numbers, as Textual's Theme has them
    text_alpha = 0.95
    [variables]                 # any CSS variable of the console or of Textual's widgets
    text-muted = "#333333"      # a colour, a colour with an opacity ("#000 50%"), or a
    block-cursor-text-style = "bold"   # text style
    [ansi]                      # how named colours in the console's text (verdicts in
    yellow = "#8A5A00"          # green, red, yellow …) look: black, red, green, yellow,
                                # blue, magenta, cyan, white and their bright_ variants

A file that is wrong is reported by name and field and skipped; the others load.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.terminal_theme import TerminalTheme
from textual.color import Color, ColorParseError
from textual.css.constants import VALID_STYLE_FLAGS
from textual.theme import Theme

from icae_tui.ui.settings import Problem, read_toml

DEFAULT_THEME = "dark"

# What the console looks like when no theme file can be read (themes/dark.toml, the same).
FALLBACK_THEME = Theme(
    name=DEFAULT_THEME,
    primary="#5FA8D3",
    secondary="#7FB685",
    accent="#E9A03B",
    warning="#E9C46A",
    error="#E76F51",
    success="#7FB685",
    foreground="#D8DEE9",
    background="#11151C",
    surface="#171C24",
    panel="#1F2733",
    dark=True,
)

COLOURS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)
NUMBERS = ("luminosity_spread", "text_alpha")
FIELDS = frozenset({"name", "dark", "variables", "ansi", *COLOURS, *NUMBERS})
ANSI_NAMES = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
ANSI_INDEX = {name: i for i, name in enumerate(ANSI_NAMES)} | {
    f"bright_{name}": i + 8 for i, name in enumerate(ANSI_NAMES)
}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
OPACITY = re.compile(r"(?P<colour>.+?)\s+(?P<pct>\d{1,3}(\.\d+)?)%")


def bundled_themes_dir() -> Path:
    """The package's themes (a link to the repository's `themes/` in a checkout); the
    repository's own folder when the link did not survive (a checkout without symlinks)."""
    packaged = Path(__file__).with_name("themes")
    if packaged.is_dir():
        return packaged
    root = Path(__file__).resolve().parent.parent.parent
    if (root / "pyproject.toml").is_file() and (root / "themes").is_dir():
        return root / "themes"
    return packaged


def is_colour(value: str) -> bool:
    try:
        Color.parse(value)
    except ColorParseError:
        return False
    return True


def is_css_value(value: str) -> bool:
    """What a theme variable may hold: a colour, a colour with an opacity, `auto NN%`, or
    text style words. Anything else would stop the console's CSS from parsing."""
    value = value.strip()
    if is_colour(value):
        return True
    if m := OPACITY.fullmatch(value):
        return (m["colour"] == "auto" or is_colour(m["colour"])) and float(m["pct"]) <= 100
    words = value.split()
    return bool(words) and all(w in VALID_STYLE_FLAGS for w in words)


@dataclass(frozen=True)
class ThemeFile:
    """A theme as read from its file: Textual's theme, and the named colours it changes
    (index 0-15 of the ANSI palette → RGB)."""

    theme: Theme
    path: Path | None = None
    ansi: dict[int, tuple[int, int, int]] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.theme.name

    def terminal_theme(self, base: TerminalTheme) -> TerminalTheme:
        """`base` (Textual's palette for dark or light themes) with this theme's colours."""
        if not self.ansi:
            return base
        palette: list[tuple[int, int, int]] = [base.ansi_colors[i] for i in range(16)]
        for index, rgb in self.ansi.items():
            palette[index] = rgb
        return TerminalTheme(base.background_color, base.foreground_color, palette[:8], palette[8:])


def parse_theme(path: Path, table: dict[str, object]) -> tuple[ThemeFile | None, list[Problem]]:
    problems: list[Problem] = []

    def bad(field: str, message: str) -> None:
        problems.append(Problem(path, field, message))

    for field in sorted(set(table) - FIELDS):
        bad(field, f"unknown field (known: {', '.join(sorted(FIELDS))})")
    name = table.get("name", path.stem)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        bad("name", f"not a theme name (letters, digits, - and _): {name!r}")
    dark = table.get("dark", True)
    if not isinstance(dark, bool):
        bad("dark", f"not true or false: {dark!r}")
    colours: dict[str, str] = {}
    if "primary" not in table:
        bad("primary", "missing (every theme needs a primary colour)")
    for field in COLOURS:
        value = table.get(field)
        if value is None:
            continue
        if isinstance(value, str) and is_colour(value):
            colours[field] = value
        else:
            bad(field, f"not a colour: {value!r}")
    numbers: dict[str, float] = {}
    for field in NUMBERS:
        value = table.get(field)
        if value is None:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
            numbers[field] = float(value)
        else:
            bad(field, f"not a number from 0 to 1: {value!r}")
    variables: dict[str, str] = {}
    raw_variables = table.get("variables", {})
    if not isinstance(raw_variables, dict):
        bad("variables", "not a table of CSS variables")
        raw_variables = {}
    for key, value in raw_variables.items():
        if not isinstance(value, str) or not is_css_value(value):
            bad(f"variables.{key}", f"not a colour or text style: {value!r}")
        elif not re.fullmatch(r"[a-z][a-z0-9-]*", key):
            bad(f"variables.{key}", "not a CSS variable name (lower case, digits, -)")
        else:
            variables[key] = value
    ansi: dict[int, tuple[int, int, int]] = {}
    raw_ansi = table.get("ansi", {})
    if not isinstance(raw_ansi, dict):
        bad("ansi", "not a table of named colours")
        raw_ansi = {}
    for key, value in raw_ansi.items():
        if key not in ANSI_INDEX:
            bad(f"ansi.{key}", f"not a named colour (known: {', '.join(ANSI_INDEX)})")
        elif not (isinstance(value, str) and is_colour(value)):
            bad(f"ansi.{key}", f"not a colour: {value!r}")
        else:
            ansi[ANSI_INDEX[key]] = Color.parse(value).rgb
    if problems:
        return None, problems
    assert isinstance(name, str) and isinstance(dark, bool)
    options: dict[str, Any] = {**colours, **numbers}  # checked above, field by field
    theme = Theme(name=name, dark=dark, variables=variables, **options)
    try:
        theme.to_color_system().generate()
    except Exception as err:  # a colour system Textual cannot build: this theme only
        return None, [Problem(path, "", f"Textual cannot use this theme: {err}")]
    return ThemeFile(theme, path, ansi), []


def load_theme_file(path: Path) -> tuple[ThemeFile | None, list[Problem]]:
    table, problems = read_toml(path)
    if table is None:
        return None, problems or [Problem(path, "", "not found")]
    return parse_theme(path, table)


def theme_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.glob("*.toml") if p.is_file())
    except OSError:
        return []


def load_themes(folders: Sequence[Path]) -> tuple[list[ThemeFile], list[Problem]]:
    """The themes of each folder's `*.toml` files, by name; a later folder's theme replaces
    an earlier one of the same name (the user's `dark` replaces the bundled one)."""
    themes: dict[str, ThemeFile] = {}
    problems: list[Problem] = []
    for folder in folders:
        for path in theme_files(folder):
            theme, found = load_theme_file(path)
            problems += found
            if theme is not None:
                themes[theme.name] = theme
    return list(themes.values()), problems


def theme_order(names: Iterable[str]) -> list[str]:
    """The order `next theme` goes through: the default first, then by name."""
    return sorted(set(names), key=lambda n: (n != DEFAULT_THEME, n))
