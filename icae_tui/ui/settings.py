"""The console's own files in the user's config folder, and the problems found in them.

`$XDG_CONFIG_HOME/icae-tui/` (default `~/.config/icae-tui/`) holds `settings.toml` (what
the console remembers: the theme, and per task the run setup's last choices), `keymap.toml`
(keys remapped by action id) and `themes/*.toml` (the user's themes). A problem in any of them
is reported with the file and the field, never raised: the console starts with what is good.

    theme = "dark"

    [setup."semver"]          # the choices of the last run started of task semver
    agent = "model:local"
    level = "L2"
    responder = "assisted"

Saving one of them rewrites only its own line (the theme) or table (a task's setup, moved to
the end: the last table is the last run started); comments and the rest stay as they are.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from icae_tui.util.documents import TooDeep, load_toml

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
        return load_toml(raw), []
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        return None, [Problem(path, "", f"not valid TOML: {err}")]


SETUP_TABLE = "setup"
SETUP_FIELDS = ("agent", "level", "responder")


@dataclass(frozen=True)
class SetupChoice:
    """What the run setup had chosen for a task when its last run started (None: not
    remembered; the setup checks each against what it offers now)."""

    agent: str | None = None
    level: str | None = None
    responder: str | None = None


@dataclass(frozen=True)
class Settings:
    theme: str | None = None
    # task id → its last run's setup, in the file's order: the last is the last run started
    setups: Mapping[str, SetupChoice] = field(default_factory=dict)

    @property
    def last_setup(self) -> SetupChoice | None:
        return list(self.setups.values())[-1] if self.setups else None


def load_settings(path: Path) -> tuple[Settings, list[Problem]]:
    table, problems = read_toml(path)
    if table is None:
        return Settings(), problems
    theme = table.get("theme")
    if theme is not None and not (isinstance(theme, str) and theme):
        problems.append(Problem(path, "theme", f"not a theme name: {theme!r}"))
        theme = None
    setups, found = load_setups(path, table.get(SETUP_TABLE))
    return Settings(theme=theme, setups=setups), problems + found


def load_setups(path: Path, raw: object) -> tuple[dict[str, SetupChoice], list[Problem]]:
    """The `[setup."<task>"]` tables; a field that is not a non-empty string is reported and
    left out, the others kept."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [Problem(path, SETUP_TABLE, "not a table of tasks' setups")]
    setups: dict[str, SetupChoice] = {}
    problems: list[Problem] = []
    for task_id, entry in raw.items():
        where = f"{SETUP_TABLE}.{json.dumps(task_id)}"
        if not isinstance(entry, dict):
            problems.append(Problem(path, where, "not a table (agent, level, responder)"))
            continue
        values: dict[str, str] = {}
        for name in SETUP_FIELDS:
            value = entry.get(name)
            if value is None:
                continue
            if isinstance(value, str) and value:
                values[name] = value
            else:
                problems.append(Problem(path, f"{where}.{name}", f"not a name: {value!r}"))
        setups[task_id] = SetupChoice(**values)
    return setups, problems


_THEME_LINE = re.compile(r"^\s*theme\s*=.*$", re.MULTILINE)
_TABLE_HEADER = re.compile(r"^\s*\[", re.MULTILINE)


def read_for_saving(path: Path, what: str) -> tuple[str, dict[str, object]] | Problem:
    """The settings file's text and table (empty when it does not exist), or why `what`
    cannot be saved in it."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    except (OSError, UnicodeDecodeError) as err:
        return Problem(path, what, f"not saved: the file cannot be read: {err}")
    try:
        return old, load_toml(old)
    except (tomllib.TOMLDecodeError, TooDeep) as err:
        return Problem(path, what, f"not saved: the file is not valid TOML: {err}")


def write_settings(path: Path, text: str, what: str) -> Problem | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        return Problem(path, what, f"not saved: {err}")
    return None


def save_theme(path: Path, theme: str) -> Problem | None:
    """Remember `theme` in the settings file. Its other lines (comments, other settings) are
    kept; a file that is not valid TOML is left alone and reported."""
    read = read_for_saving(path, "theme")
    if isinstance(read, Problem):
        return read
    old, _table = read
    line = f"theme = {json.dumps(theme)}"  # a JSON string is a TOML basic string
    header = _TABLE_HEADER.search(old)
    top, rest = (old[: header.start()], old[header.start() :]) if header else (old, "")
    if _THEME_LINE.search(top):
        top = _THEME_LINE.sub(lambda _: line, top, count=1)
    else:
        top = line + "\n" + top
    return write_settings(path, top + rest, "theme")


_HEADER_LINE = re.compile(r"^\s*\[(?!\[)")  # a table's header (not an array of tables')


def header_path(line: str) -> list[str] | None:
    """The keys a table header line names (`[setup."a b"]` → setup, a b), None for any other
    line."""
    if not _HEADER_LINE.match(line):
        return None
    try:
        table: object = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None
    keys: list[str] = []
    while isinstance(table, dict) and len(table) == 1:
        key, table = next(iter(table.items()))
        keys.append(key)
    return keys


def save_setup(path: Path, task_id: str, choice: SetupChoice) -> Problem | None:
    """Remember a task's run setup: its `[setup."<task>"]` table written again, at the end
    of the file (the last run started is the last table). The other lines are kept; a file
    that is not valid TOML, or that declares the setups some other way (a file this would
    change otherwise than meant), is left alone and reported."""
    what = f"{SETUP_TABLE}.{json.dumps(task_id)}"
    read = read_for_saving(path, what)
    if isinstance(read, Problem):
        return read
    old, table = read
    kept: list[str] = []
    inside = False  # in the task's own table, which is written again
    for line in old.splitlines(keepends=True):
        keys = header_path(line)
        if keys is not None:
            inside = keys == [SETUP_TABLE, task_id]
        if not inside:
            kept.append(line)
    text = "".join(kept).rstrip("\n")
    values = {k: v for k, v in asdict(choice).items() if v is not None}
    lines = [f"[{SETUP_TABLE}.{json.dumps(task_id)}]"]
    lines += [f"{name} = {json.dumps(value)}" for name, value in values.items()]
    new = (text + "\n\n" if text else "") + "\n".join(lines) + "\n"
    expected = dict(table)
    setups = expected.get(SETUP_TABLE, {})
    expected[SETUP_TABLE] = {**(setups if isinstance(setups, dict) else {}), task_id: values}
    try:
        written = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        written = None
    if written != expected:
        return Problem(path, what, f"not saved: the file declares [{SETUP_TABLE}] otherwise")
    return write_settings(path, new, what)
