"""What a run's source gives a display and takes from it, short of its handle.

`sources.py`'s `RunSource` is a `Feed` that also gives its `RunHandle` (`handle.py`); the
handle drives the run through the feed alone, so the two modules do not import each other.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from icae_tui.domain.events import Event

if TYPE_CHECKING:
    from icae_tui.display.view import RunView

Deliver = Callable[[Event], None]


class Feed(Protocol):
    run_id: str
    label: str  # what a display says before the run has started

    def connect(self, deliver: Deliver) -> None:
        """Call `deliver` with each event, in order (now, or as they happen)."""

    def job(self) -> Coroutine[Any, Any, Any] | None:
        """The work that produces the events (a live run's `execute()`), or None."""

    def answer(self, question_id: int, text: str) -> bool:
        """The operator's answer to a waiting question; False if nothing waits for it."""

    def set_responder(self, mode: str) -> bool | None:
        """Switch who answers; False if refused."""

    async def pause_agent(self) -> bool:
        """Pause the agent (a live run, while the agent builds); False if refused."""

    async def resume_agent(self) -> bool:
        """Let a paused agent go on; False if refused (nothing paused, a stored run)."""

    def recorded(self) -> list[Event]:
        """The run's events delivered so far, in order."""

    def now(self, view: RunView) -> float:
        """The time for the run's clock."""
