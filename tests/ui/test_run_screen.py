"""The run screen fed with synthetic events or a fake run: no Docker, no Run. Its header,
trace, clarifications, results and status; cancelling (what it says and when it is done), an
unknown score shown as a dash, a failed run's error shown whole, the status line forgetting
an answered question."""

from __future__ import annotations

import asyncio

from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from icae_tui.catalog.loader import Catalog
from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.events import (
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    RunFinished,
    ScoreUpdated,
)
from icae_tui.domain.results import Verdict
from icae_tui.evaluation.scoring import score as score_of
from icae_tui.runs.run import RunOutcome
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.dialogs import CaseDetailScreen, ConfirmScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.screens.task_list import TaskListScreen
from icae_tui.ui.widgets.footer import MORE, Footer, FooterKey
from icae_tui.ui.widgets.trace import LINE_LIMIT, WRAP_INDENT
from tests.polling import eventually

from .helpers import (
    CASE_IDS,
    HOSTILE_LINE,
    PATTERNS,
    Q_UNKNOWN,
    SPLITS,
    FakeRun,
    finish,
    open_screen,
    recorded_run,
    result,
    score,
    started,
    stream,
    text_of,
    until,
)


async def test_hostile_output_is_shown_literally(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        for ev in stream():
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()

        lines = list(screen.trace.lines)
        joined = "\n".join(lines)
        # ANSI escapes, NUL, BEL and CR are visible escapes, never interpreted
        assert (
            "  out│ \\x1b[31mred\\x1b[0m and [bold]markup[/] and [link=http://x]link[/link]"
            in lines
        )
        assert "  out│ nul\\x00byte and bell\\x07 and cr\\x0dover" in lines
        assert "  err│ warn: \\x1b[2Jcleared?" in lines
        assert "\x1b" not in joined and "\x00" not in joined and "\r" not in joined
        # the 100k-character line is cut with a visible marker, not dropped or wrapped
        huge = [line for line in lines if line.startswith("  out│ AAAA")]
        assert len(huge) == 1
        assert huge[0] == (
            "  out│ " + HOSTILE_LINE[:LINE_LIMIT] + f"… [+{len(HOSTILE_LINE) - LINE_LIMIT} chars]"
        )
        # the unfinished line was flushed when the command ended
        assert "  out│ partial line without newline" in lines
        assert "agent › Let me [bold]ask[/] first." in lines
        assert "$ cat [bold]x[/]" in lines
        # markup in task titles stays literal in the header
        assert "Mini [bold]tool[/]" in text_of(screen, "#run-header")
        assert "evaluate" in text_of(screen, "#run-header")


async def test_clarifications_show_who_answered_and_from_what(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        for ev in stream():
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        turns = screen.clarify.turns
        assert [kind for kind, _ in turns] == ["question", "answer"] * 3
        assert "How are [red]errors[/] reported?" in turns[0][1]
        assert "simulated · C001" in turns[1][1]
        assert "Print error=x." in turns[1][1]
        assert "fallback" in turns[3][1]
        assert "budget" in turns[5][1]
        assert screen.clarify.border_title == "Clarifications · 3/3 asked · responder simulated"


async def test_results_fill_in_planned_order_and_update_in_place(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        for ev in stream():
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        table = screen.results
        assert table.row_count == len(CASE_IDS)
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == CASE_IDS
        assert table.verdicts() == ["…"] * len(CASE_IDS)

        # finish out of order, as concurrent evaluation does; rows keep their places
        finished = [
            result("hidden/ops#1", Verdict.WRONG_ANSWER, "stdout differs [bold]x[/]", 1),
            result("public/upper#0"),
            result("enhanced/edge#0", Verdict.TIME_LIMIT, "delivery timed out", None),
        ]
        for i, r in enumerate(finished, 1):
            screen.handle_event(CaseFinished(result=r))
            screen.handle_event(ScoreUpdated(score=score(i, 4, 0.5)))
        assert table.verdicts() == ["…"] * len(CASE_IDS)  # batched: nothing drawn yet
        screen.flush()
        await pilot.pause()
        assert table.row_count == len(CASE_IDS)
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == CASE_IDS
        assert table.verdicts() == ["accepted", "…", "wrong_answer", "time_limit"]
        row = [str(c) for c in table.get_row("hidden/ops#1")]
        assert row == ["hidden/ops#1", "ops", "wrong_answer", "stdout differs [bold]x[/]", "0", "1"]
        assert "3/4" in text_of(screen, "#score")
        assert "50.0%" in text_of(screen, "#score")

        # the timer flushes too (every ~80 ms)
        screen.handle_event(CaseFinished(result=result("hidden/ops#0")))
        screen.handle_event(ScoreUpdated(score=score(4, 4, 0.75)))
        all_done = ["accepted", "accepted", "wrong_answer", "time_limit"]
        await until(pilot, lambda: table.verdicts() == all_done)
        assert "4/4" in text_of(screen, "#score")

        screen.handle_event(
            RunFinished(status="completed", score=score(4, 4, 0.75), report_path="/tmp/r.json")
        )
        await pilot.pause()
        assert "run completed" in text_of(screen, "#status")
        assert "/tmp/r.json" in text_of(screen, "#status")
        assert "completed" in text_of(screen, "#run-header")

        # Enter on a finished row shows both sides
        table.focus()
        table.move_cursor(row=2)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CaseDetailScreen))
        assert app.screen.result.case_id == "hidden/ops#1"
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)


