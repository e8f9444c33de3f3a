"""The console's own files in the user's config folder, and the problems found in them.

`$XDG_CONFIG_HOME/icae-tui/` (default `~/.config/icae-tui/`) holds `settings.toml` (what
the console remembers: the theme), `keymap.toml` (keys remapped by action id) and
`themes/*.toml` (the user's themes). A problem in any of them is reported with the file and
the field, never raised: the console starts with what is good.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SETTINGS_FILE = "settings.toml"
KEYMAP_FILE = "keymap.toml"
THEMES_FOLDER = "themes"


@dataclass(frozen=True)
class Problem:
    """What is wrong in one of the console's files: the file, the field (empty: the whole
    file), what is wrong."""

    file: Path
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: field '{self.field}'" if self.field else str(self.file)
        return f"{where}: {self.message}"


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/icae-tui`; a relative or empty XDG_CONFIG_HOME is ignored, as the
    XDG spec says, for `~/.config` (the same rule as the agents' file)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "icae-tui"


def read_toml(path: Path) -> tuple[dict[str, object] | None, list[Problem]]:
    """The file's table; None and no problem when it does not exist."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, []
    except (OSError, UnicodeDecodeError) as err:
        return None, [Problem(path, "", f"cannot be read: {err}")]
    try:
        return tomllib.loads(raw), []
    except tomllib.TOMLDecodeError as err:
        return None, [Problem(path, "", f"not valid TOML: {err}")]


@dataclass(frozen=True)
class Settings:
    theme: str | None = None


def load_settings(path: Path) -> tuple[Settings, list[Problem]]:
    table, problems = read_toml(path)
    if table is None:
        return Settings(), problems
    theme = table.get("theme")
    if theme is not None and not (isinstance(theme, str) and theme):
        return Settings(), [Problem(path, "theme", f"not a theme name: {theme!r}")]
    return Settings(theme=theme), []


_THEME_LINE = re.compile(r"^\s*theme\s*=.*$", re.MULTILINE)
_TABLE_HEADER = re.compile(r"^\s*\[", re.MULTILINE)


def save_theme(path: Path, theme: str) -> Problem | None:
    """Remember `theme` in the settings file. Its other lines (comments, other settings) are
    kept; a file that is not valid TOML is left alone and reported."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    except (OSError, UnicodeDecodeError) as err:
        return Problem(path, "theme", f"not saved: the file cannot be read: {err}")
    try:
        tomllib.loads(old)
    except tomllib.TOMLDecodeError as err:
        return Problem(path, "theme", f"not saved: the file is not valid TOML: {err}")
    line = f"theme = {json.dumps(theme)}"  # a JSON string is a TOML basic string
    header = _TABLE_HEADER.search(old)
    top, rest = (old[: header.start()], old[header.start() :]) if header else (old, "")
    if _THEME_LINE.search(top):
        top = _THEME_LINE.sub(lambda _: line, top, count=1)
    else:
        top = line + "\n" + top
    new = top + rest
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        return Problem(path, "theme", f"not saved: {err}")
    return None
