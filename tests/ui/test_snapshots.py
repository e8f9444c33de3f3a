"""Screenshots of the console, each screen at 80×24 and 200×60 (the `size` fixture), compared with the
accepted ones in __snapshots__/.

Stable by construction: fixed terminal sizes, animations off, the task's folder shown as a
fixed path, history's dates from fixed timestamps in UTC, and the finished run replayed from
a fixed event list (its clock comes from the events' timestamps), moved to its end at once
(End) rather than played at its pace. The live run is a fake one (no Docker) whose events
carry fixed timestamps and whose clock is fixed; the agents file of the chooser is read from
a relative path, so no temporary folder shows.
The fixtures that keep them so (`catalog`, `history`, `model_history`, `utc`, `size`) are in
tests/ui/conftest.py, shared by every snapshot module.
After an intended change of the console: `pytest tests/ui/test_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Select

from icae_tui.display.sources import LiveSource
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    PhaseChanged,
)
from icae_tui.runs.run import RunOutcome
from icae_tui.ui.screens.case_detail import EditCaseScreen
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.model_calls import ModelCallsScreen
from icae_tui.ui.screens.prompt import PromptScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.run_setup import RunSetupScreen

from .helpers import (
    Q_UNKNOWN,
    RECORDED_T0,
    FakeRun,
    finish,
    press_settled,
    replayed_to_end,
    started,
    still_console,
    until,
)

# --- the task list, run setup, history ------------------------------------------------------


def test_task_list(snap_compare, catalog, store, size):
    assert snap_compare(still_console(catalog, store), terminal_size=size)


def test_run_setup(snap_compare, catalog, store, size):
    assert snap_compare(still_console(catalog, store), press=["enter"], terminal_size=size)


AGENTS = """\
[agents.local]
kind = "model"
model = "qwen2.5-coder:7b"
base_url = "http://127.0.0.1:9/v1"
limits = { max_steps = 40, max_model_calls = 100 }

[agents.keyed]
kind = "model"
model = "gpt-4.1"
base_url = "https://api.example.com/v1"
api_key_env = "ICAE_TEST_SNAPSHOT_KEY"

[agents.broken]
kind = "model"
model = 7
"""


def test_agent_chooser(snap_compare, catalog, store, size, tmp_path, monkeypatch):
    """Run setup with an agents file (a ready agent, one missing its key, a broken entry),
    the agent chooser open: the scripted agents, then the configured ones with their state."""
    monkeypatch.delenv("ICAE_TEST_SNAPSHOT_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    Path("agents.toml").write_text(AGENTS)

    async def chooser_open(pilot) -> None:
        app = pilot.app
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunSetupScreen))
        await pilot.press("enter")  # the agent chooser has the focus: open it
        await until(pilot, lambda: app.screen.query_one("#agent", Select).expanded)

    app = still_console(catalog, store, agent_files=[Path("agents.toml")])
    assert snap_compare(app, run_before=chooser_open, terminal_size=size)


def test_history(snap_compare, catalog, history, utc, size):
    assert snap_compare(still_console(catalog, history), press=["h"], terminal_size=size)


# --- a stored run replayed: the run screen, a case, the model calls, the trace's prompt -------


def test_finished_run_replayed(snap_compare, catalog, history, utc, size):
    """End: the replay's final state at once (the replay bar says so)."""
    app = still_console(catalog, history)
    assert snap_compare(app, run_before=replayed_to_end, terminal_size=size)


def test_trace_search_prompt(snap_compare, catalog, history, utc, size):
    """The trace's search (/) over the finished run: the one-line prompt at the bottom, the
    text typed, the run still in view above it."""

    async def searching(pilot) -> None:
        app = pilot.app
        await replayed_to_end(pilot)
        await press_settled(pilot, "t", "slash")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"error")

    app = still_console(catalog, history)
    assert snap_compare(app, run_before=searching, terminal_size=size)


