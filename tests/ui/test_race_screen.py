"""The race screen (`icae race`): two scripted agents on a copy of the fixture task `mini`,
on the `processes` engine, as one stored batch; both lanes fill in (trace, clarifications,
results, score) and the banner names the first to finish and both scores; with the human
answering, an answer typed in one lane reaches that lane's run only. `icae race` runs it in
the console and prints the outcome. The standing's wording (a failed lane) without a run.
No test waits on a clock: each waits on what the screen or the store shows."""

from __future__ import annotations

import argparse
import asyncio
import os

import pytest
import yaml

from icae_tui.batch.plan import expand
from icae_tui.batch.race_standing import Lane, LaneState, Standing, lane_names
from icae_tui.batch.runner import BatchRunner
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.catalog.loader import load_catalog
from icae_tui.cli.race import race_spec
from icae_tui.domain.events import QuestionAnswered, QuestionAsked, ResponderChanged, RunFinished
from icae_tui.domain.results import Score
from icae_tui.domain.states import AnsweredBy, FailureKind, RunStatus
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from icae_tui.ui.screens.race import RaceScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.race_lane import RaceLane
from tests.task_copies import add_solution, copy_mini

from .helpers import Console, until

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")
RACE_S = 180.0  # a whole race, under load
GOOD, ASKING = "scripted:good", "scripted:asking"


@pytest.fixture(autouse=True)
def processes(monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")


@pytest.fixture
def race_tasks(tmp_path):
    """A copy of `mini` with `asking`: the partial solution (40 %) after one question."""
    folder = copy_mini(tmp_path)
    partial = yaml.safe_load((folder / "solutions" / "partial.yaml").read_text())
    add_solution(folder, "asking", [{"ask": "Where does a note go?"}, *partial["steps"]],
                 pace_s=0)  # fmt: skip
    return folder.parent


def race_args(tasks, responder="simulated", agents=(GOOD, ASKING)) -> argparse.Namespace:
    return argparse.Namespace(task="mini", racers=list(agents), level="L1", responder=responder,
                              engine="processes", tasks=str(tasks))  # fmt: skip


def runner_of(store, tasks, responder="simulated") -> BatchRunner:
    catalog = load_catalog(tasks)
    spec = race_spec(race_args(tasks, responder), tasks)
    items = expand(spec, ["mini"])
    batches = BatchStore(store)
    batches.create("race-test", spec, items)
    return BatchRunner("race-test", spec, items, {"mini": catalog.tasks["mini"]}, batches,
                       cores=2, engine="processes")  # fmt: skip


def console(store, tasks, runner) -> tuple[Console, list[RaceScreen]]:
    screens: list[RaceScreen] = []

    def opened(app) -> None:
        screens.append(RaceScreen(runner))
        app.push_screen(screens[0])

    app = Console(catalog=load_catalog(tasks), store=store, engine="processes",
                  on_start=opened, animations=False)  # fmt: skip
    return app, screens


async def race_screen(pilot, app, screens) -> RaceScreen:
    await until(pilot, lambda: bool(screens) and app.screen is screens[0])
    return screens[0]


def lanes(screen: RaceScreen) -> dict[str, RaceLane]:
    return {lane.racer: lane for lane in screen.lanes.values()}


@needs_root
async def test_both_lanes_fill_in_and_the_banner_names_the_first_and_both_scores(store, race_tasks):
    runner = runner_of(store, race_tasks)
    app, screens = console(store, race_tasks, runner)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await race_screen(pilot, app, screens)
        assert list(lanes(screen)) == [GOOD, ASKING]
        await until(pilot, lambda: screen.status is not None, timeout=RACE_S)
        assert screen.status is BatchStatus.COMPLETED
        await until(pilot, lambda: all(
            lane.results.verdicts() and "…" not in lane.results.verdicts()
            for lane in screen.lanes.values()
        ))  # fmt: skip
        for lane in screen.lanes.values():
            assert lane.view.finished is not None
            assert lane.view.finished.status == RunStatus.COMPLETED
            assert any(line.startswith("$ ") or "mini.py" in line for line in lane.trace.lines)
            assert len(lane.results.verdicts()) == len(lane.view.cases) > 0
            assert [kind for kind, _ in lane.clarify.turns][:2] == ["question", "answer"]
            assert "completed" in lane.header_text().plain
        good, asking = lanes(screen)[GOOD], lanes(screen)[ASKING]
        assert "overall 100.0%" in str(good.query_one("#score").render())
        assert "overall 40.0%" in str(asking.query_one("#score").render())

        # the first to finish: the run whose end the store has first
        ends = {name: lane.view.finished.ts for name, lane in lanes(screen).items()}
        first = min(ends, key=lambda name: ends[name])
        banner = str(screen.query_one("#race-banner").render())
        assert banner.startswith(f"🏁 {first} finished first — ")
        assert f"{GOOD} overall 100.0% in " in banner and f"{ASKING} overall 40.0% in " in banner
        assert ("best overall: " in banner) is (first == ASKING)
        assert any(title == "Race completed" for title, _, _ in app.notified)

        # o opens the focused lane's run, attached (its end is in): Escape comes back
        asking.trace.focus()
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        assert run_screen.handle.attached and run_screen.handle.run_id == asking.run.run_id
        await until(pilot, lambda: run_screen.finished is not None)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)