async def test_many_output_chunks_are_batched(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        screen.handle_event(started())
        from icae_tui.domain.events import AgentOutput

        for i in range(20_000):
            screen.handle_event(AgentOutput(stream="stdout", text=f"line {i}\n"))
        assert screen.trace.pending >= 20_000
        screen.flush()
        await pilot.pause()
        assert screen.trace.pending == 0
        assert screen.trace.lines[-1] == "  out│ line 19999"


async def test_failed_run_shows_the_error(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen())
        screen.handle_event(started())
        screen.handle_event(
            RunFinished(status="failed", error="Docker engine lost mid-run: [b]boom[/b]\x1b[0m")
        )
        await pilot.pause()
        status = text_of(screen, "#status")
        assert "run failed" in status
        assert "Docker engine lost mid-run: [b]boom[/b]\\x1b[0m" in status


# --- a fake Run: the worker, the human responder, crashes -----------------------------------


async def test_human_answers_through_the_input(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started("human"))
        await run.channel.ask(Q_UNKNOWN)
        return finish(run)

    fake = FakeRun(task, "human", script)
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(fake)))
        await until(pilot, lambda: screen.awaiting == 1)
        box = screen.answer_box
        assert box.display and box.has_focus
        assert box.text == ""  # human mode: no draft offered
        assert "draft" not in [kind for kind, _ in screen.clarify.turns]
        await pilot.press(*"JSON [please]")
        await pilot.press("enter")
        await screen.worker.wait()
        await until(pilot, lambda: "run completed" in text_of(screen, "#status"))
        assert not box.display
        assert fake.sent == [(1, "JSON [please]")]
        answers = [text for kind, text in screen.clarify.turns if kind == "answer"]
        assert answers[-1].startswith("A1  human · typed · ")
        assert "JSON [please]" in answers[-1]
        await until(pilot, lambda: screen.results.verdicts() == ["accepted"])  # the next flush


async def test_a_crashing_run_shows_a_message_not_a_traceback(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        raise RuntimeError("store is [bold]gone[/]")

    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(task, script=script))))
        await until(pilot, lambda: "run crashed" in text_of(screen, "#status"))
        assert app.is_running and app.screen is screen
        assert "RuntimeError: store is [bold]gone[/]" in text_of(screen, "#status")
        assert "crashed" in text_of(screen, "#run-header")
        await pilot.press("escape")  # not running any more: back without asking
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))


async def test_escape_while_running_asks_then_cancels_and_goes_back(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    cancelled = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            run.emit(RunFinished(status="cancelled", error="cancelled by the operator"))
            cancelled.set()
            raise
        raise AssertionError("not cancelled")

    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(task, script=script))))
        assert screen.running
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # keep running
        await until(pilot, lambda: app.screen is screen)
        assert screen.running
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, TaskListScreen))  # once cancelled
        assert cancelled.is_set()


async def test_replay_of_stored_events(app):
    events = [*stream(), CaseFinished(result=result("public/upper#0"))]
    events.append(RunFinished(status="completed", score=score(1, 4, 0.25)))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(events)))
        # the run is over: the cases it did not judge are not run, not pending
        assert screen.results.verdicts() == ["accepted", "not run", "not run", "not run"]
        assert "run completed" in text_of(screen, "#status")
        assert not screen.running