def test_case_detail(snap_compare, catalog, history, utc, size):
    async def detail(pilot) -> None:
        await replayed_to_end(pilot)
        await press_settled(pilot, "r", "down", "enter")  # the results, the second case

    app = still_console(catalog, history)
    assert snap_compare(app, run_before=detail, terminal_size=size)


def test_edit_case(snap_compare, catalog, store, size):
    """The form to re-run a case edited: the mini task's first case, its command and its
    input as JSON."""

    async def editing(pilot) -> None:
        task = catalog.tasks["mini"]
        ref = task.cases[0]
        screen = EditCaseScreen(ref, task.spec.interface.kind, "mini")
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: pilot.app.screen is screen and screen.is_mounted)

    assert snap_compare(still_console(catalog, store), run_before=editing, terminal_size=size)


def test_model_run_replayed(snap_compare, catalog, model_history, utc, size):
    """The header's second line: steps, time, calls, tokens (≥80 %) and cost (reached)."""
    app = still_console(catalog, model_history)
    assert snap_compare(app, run_before=replayed_to_end, terminal_size=size)


def test_model_calls(snap_compare, catalog, model_history, utc, size):
    """The calls of the model run, the second expanded: new messages, reply, body."""

    async def expanded(pilot) -> None:
        await replayed_to_end(pilot)
        await press_settled(pilot, "l", "down", "enter")
        app = pilot.app
        await until(pilot, lambda: isinstance(app.screen, ModelCallsScreen)
                    and "reply (finish: stop)" in app.screen.detail_text)  # fmt: skip

    assert snap_compare(
        still_console(catalog, model_history), run_before=expanded, terminal_size=size
    )


# --- a live run (a fake one: no Docker) waiting for the operator's answer ---------------------

LIVE_T0 = RECORDED_T0
LIVE_NOW = LIVE_T0 + 65.0  # the live run's clock: 1:05 in


def human_waits(task) -> FakeRun:
    """A run in human mode: the agent speaks, runs a command, then asks Q1 and waits (the
    question stays open until the test ends)."""

    async def script(run: FakeRun) -> RunOutcome:
        for i, ev in enumerate(
            [
                started("human"),
                PhaseChanged(phase="prepare", detail="images"),
                PhaseChanged(phase="generate", detail="scripted:good"),
                AgentSaid(text="Let me look first."),
                AgentCommand(command="ls"),
                AgentOutput(stream="stdout", text="README.md\n"),
                AgentCommandDone(command="ls", exit_code=0, duration_s=0.05),
            ]
        ):
            ev.ts = LIVE_T0 + 5.0 * i
            run.emit(ev)
        await run.channel.ask(Q_UNKNOWN)
        return finish(run)

    return FakeRun(task, "human", script)


async def waiting_for_the_answer(pilot, fake: FakeRun) -> RunScreen:
    screen = RunScreen(LiveSource(fake, clock=lambda: LIVE_NOW))
    await pilot.app.push_screen(screen)
    await until(pilot, lambda: screen.awaiting == 1 and screen.answer_box.has_focus)
    return screen


def test_live_run_waits_for_the_answer(snap_compare, catalog, store, size):
    """Human mode, Q1 asked: the answer box on the right has the focus, the status line
    says the run waits for the operator."""
    fake = human_waits(catalog.tasks["mini"])

    async def waiting(pilot) -> None:
        await waiting_for_the_answer(pilot, fake)

    assert snap_compare(still_console(catalog, store), run_before=waiting, terminal_size=size)


def test_confirm_leaving_a_live_run(snap_compare, catalog, store, size):
    """Escape while the run waits (the first leaves the answer box, the second the run): the
    dialog asking whether to cancel it and go back, with its keys."""
    fake = human_waits(catalog.tasks["mini"])

    async def confirming(pilot) -> None:
        await waiting_for_the_answer(pilot, fake)
        await pilot.press("escape")
        await until(pilot, lambda: pilot.app.screen.trace.has_focus)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))

    assert snap_compare(still_console(catalog, store), run_before=confirming, terminal_size=size)
