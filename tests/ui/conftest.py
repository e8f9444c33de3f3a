"""Console tests never see the user's own agents: the user's agents.toml is looked for in an
empty folder (run setup reads it, with the defaults and any `--agents` file)."""

from __future__ import annotations

import inspect

import pytest


@pytest.fixture(autouse=True)
def no_user_agents(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))


@pytest.fixture
def snap_compare(snap_compare):
    """The plugin's snap_compare with every cursor held still before the picture: a blinking
    cursor drawn in one run and not in the next made snapshots flaky (under load, more so)."""

    def compare(app, press=(), terminal_size=(80, 24), run_before=None):
        async def steady(pilot) -> None:
            if run_before is not None:
                result = run_before(pilot)
                if inspect.isawaitable(result):
                    await result
            for screen in pilot.app.screen_stack:
                for widget in screen.walk_children(with_self=True):
                    if hasattr(widget, "cursor_blink"):
                        widget.cursor_blink = False
            await pilot.pause()

        return snap_compare(app, press=press, terminal_size=terminal_size, run_before=steady)

    return compare
