"""The console end to end on the real engine: the mini task, scripted agents, pace 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from textual.widgets import Static

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.events import (
    CaseFinished,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
)
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen
from tests.task_copies import add_solution, copy_mini, edit_toml

from .helpers import until


@pytest.mark.docker
async def test_console_runs_mini_to_full_marks(fixture_catalog, store):
    app = IcaeApp(catalog=fixture_catalog, store=store, pace_s=0)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("enter")  # task list → run setup
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        await pilot.click("#start")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.worker is not None

        await screen.worker.wait()
        await until(pilot, lambda: screen.finished is not None)
        assert screen.finished.status == "completed", screen.status_message
        table = screen.results
        planned = [ref.id for ref in fixture_catalog.tasks["mini"].cases]
        await until(pilot, lambda: table.verdicts() == ["accepted"] * len(planned))  # a flush
        assert table.planned == planned
        assert table.row_count == len(planned)
        score_line = str(screen.query_one("#score", Static).render())
        assert "overall 100.0%" in score_line
        assert f"{len(planned)}/{len(planned)} cases done" in score_line
        assert "run completed" in screen.status_message
        assert any(line.startswith("agent › ") for line in screen.trace.lines)
        assert [kind for kind, _ in screen.clarify.turns][:2] == ["question", "answer"]


# --- the operator takes over mid-run ----------------------------------------------------------

CHATTY_QUESTIONS = [
    "How should unknown operations be reported?",
    "What does count print?",
    "What error format for an unknown op?",
    "How is the word count formatted?",
]


def chatty_mini(tmp_path: Path) -> Path:
    """A copy of the mini task whose only solution asks four questions (budget 5), with a
    pause after the first and the third so the operator has time to switch."""
    folder = copy_mini(tmp_path)
    edit_toml(folder, "budget = 3", "budget = 5")
    solutions = folder / "solutions"
    good = yaml.safe_load((solutions / "good.yaml").read_text())
    for path in solutions.iterdir():
        path.unlink()
    steps = [s for s in good["steps"] if "ask" not in s]
    asks = [{"ask": q} for q in CHATTY_QUESTIONS]
    pause = {"run": "sleep 3"}
    chatty = [steps[0], asks[0], pause, asks[1], asks[2], pause, asks[3], *steps[1:]]
    add_solution(
        folder, "chatty", chatty,
        description="asks four questions, pausing after the first and the third",
    )  # fmt: skip
    return folder


@pytest.mark.docker
async def test_operator_switches_to_human_mid_run_and_back(tmp_path, store):
    """In the console, an operator switches to human mid-run, answers two questions,
    switches back; the run completes and the stored run shows who answered what."""
    catalog = load_catalog(chatty_mini(tmp_path).parent)
    app = IcaeApp(catalog=catalog, store=store, pace_s=0)
    typed = {2: "Report it as error=unknown_op.", 3: "Same as before: error=unknown_op."}

    def answered(screen: RunScreen) -> list[str]:
        return [text for kind, text in screen.clarify.turns if kind == "answer"]

    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("enter")  # task list → run setup (agent scripted:chatty, simulated)
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        await pilot.click("#start")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.worker is not None
        run_id = screen.source.run_id
        assert screen.mode == "simulated"

        await until(pilot, lambda: len(answered(screen)) == 1, timeout=300)  # Q1: simulated
        assert answered(screen)[0].startswith("A1  simulated · C001")
        await pilot.press("2")  # the agent is sleeping: switch to human
        await pilot.pause()
        assert screen.mode == "human" and "responder human" in str(
            screen.query_one("#run-header", Static).render()
        )

        for qid in (2, 3):
            await until(pilot, lambda q=qid: screen.awaiting == q, timeout=60)
            assert screen.answer_box.has_focus and screen.answer_box.text == ""
            await pilot.press(*typed[qid])
            await pilot.press("enter")
            await until(pilot, lambda q=qid: len(answered(screen)) == q, timeout=30)

        assert not screen.answer_box.display and not screen.answer_box.has_focus
        await pilot.press("1")  # the agent is sleeping again: back to simulated
        await pilot.pause()
        assert screen.mode == "simulated"

        assert screen.worker is not None
        await screen.worker.wait()
        await until(pilot, lambda: screen.finished is not None)
        assert screen.finished.status == "completed", screen.status_message
        planned = [ref.id for ref in catalog.tasks["mini"].cases]
        await until(pilot, lambda: screen.results.verdicts() == ["accepted"] * len(planned))
        assert screen.results.planned == planned
        assert screen.clarify.border_title.startswith("Clarifications · 4/5 turns · coverage 100%")

    events = store.events(run_id)
    asked = {e.question_id: e for e in events if isinstance(e, QuestionAsked)}
    answers = {e.question_id: e for e in events if isinstance(e, QuestionAnswered)}
    assert sorted(answers) == [1, 2, 3, 4]
    assert {q: a.responder for q, a in answers.items()} == {
        1: "simulated",
        2: "human",
        3: "human",
        4: "simulated",
    }
    assert {q: answers[q].text for q in (2, 3)} == typed
    assert answers[2].record_ids == answers[3].record_ids == []
    assert answers[1].record_ids == ["C001"] and answers[4].record_ids == ["C002"]
    assert {q: a.mode for q, a in asked.items()} == {
        1: "simulated",
        2: "human",
        3: "human",
        4: "simulated",
    }
    assert [e.mode for e in events if isinstance(e, ResponderChanged)] == ["human", "simulated"]
    assert sum(isinstance(e, CaseFinished) for e in events) == len(planned)
    [row] = [r for r in store.runs() if r.run_id == run_id]
    assert row.status == "completed" and row.responder == "simulated"
    report = json.loads((store.artifacts_dir / run_id / "report.json").read_text())
    assert report["interaction"]["by_responder"] == {"simulated": 2, "human": 2}
    assert [t["responder"] for t in report["turns"]] == ["simulated", "human", "human", "simulated"]


@pytest.mark.docker
@pytest.mark.parametrize("after_cases", [0, 3, 20])
async def test_console_cancel_leaves_no_container(bundled_catalog, store, after_cases):
    """`c`, confirm, while semver's cases run 8 at a time: the console says when it is done
    and nothing of the run is left on the engine."""
    from icae_tui.sandbox.docker.engine import connect

    app = IcaeApp(catalog=bundled_catalog, store=store, pace_s=0)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("enter")  # semver is first in the list
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        await pilot.click("#start")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.worker is not None
        run_id = screen.source.run_id

        def reached() -> bool:
            events = store.events(run_id)
            if after_cases == 0:
                return any(isinstance(e, PhaseChanged) and e.phase == "evaluate" for e in events)
            return sum(isinstance(e, CaseFinished) for e in events) >= after_cases

        await until(pilot, reached, timeout=300)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#yes")
        await until(pilot, lambda: screen.worker is not None and screen.worker.is_finished, 120)
        await until(pilot, lambda: "run cancelled" in screen.status_message, 30)

    docker = await connect()
    try:
        left = await docker.containers.list(
            all=True, filters=json.dumps({"label": [f"icae.run={run_id}"]})
        )
    finally:
        await docker.close()
    assert left == []
    [row] = [r for r in store.runs() if r.run_id == run_id]
    assert row.status == "cancelled"
