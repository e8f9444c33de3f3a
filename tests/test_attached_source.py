"""A display attached to a run that something else executes (a batch's run:
`AttachedSource`): it has no work of its own, is given the events the run stored before it
came, then each new one, none twice; it operates the run (answers, the responder, pausing
the agent, a cancel of that run alone) until the run's end is in, and leaving it does not
cancel the run. No Textual."""

from __future__ import annotations

from icae_tui.display.handle import OPERATING, Capability
from icae_tui.display.operator import Do, Operator, Work
from icae_tui.display.sources import AttachedSource
from icae_tui.display.view import RunView
from icae_tui.domain.events import AgentOutput, RunFinished
from icae_tui.domain.states import RunStatus
from icae_tui.runs.log import RunLog
from tests.ui.helpers import started


class BatchRun:
    """Enough of `Run`: its own record (a RunLog), the operator's commands recorded."""

    run_id = "attached"

    def __init__(self, store) -> None:
        self.log = RunLog(self.run_id, store)
        self.leftovers_removed: list[str] = []
        self.calls: list[object] = []

    def subscribe(self, callback) -> None:
        self.log.subscribe(callback)

    async def execute(self):
        raise AssertionError("the batch executes it, never the display")

    def answer(self, question_id: int, text: str) -> bool:
        self.calls.append(("answer", question_id, text))
        return True

    def set_responder(self, mode: str) -> bool:
        self.calls.append(("responder", mode))
        return True

    async def pause(self) -> bool:
        self.calls.append("pause")
        return True

    async def resume(self) -> bool:
        self.calls.append("resume")
        return True


def output(i: int) -> AgentOutput:
    return AgentOutput(stream="stdout", text=f"{i}\n")


async def test_the_events_stored_before_it_came_are_delivered_first_then_the_new_ones(store):
    run = BatchRun(store)
    before = [started(), output(1), output(2)]
    for ev in before:
        await run.log.emit(ev)
    source = AttachedSource(run)
    assert source.job() is None  # the batch's work, not the display's
    got = []
    source.connect(got.append)
    assert got == before
    after = [output(3), output(4)]
    for ev in after:
        await run.log.emit(ev)
    assert got == before + after  # in order, none twice
    assert [ev.seq for ev in got] == [1, 2, 3, 4, 5]
    assert source.recorded() == before + after and source.events == []


async def test_it_operates_the_run_until_its_end_is_in_and_cancels_it_alone(store):
    run = BatchRun(store)
    await run.log.emit(started("human"))
    cancels: list[str] = []
    source = AttachedSource(run, cancel=lambda: cancels.append("cancel") or True)
    handle = source.handle()
    view = RunView()
    source.connect(view.apply)
    assert handle.live and handle.attached and handle.job() is None
    assert handle.working and handle.capabilities() == OPERATING
    assert handle.answer(1, "yes") and handle.set_responder("assisted") is True
    assert await handle.pause_agent() and await handle.resume_agent()
    assert run.calls == [("answer", 1, "yes"), ("responder", "assisted"), "pause", "resume"]
    assert handle.cancel() and cancels == ["cancel"]

    op = Operator(handle, view)
    op.started(False)  # no work handed to the screen, but the run goes on
    assert op.work is Work.RUNNING and op.can_cancel and op.can_switch
    assert op.back() == [Do.LEAVE]  # leaving does not cancel the batch's run
    assert op.finished_elsewhere() == []

    await run.log.emit(RunFinished(status=RunStatus.CANCELLED))
    assert not handle.working and handle.capabilities() == frozenset()
    assert not handle.answer(2, "late") and not handle.cancel()
    assert Do.REDRAW in op.finished_elsewhere()
    assert op.work is Work.CANCELLED and not op.running


async def test_without_a_way_to_cancel_it_offers_the_rest(store):
    run = BatchRun(store)
    await run.log.emit(started())
    handle = AttachedSource(run).handle()
    assert handle.capabilities() == OPERATING - {Capability.CANCEL}
    assert not handle.cancel()


async def test_a_run_already_over_is_attached_as_over(store):
    run = BatchRun(store)
    for ev in (started(), RunFinished(status=RunStatus.COMPLETED)):
        await run.log.emit(ev)
    source = AttachedSource(run)
    assert not source.handle().working
    got = []
    source.connect(got.append)
    assert [ev.kind for ev in got] == ["run_started", "run_finished"]
