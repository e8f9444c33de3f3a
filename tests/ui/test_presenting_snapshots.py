"""Screenshots of presenting: the help screen (with a remapped key) and the projector theme,
each at 80×24 and 200×60, compared with the accepted ones in __snapshots__/.

Stable the way tests/ui/test_snapshots.py is (the snapshots' fixtures in tests/ui/conftest.py:
the task's folder shown as a fixed path, history's dates in UTC from fixed timestamps), plus the user's config folder: a
fresh temporary one (tests/ui/conftest.py) holding only what each test writes.
After an intended change: `pytest tests/ui/test_presenting_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them.
"""

from __future__ import annotations

from icae_tui.ui.screens.help import HelpScreen
from icae_tui.ui.screens.history import HistoryScreen
from icae_tui.ui.settings import config_dir

from .helpers import still_console, until


def config_file(name: str, text: str) -> None:
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


async def open_history(pilot) -> None:
    pilot.app.open_history()
    await until(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen))


def test_help_screen(snap_compare, catalog, history, utc, size):
    """The history screen's keys (Back remapped to b and Escape) and the app's."""
    config_file("keymap.toml", '"history.back" = ["b", "escape"]\n')

    async def help_over_history(pilot) -> None:
        await open_history(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))

    app = still_console(catalog, history)
    assert snap_compare(app, run_before=help_over_history, terminal_size=size)


def test_projector_theme(snap_compare, catalog, history, utc, size):
    """Past runs in the projector theme, remembered from the last session: black on white,
    the statuses' named colours dark enough for a white screen."""
    config_file("settings.toml", 'theme = "projector"\n')
    app = still_console(catalog, history)
    assert app.theme == "projector"
    assert snap_compare(app, run_before=open_history, terminal_size=size)
