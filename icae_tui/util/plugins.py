"""Plug-ins from installed packages, through Python entry points.

Three groups: `icae_tui.backends` (sandbox/registry.py), `icae_tui.agent_kinds`
(agents/registry.py) and `icae_tui.scorers` (evaluation/scorers.py). Each entry point names
a callable taking no argument that registers what its package brings (`register_backend`,
`register_agent_kind`, `register_case_scorer` / `register_delivery_scorer`); e.g. in the
package's pyproject.toml:

    [project.entry-points."icae_tui.scorers"]
    shout = "my_plugin:register_scorers"

A group is loaded the first time its registry is asked, once. A plug-in that cannot be
loaded or fails to register is one warning line naming it (its entry point and error), never
a traceback, and the others still load.
"""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint, entry_points

log = logging.getLogger(__name__)

_loaded: set[str] = set()


def load_plugins(group: str) -> None:
    """Call every entry point of `group`, once per process (see `forget`)."""
    if group in _loaded:
        return
    _loaded.add(group)  # first: a plug-in that asks its registry does not load it again
    for ep in entry_points(group=group):
        _load(ep)


def _load(ep: EntryPoint) -> None:
    where = f"{ep.name} = {ep.value}"
    try:
        register = ep.load()
        if not callable(register):
            raise TypeError(f"{type(register).__name__} is not callable")
        register()
    except Exception as err:  # a broken plug-in is its own trouble, never the command's
        text = " ".join(str(err).split())[:300]
        log.warning("plug-in %s (%s) not loaded: %s: %s", where, ep.group, type(err).__name__, text)


def forget(group: str | None = None) -> None:
    """Load `group` (every group, with none) again when next asked: for tests, after a
    package is installed or removed. What the plug-ins registered stays registered."""
    if group is None:
        _loaded.clear()
    else:
        _loaded.discard(group)
