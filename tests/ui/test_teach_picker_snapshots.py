"""Screenshots of the teach picker (80×24 and 200×60, the `size` fixture): a live run (a
fake one) in human mode where the simulated user fell back on Q1 and the operator answered;
the picker under the clarifications offers the level's records, the likely one highlighted.
Stable as tests/ui/test_snapshots.py's are: fixed events, timestamps and clock. Nothing is
chosen here (the snapshot task's folder is a fixed relative path: never written to).
After an intended change: `pytest tests/ui/test_teach_picker_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them."""

from __future__ import annotations

import asyncio

from icae_tui.display.sources import LiveSource
from icae_tui.domain.events import PhaseChanged, QuestionAnswered, QuestionAsked
from icae_tui.domain.states import AnsweredBy
from icae_tui.runs.run import RunOutcome
from icae_tui.ui.screens.run import RunScreen

from .helpers import RECORDED_T0, FakeRun, finish, started, still_console, until

T0 = RECORDED_T0
NOW = T0 + 65.0  # the live run's clock: 1:05 in
ASKED = "What does the tool say for a verb it has never heard of?"


def answered_a_fallback(task) -> FakeRun:
    """Q1 fell back and the operator answered it; then the run waits until the test ends."""
    hold = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        events = [
            started("human"),
            PhaseChanged(phase="generate", detail="scripted:good"),
            QuestionAsked(question_id=1, text=ASKED, remaining_before=3, mode=AnsweredBy.HUMAN,
                          draft="That is not specified; use your judgement.",
                          draft_fallback=True),
            QuestionAnswered(question_id=1, text="Print error=unknown_op and exit 2.",
                             responder=AnsweredBy.HUMAN, remaining=2, latency_s=12.5),
        ]  # fmt: skip
        for i, ev in enumerate(events):
            ev.ts = T0 + 5.0 * i
            run.emit(ev)
        await hold.wait()
        return finish(run)

    return FakeRun(task, "human", script)


def test_the_teach_picker(snap_compare, catalog, store, size):
    task = catalog.tasks["mini"]

    async def offered(pilot) -> None:
        screen = RunScreen(LiveSource(answered_a_fallback(task), clock=lambda: NOW, task=task))
        await pilot.app.push_screen(screen)
        picker = screen.teach_picker
        await until(pilot, lambda: picker.display and picker.records.has_focus)

    assert snap_compare(still_console(catalog, store), run_before=offered, terminal_size=size)
