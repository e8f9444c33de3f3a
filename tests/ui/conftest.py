"""Console tests never see the user's own agents: the user's agents.toml is looked for in an
empty folder (run setup reads it, with the defaults and any `--agents` file)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_user_agents(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