def answers(store, run_id: str) -> list[tuple[AnsweredBy, str]]:
    return [(ev.responder, ev.text) for ev in store.events(run_id)
            if isinstance(ev, QuestionAnswered)]  # fmt: skip


def asked(store, run_id: str) -> int:
    return sum(isinstance(ev, QuestionAsked) for ev in store.events(run_id))


async def both_waiting(pilot, app, screens) -> tuple[RaceScreen, RaceLane, RaceLane]:
    """The race screen (the human answering) once both lanes wait for their first answer,
    and its two lanes."""
    screen = await race_screen(pilot, app, screens)
    good, asking = lanes(screen)[GOOD], lanes(screen)[ASKING]
    await until(pilot, lambda: good.waiting == 1 and asking.waiting == 1, timeout=RACE_S)
    return screen, good, asking


@needs_root
async def test_an_answer_typed_in_one_lane_reaches_that_run_only(store, race_tasks):
    app, screens = console(store, race_tasks, runner_of(store, race_tasks, responder="human"))
    async with app.run_test(size=(200, 50)) as pilot:
        screen, good, asking = await both_waiting(pilot, app, screens)
        assert "? waiting for you" in good.header_text().plain
        good_id, asking_id = good.run.run_id, asking.run.run_id

        asking.trace.focus()
        await pilot.press("w")  # the focused lane's box first
        await until(pilot, lambda: asking.answer_box.has_focus)
        await pilot.press(*"plain", "enter")
        await until(pilot, lambda: bool(answers(store, asking_id)))
        assert answers(store, asking_id) == [(AnsweredBy.HUMAN, "plain")]
        assert answers(store, good_id) == [] and good.waiting == 1  # still waiting
        assert asked(store, asking_id) == 1

        await pilot.press("w")  # now the other lane's box: its question still waits
        await until(pilot, lambda: good.answer_box.has_focus)
        await pilot.press(*"stderr", "enter")
        await until(pilot, lambda: good.waiting == 2 and good.answer_box.has_focus)
        await pilot.press(*"words", "enter")
        await until(pilot, lambda: screen.status is not None, timeout=RACE_S)
        assert screen.status is BatchStatus.COMPLETED
        assert answers(store, good_id) == [
            (AnsweredBy.HUMAN, "stderr"),
            (AnsweredBy.HUMAN, "words"),
        ]
        assert answers(store, asking_id) == [(AnsweredBy.HUMAN, "plain")]
        await until(
            pilot, lambda: [k for k, _ in asking.clarify.turns][:2] == ["question", "answer"]
        )
        assert "plain" in asking.clarify.turns[1][1]
        assert not any("plain" in text for _, text in good.clarify.turns)


def switches(store, run_id: str) -> list[str]:
    return [str(ev.mode) for ev in store.events(run_id) if isinstance(ev, ResponderChanged)]


@needs_root
async def test_switching_one_lanes_responder_switches_that_run_only(store, race_tasks):
    app, screens = console(store, race_tasks, runner_of(store, race_tasks, responder="human"))
    async with app.run_test(size=(200, 50)) as pilot:
        screen, good, asking = await both_waiting(pilot, app, screens)
        good.answer_box.focus()
        await pilot.press("ctrl+t")  # human → assisted: the simulated draft in the box
        await until(pilot, lambda: good.answer_box.assisted and good.answer_box.text != "")
        await pilot.press("ctrl+t")  # → simulated: it answers good's questions from now on
        await until(pilot, lambda: good.view.finished is not None, timeout=RACE_S)
        assert good.view.finished.status == RunStatus.COMPLETED
        assert switches(store, good.run.run_id) == ["assisted", "simulated"]
        assert switches(store, asking.run.run_id) == [] and asking.waiting == 1
        assert "responder human" in asking.header_text().plain
        asking.answer_box.focus()
        await pilot.press(*"plain", "enter")
        await until(pilot, lambda: screen.status is not None, timeout=RACE_S)
        assert screen.status is BatchStatus.COMPLETED
        assert answers(store, asking.run.run_id) == [(AnsweredBy.HUMAN, "plain")]


