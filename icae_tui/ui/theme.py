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

The fields are `ThemeSpec`'s (a pydantic model: no other field, each value checked). A file
that is wrong is reported by name and field and skipped; the others load.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError
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


def _colour(value: object) -> str:
    if isinstance(value, str) and is_colour(value):
        return value
    raise ValueError(f"not a colour: {value!r}")


def _name(value: object) -> str:
    if isinstance(value, str) and NAME.fullmatch(value):
        return value
    raise ValueError(f"not a theme name (letters, digits, - and _): {value!r}")


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"not true or false: {value!r}")


def _fraction(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise ValueError(f"not a number from 0 to 1: {value!r}")


def _css_value(value: object) -> str:
    if isinstance(value, str) and is_css_value(value):
        return value
    raise ValueError(f"not a colour or text style: {value!r}")


def _css_name(key: str) -> str:
    if re.fullmatch(r"[a-z][a-z0-9-]*", key):
        return key
    raise ValueError("not a CSS variable name (lower case, digits, -)")


def _ansi_name(key: str) -> str:
    if key in ANSI_INDEX:
        return key
    raise ValueError(f"not a named colour (known: {', '.join(ANSI_INDEX)})")


def _table(what: str) -> Callable[[object], object]:
    def check(value: object) -> object:
        if isinstance(value, dict):
            return value
        raise ValueError(f"not a table of {what}")

    return check


Colour = Annotated[str, BeforeValidator(_colour)]
Fraction = Annotated[float, BeforeValidator(_fraction)]


class ThemeSpec(BaseModel):
    """A theme file's fields, each checked (see the module's note): a field that is not one
    of these, or a value that is not what its field holds, is a problem naming the field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, BeforeValidator(_name)]
    dark: Annotated[bool, BeforeValidator(_bool)] = True
    primary: Colour
    secondary: Colour | None = None
    accent: Colour | None = None
    foreground: Colour | None = None
    background: Colour | None = None
    surface: Colour | None = None
    panel: Colour | None = None
    boost: Colour | None = None
    success: Colour | None = None
    warning: Colour | None = None
    error: Colour | None = None
    luminosity_spread: Fraction = 0.15  # Textual's defaults
    text_alpha: Fraction = 0.95
    variables: Annotated[
        dict[
            Annotated[str, AfterValidator(_css_name)], Annotated[str, BeforeValidator(_css_value)]
        ],
        BeforeValidator(_table("CSS variables")),
    ] = {}
    ansi: Annotated[
        dict[Annotated[str, AfterValidator(_ansi_name)], Colour],
        BeforeValidator(_table("named colours")),
    ] = {}

    def theme(self) -> Theme:
        return Theme(
            name=self.name, dark=self.dark, primary=self.primary, secondary=self.secondary,
            accent=self.accent, foreground=self.foreground, background=self.background,
            surface=self.surface, panel=self.panel, boost=self.boost, success=self.success,
            warning=self.warning, error=self.error, luminosity_spread=self.luminosity_spread,
            text_alpha=self.text_alpha, variables=dict(self.variables),
        )  # fmt: skip

    def ansi_colours(self) -> dict[int, tuple[int, int, int]]:
        """The named colours it changes: index 0-15 of the ANSI palette → RGB."""
        return {ANSI_INDEX[key]: Color.parse(value).rgb for key, value in self.ansi.items()}


FIELDS = tuple(ThemeSpec.model_fields)
# One problem is said per entry of a table: of a variable, its value's before its name's; of
# a named colour, its name's before its colour's.
_KEY_FIRST = {"variables": False, "ansi": True}


def _problems(path: Path, err: ValidationError) -> list[Problem]:
    """One problem per field (per entry of a table), in the order of the fields; unknown
    fields first."""
    found: dict[str, tuple[tuple[int, int, str], str]] = {}
    for e in err.errors():
        loc = [str(part) for part in e["loc"]]
        top = loc[0] if loc else ""
        field = ".".join(loc[:2]) if top in _KEY_FIRST and len(loc) > 1 else top
        if e["type"] == "extra_forbidden":
            rank, message = (0, 0, top), f"unknown field (known: {', '.join(sorted(FIELDS))})"
        elif e["type"] == "missing":
            rank, message = (
                (1, FIELDS.index(top), ""),
                "missing (every theme needs a primary colour)",
            )
        else:
            is_key = loc[-1] == "[key]"
            first = is_key == _KEY_FIRST.get(top, False)
            rank = (1, FIELDS.index(top), "")
            message = str(e["msg"]).removeprefix("Value error, ")
            if field in found and not first:
                continue
        found[field] = (rank, message)
    ordered = sorted(found.items(), key=lambda item: item[1][0])  # stable: entries in order
    return [Problem(path, field, message) for field, (_, message) in ordered]


def parse_theme(path: Path, table: dict[str, object]) -> tuple[ThemeFile | None, list[Problem]]:
    try:
        spec = ThemeSpec.model_validate({"name": path.stem, **table})
    except ValidationError as err:
        return None, _problems(path, err)
    theme = spec.theme()
    try:
        theme.to_color_system().generate()
    except Exception as err:  # a colour system Textual cannot build: this theme only
        return None, [Problem(path, "", f"Textual cannot use this theme: {err}")]
    return ThemeFile(theme, path, spec.ansi_colours()), []


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
