"""What a screen asks of the console app, posted as messages (they bubble from the screen to
the app, which handles them: ui/app.py), so no screen calls the app's own methods."""

from __future__ import annotations

from textual.message import Message

from icae_tui.domain.task import Task


class OpenSetup(Message):
    """Set up a run of `task` (the agent, the level, the responder), then start it."""

    def __init__(self, task: Task) -> None:
        super().__init__()
        self.task = task


class OpenHistory(Message):
    """Show the past runs and the recorded demos."""
