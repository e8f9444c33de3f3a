"""The batch screen (`icae batch --console`): a batch on the `processes` engine runs in the
console, its grid's cells following each pairing's runs to their mean overall; Enter opens a
cell's run (replayed once it is over), Escape comes back to the grid; a batch with the human
answering waits on the operator, who answers through the live run screen attached to the
batch's run — or cancels that run alone."""

from __future__ import annotations

import asyncio
import os

import pytest

from icae_tui.batch.grid import WAITING
from icae_tui.batch.plan import ItemState, expand
from icae_tui.batch.runner import BatchRunner
from icae_tui.batch.spec import BatchLimits, BatchSpec
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.display.handle import Capability
from icae_tui.domain.events import QuestionAnswered
from icae_tui.domain.states import AnsweredBy, ResponderMode, RunStatus
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from icae_tui.ui.screens.batch import BatchScreen
from icae_tui.ui.screens.run import RunScreen

from .helpers import Console, key_description, until

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")

BATCH_S = 180.0  # a whole batch, under load
GOOD, PARTIAL = "scripted:good", "scripted:partial"


def runner_of(store, catalog, agents, *, repeats=1, responder=ResponderMode.SIMULATED):
    spec = BatchSpec(tasks=["mini"], agents=agents, responders=[responder], repeats=repeats,
                     limits=BatchLimits(runs_at_once=2), engine="processes")  # fmt: skip
    items = expand(spec, ["mini"])
    batches = BatchStore(store)
    batches.create("batch-test", spec, items)
    return BatchRunner("batch-test", spec, items, {"mini": catalog.tasks["mini"]}, batches,
                       cores=2, engine="processes")  # fmt: skip


def console(store, catalog, runner) -> tuple[Console, list[BatchScreen]]:
    screens: list[BatchScreen] = []

    def opened(app) -> None:
        screens.append(BatchScreen(runner))
        app.push_screen(screens[0])

    app = Console(catalog=catalog, store=store, engine="processes", on_start=opened,
                  animations=False)  # fmt: skip
    return app, screens


def cell(screen: BatchScreen, agent: str) -> str:
    return str(screen.table.get_cell("mini", agent))


