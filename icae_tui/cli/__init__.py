"""The `icae` command line, a module per command: `root` (the parser, dispatch, and the
commands small enough to live there: tasks, images, run, agents, console, replay, serve,
reap), `runs`, `batch`, `race`, `importers` (`icae tasks import` / `export`), `teach`
(`icae tasks teach`), `models`; `model_endpoints` turns a `--<role>-endpoint NAME` into the
role's model configuration. `main` is the entry point (pyproject's `icae`)."""

from icae_tui.cli.root import main

__all__ = ["main"]