async def test_quit_while_running_cancels_the_run_cleanly(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    cleaned = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.set()
        raise AssertionError("not cancelled")

    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(task, script=script))))
        assert app.running_runs()
        await pilot.press("ctrl+q")
        await eventually(lambda: app.return_code is not None, what="the app to quit", timeout=30)
    assert cleaned.is_set()
    assert app.return_code == 0
    assert screen.worker is not None and screen.worker.state.name == "CANCELLED"


# --- cancelling, the score line, errors, the status line -------------------------------------


async def test_cancel_says_what_it_does_and_when_it_is_done(mini, app):
    stopped = asyncio.Event()  # the agent has stopped
    removing = asyncio.Event()  # the run is removing its containers
    removed = asyncio.Event()  # ... and is done

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        run.emit(PhaseChanged(phase="generate", detail="scripted:good"))
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await stopped.wait()
            run.emit(RunFinished(status="cancelled", error="cancelled by the operator"))
            removing.set()
            await removed.wait()
            run.leftovers_removed = ["c1", "c2"]
            raise
        raise AssertionError("not cancelled")

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(LiveSource(FakeRun(mini, script=script))))
        await until(pilot, lambda: screen.view.phase == "generate")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.screen is screen and screen.cancelling)
        assert screen.status_message == "cancelling: stopping the agent, removing containers…"
        assert "phase cancelling…" in text_of(screen, "#run-header")

        stopped.set()
        await until(pilot, lambda: removing.is_set() and screen.finished is not None)
        assert screen.status_message == "cancelling: run stopped, removing containers…"

        removed.set()
        await until(pilot, lambda: not screen.running and not screen.cancelling)
        assert screen.status_message.startswith(
            "run cancelled: containers removed (2 left over, removed by the final sweep)"
        ), screen.status_message


async def test_the_score_line_shows_a_dash_until_a_scored_case_is_done(store):
    public = result("public/upper#0")
    hidden = result("hidden/ops#0", Verdict.WRONG_ANSWER, "stdout differs", 0, "no\n")
    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource([])))
        for ev in (
            started(),
            CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
            CaseFinished(result=public),
            ScoreUpdated(score=score_of([public], planned=4)),
        ):
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        line = text_of(screen, "#score")
        assert line.startswith("overall —  macro —"), line
        assert "0.0%" not in line

        screen.handle_event(RunFinished(status="cancelled", error="cancelled by the operator"))
        screen.flush()
        await pilot.pause()
        assert text_of(screen, "#score").startswith("overall —  macro —")

    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:  # a hidden case done: a real zero
        screen = await open_screen(app, pilot, RunScreen(ReplaySource([])))
        for ev in (
            started(),
            CasesPlanned(case_ids=CASE_IDS, patterns=PATTERNS, splits=SPLITS),
            CaseFinished(result=hidden),
            ScoreUpdated(score=score_of([hidden], planned=4)),
        ):
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        assert text_of(screen, "#score").startswith("overall 0.0%  macro 0.0%")


async def test_the_no_docker_error_is_shown_whole(mini, app):
    error = (
        "Docker engine at unix:///var/run/docker.sock is not answering (ClientConnectorError: "
        "Cannot connect to unix socket /var/run/docker.sock ssl:default [No such file or "
        "directory]). Start it with `scripts/engine.sh` (or `dockerd &`)."
    )

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started())
        run.emit(RunFinished(status="failed", error=error))
        return RunOutcome(run.run_id, "failed", None, error)

    told: list[tuple[str, dict]] = []
    async with app.run_test(size=(60, 20)) as pilot:
        screen = RunScreen(LiveSource(FakeRun(mini, script=script)))
        screen.notify = lambda message, **kw: told.append((message, kw))  # type: ignore[method-assign]
        await open_screen(app, pilot, screen)
        await until(pilot, lambda: not screen.running and screen.finished is not None)
        screen.flush()
        await pilot.pause()
        status = screen.query_one("#status", Static)
        assert status.size.height > 1  # wrapped, not cut at one line
        assert str(status.render()).startswith("run failed — Docker engine at")
        assert any(error in message and kw.get("severity") == "error" for message, kw in told)
        rows = "".join(row.removeprefix(WRAP_INDENT) for row in screen.trace.rows)
        assert error in rows