@pytest.fixture(autouse=True)
def processes(monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")


async def test_the_grid_follows_the_batch_and_a_cell_opens_its_run(store, fixture_catalog):
    runner = runner_of(store, fixture_catalog, [GOOD, PARTIAL], repeats=2)
    app, screens = console(store, fixture_catalog, runner)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(pilot, lambda: bool(screens) and app.screen is screens[0])
        screen = screens[0]
        assert screen.grid.agents == [GOOD, PARTIAL] and list(screen.grid.rows) == ["mini"]
        await until(pilot, lambda: screen.status is not None, timeout=BATCH_S)
        assert screen.status is BatchStatus.COMPLETED
        assert cell(screen, GOOD) == "✔ 100.0% ×2"
        assert cell(screen, PARTIAL) == "✔ 40.0% ×2"
        header = str(screen.query_one("#batch-header").render())
        assert "batch batch-test · completed" in header and "4/4 done · 0 running" in header
        assert "runs/min" in header
        assert any(title == "Batch completed" for title, _, _ in app.notified)

        await pilot.press("right", "right", "enter")  # the partial agent's cell
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        partial = screen.latest[("mini", PARTIAL, "L1", "simulated")]
        assert run_screen.handle.run_id == partial and not run_screen.handle.live
        await until(pilot, lambda: run_screen.started is not None)
        assert run_screen.started.agent == PARTIAL
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        assert cell(screen, PARTIAL) == "✔ 40.0% ×2"

async def waiting_run(pilot, app, screens) -> tuple[BatchScreen, RunScreen]:
    """The batch screen once its one run waits on the operator, and that run's screen,
    opened from its cell."""
    await until(pilot, lambda: bool(screens) and app.screen is screens[0])
    screen = screens[0]
    await until(pilot, lambda: cell(screen, GOOD) == f"▶ 0/1 {WAITING}", timeout=BATCH_S)
    await pilot.press("right", "enter")
    await until(pilot, lambda: isinstance(app.screen, RunScreen))
    return screen, app.screen


async def test_the_operator_answers_a_batch_run_through_its_attached_screen(store, fixture_catalog):
    runner = runner_of(store, fixture_catalog, [GOOD], responder=ResponderMode.HUMAN)
    app, screens = console(store, fixture_catalog, runner)
    async with app.run_test(size=(160, 45)) as pilot:
        screen, run_screen = await waiting_run(pilot, app, screens)
        handle = run_screen.handle
        assert handle.live and handle.attached and run_screen.worker is None
        assert {Capability.ANSWER, Capability.SWITCH_RESPONDER, Capability.PAUSE,
                Capability.CANCEL} <= handle.capabilities()  # fmt: skip
        await until(pilot, lambda: run_screen.awaiting == 1 and run_screen.answer_box.has_focus)
        op = run_screen.operator  # the human can take the run over: switch, pause, cancel
        assert op.can_switch and op.can_pause and op.can_cancel
        assert key_description(run_screen, "ctrl+t") == "Responder ▸ assisted"
        await pilot.press(*"stderr", "enter")
        await until(pilot, lambda: run_screen.awaiting == 2 and run_screen.answer_box.has_focus)
        await pilot.press(*"plain", "enter")
        await until(pilot, lambda: run_screen.finished is not None, timeout=BATCH_S)
        assert run_screen.finished.status == RunStatus.COMPLETED
        answered = [ev for ev in store.events(handle.run_id) if isinstance(ev, QuestionAnswered)]
        assert [(ev.responder, ev.text) for ev in answered] == [
            (AnsweredBy.HUMAN, "stderr"), (AnsweredBy.HUMAN, "plain"),
        ]  # fmt: skip
        await pilot.press("escape")  # no "cancel the run?": the batch's run is over anyway
        await until(pilot, lambda: app.screen is screen)
        await until(pilot, lambda: screen.status is not None, timeout=BATCH_S)
        assert screen.status is BatchStatus.COMPLETED
        assert cell(screen, GOOD).startswith("✔ ")


async def test_the_operator_cancels_one_batch_run_alone(store, fixture_catalog):
    runner = runner_of(store, fixture_catalog, [GOOD], responder=ResponderMode.HUMAN)
    app, screens = console(store, fixture_catalog, runner)
    async with app.run_test(size=(160, 45)) as pilot:
        screen, run_screen = await waiting_run(pilot, app, screens)
        await until(pilot, lambda: run_screen.awaiting == 1)
        run_screen.cancel_run()
        await until(pilot, lambda: run_screen.finished is not None, timeout=BATCH_S)
        assert run_screen.finished.status == RunStatus.CANCELLED
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        await until(pilot, lambda: screen.status is not None, timeout=BATCH_S)
        assert screen.status is BatchStatus.CANCELLED  # --resume redoes the cancelled run
        assert [p.state for p in runner.refresh().values()] == [ItemState.PENDING]
        assert cell(screen, GOOD) == "·"


def test_icae_batch_console_runs_it_in_the_console_and_quitting_cancels_it(
    tmp_path, monkeypatch, capsys
):
    """`--console` allows the human responder (the operator answers); ctrl+q cancels the
    batch, whose run stores itself cancelled, and `--resume` is offered."""
    from icae_tui.cli import main
    from icae_tui.ui.app import IcaeApp
    from tests.conftest import FIXTURE_TASKS

    seen: list[str] = []

    async def drive(app: IcaeApp) -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, BatchScreen))
            screen = app.screen
            await until(pilot, lambda: cell(screen, GOOD) == f"▶ 0/1 {WAITING}", timeout=BATCH_S)
            seen.append(screen.runner.batch_id)
            await pilot.press("ctrl+q")
            await until(pilot, lambda: screen.status is not None, timeout=BATCH_S)

    monkeypatch.setattr(IcaeApp, "run", lambda app: asyncio.run(drive(app)))
    argv = ["--home", str(tmp_path), "--tasks", str(FIXTURE_TASKS), "--engine", "processes",
            "batch", "--task", "mini", "--agent", GOOD, "--responder", "human", "--console"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"icae batch --resume {seen[0]} goes on" in err
    store = RunStore(tmp_path / "runs.db")
    try:
        row = BatchStore(store).batch(seen[0])
        assert row is not None and row.status is BatchStatus.CANCELLED
        assert [r.status for r in store.runs()] == ["cancelled"]
    finally:
        store.close()