@needs_root
async def test_a_lane_whose_run_is_cancelled_never_wins_and_the_banner_says_so(store, race_tasks):
    app, screens = console(store, race_tasks, runner_of(store, race_tasks, responder="human"))
    async with app.run_test(size=(200, 50)) as pilot:
        screen, good, asking = await both_waiting(pilot, app, screens)
        assert good.cancel()  # that run alone (what its run screen's cancel does)
        await until(pilot, lambda: good.view.finished is not None, timeout=RACE_S)
        assert good.view.finished.status == RunStatus.CANCELLED
        assert good.answer_box.display is False and "cancelled" in good.header_text().plain
        asking.answer_box.focus()
        await pilot.press(*"plain", "enter")
        await until(pilot, lambda: screen.status is not None, timeout=RACE_S)
        assert screen.status is BatchStatus.CANCELLED  # --resume would redo the cancelled one
        banner = str(screen.query_one("#race-banner").render())
        assert banner.startswith(f"🏁 {ASKING} finished first — {GOOD} cancelled after ")
        assert f"{ASKING} overall 40.0% in " in banner


@needs_root
def test_icae_race_runs_it_in_the_console_and_prints_who_finished_first(
    tmp_path, race_tasks, monkeypatch, capsys
):
    from icae_tui.cli import main
    from icae_tui.ui.app import IcaeApp

    async def drive(app: IcaeApp) -> None:
        async with app.run_test(size=(200, 50)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RaceScreen))
            screen = app.screen
            await until(pilot, lambda: screen.status is not None, timeout=RACE_S)

    monkeypatch.setattr(IcaeApp, "run", lambda app: asyncio.run(drive(app)))
    argv = ["--home", str(tmp_path / "home"), "--tasks", str(race_tasks),
            "race", "mini", GOOD, ASKING, "--engine", "processes"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "━━ batch batch-" in out and "completed: 2 run(s)" in out
    assert "━━ race: 🏁 " in out and " finished first — " in out
    lines = [line for line in out.splitlines() if line.startswith("   1st ")]
    assert len(lines) == 1 and "completed" in lines[0]
    assert any(GOOD in line and "overall 100.0%" in line for line in out.splitlines())
    assert any(ASKING in line and "overall 40.0%" in line for line in out.splitlines())


def test_icae_race_refuses_an_unknown_agent_before_storing_anything(tmp_path, race_tasks, capsys):
    from icae_tui.cli import main

    argv = ["--home", str(tmp_path / "home"), "--tasks", str(race_tasks), "--engine",
            "processes", "race", "mini", GOOD, "scripted:nope"]  # fmt: skip
    assert main(argv) == 2
    assert "scripted:nope" in capsys.readouterr().err
    store = RunStore(tmp_path / "home" / "runs.db")
    try:
        assert BatchStore(store).batches() == [] and store.runs() == []
    finally:
        store.close()


# --- the standing, without a run -------------------------------------------------------------


def score(overall: float) -> Score:
    return Score(done=4, planned=4, overall=overall)  # no splits: taken as given


def lane(name: str, start: float, end: float | None, status=RunStatus.COMPLETED, **fin) -> Lane:
    finished = RunFinished(status=status, **fin) if end is not None else None
    if finished is not None:
        finished.ts = end
    return Lane(name, start, finished)


def test_the_banner_while_racing_then_once_one_failed():
    racing = Standing((lane("a", 100.0, None), lane("b", 101.0, None)))
    assert racing.banner(now=112.5) == "racing: a vs b · 12.5 s"
    failed = Standing((
        lane("a", 100.0, 105.0, RunStatus.FAILED, error="the agent crashed",
             failure=FailureKind.AGENT),
        lane("b", 101.0, None),
    ))  # fmt: skip
    assert failed.first is None and not failed.over
    assert failed.banner(now=110.0) == (
        "no lane has completed yet — a failed after 5.0 s (agent: the agent crashed) · "
        "b still running"
    )
    over = Standing((failed.lanes[0], lane("b", 101.0, 120.0, score=score(0.5))))
    assert over.first is over.lanes[1] and over.lanes[0].state is LaneState.FAILED
    assert over.banner(now=0.0) == (
        "🏁 b finished first — a failed after 5.0 s (agent: the agent crashed) · "
        "b overall 50.0% in 20.0 s"
    )
    assert [line.split()[0] for line in over.lines()[1:]] == ["a", "1st"]


def test_an_agent_racing_itself_has_numbered_lanes(tmp_path):
    assert lane_names(["x", "x"]) == ["x #1", "x #2"]
    assert lane_names(["x", "y"]) == ["x", "y"]
    spec = race_spec(race_args(tmp_path, agents=(GOOD, GOOD)), tmp_path)
    assert spec.agents == [GOOD] and spec.repeats == 2 and spec.limits.runs_at_once == 2
    assert [item.repeat for item in expand(spec, ["mini"])] == [1, 2]
    assert Standing((Lane("a", None, None),)).lines() == ["━━ race: neither run started"]