async def test_the_status_line_forgets_a_question_once_it_is_answered(mini, app):
    release = asyncio.Event()

    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started("human"))
        await run.channel.ask(Q_UNKNOWN)
        await release.wait()
        return finish(run)

    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_screen(
            app, pilot, RunScreen(LiveSource(FakeRun(mini, "human", script)))
        )
        await until(pilot, lambda: screen.awaiting == 1)
        assert "Q1" in screen.status_message
        screen.trace.focus()
        await pilot.press("1")  # simulated: it answers Q1 at once
        await until(pilot, lambda: screen.awaiting is None and screen.view.pending is None)
        await until(pilot, lambda: "Q1" not in screen.status_message)
        await pilot.press("2")  # human again, nothing waits
        await pilot.pause()
        assert "Q1" not in screen.status_message and "simulated" not in screen.status_message
        question = next(text for kind, text in screen.clarify.turns if kind == "question")
        assert question.splitlines()[0].endswith("for simulated"), question
        release.set()
        await screen.worker.wait()


# --- at 80×24: the essential state in view ---------------------------------------------------


def rows_of(widget: Widget) -> list[str]:
    """What `widget` shows on the screen, row by row, as cut to its size (border included)."""
    width, height = widget.outer_size
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def footer_fits(screen) -> list[str]:
    """The footer's keys, checked to lie whole left of the palette's key."""
    footer = screen.query_one(Footer)
    keys = list(footer.query(FooterKey))
    palette = [k for k in keys if k.has_class("-command-palette")]
    rest = [k for k in keys if not k.has_class("-command-palette")]
    assert palette and rest
    assert max(k.region.right for k in rest) <= palette[0].region.x <= footer.region.right
    return footer.shown_keys


async def test_at_80x24_a_waiting_question_shows_who_answers_and_how(mini, app):
    async def script(run: FakeRun) -> RunOutcome:
        run.emit(started("human", budget=16))
        run.emit(PhaseChanged(phase="generate", detail="scripted:good"))
        await run.channel.ask(Q_UNKNOWN)
        return finish(run)

    async with app.run_test(size=(80, 24)) as pilot:
        fake = FakeRun(mini, "human", script)
        screen = await open_screen(app, pilot, RunScreen(LiveSource(fake)))
        await until(pilot, lambda: screen.awaiting == 1 and screen.answer_box.has_focus)
        (header,) = rows_of(screen.query_one("#run-header"))
        assert "phase generate 2/6" in header and "responder human" in header, header
        title = rows_of(screen.clarify)[0]
        assert "human" in title and "…" not in title, title
        hint = rows_of(screen.answer_box)[-1]
        assert "⏎ send · ^j new line" in hint and "…" not in hint, hint
        assert rows_of(screen.query_one("#score")) == [" score: —".ljust(80)]
        status = screen.query_one("#status", Static)
        assert status.size.height == 1
        assert rows_of(status)[0].strip() == "waiting for your answer to Q1 (box on the right)"
        keys = footer_fits(screen)  # typing: they all fit
        assert keys[:3] == ["^l Clear", "esc Leave box", "^t Responder ▸ assisted"], keys

        await pilot.press("escape")  # to the trace: more keys than fit
        await until(pilot, lambda: screen.trace.has_focus)
        await until(pilot, lambda: f"? {MORE}" in screen.query_one(Footer).shown_keys)
        keys = footer_fits(screen)
        assert {"w Answer", "m Responder ▸ assisted", "c Cancel run"} <= set(keys), keys
        assert keys[-2:] == [f"? {MORE}", "^p Commands"]
        fake.desk.answer(1, "Print error=x.")
        await screen.worker.wait()


async def test_at_80x24_a_finished_run_shows_phase_responder_and_score(app):
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource(recorded_run())))
        await until(pilot, lambda: screen.finished is not None)
        screen.flush()
        await pilot.pause()
        (header,) = rows_of(screen.query_one("#run-header"))
        assert "phase completed" in header and "responder assisted" in header, header
        (score_row,) = rows_of(screen.query_one("#score"))
        assert score_row.startswith(" overall 50.0%  macro 50.0%"), score_row
        status = screen.query_one("#status", Static)
        assert status.size.height == 1  # one row: the results keep theirs
        (status_row,) = rows_of(status)
        assert status_row.startswith(" run completed") and status_row.rstrip().endswith("…")
        assert screen.results.size.height - 1 >= 5  # its header, then five rows of cases
        assert "esc Back" in footer_fits(screen)
