"""The run's model calls: the header's figures against the limits, and the model calls screen
(a row per call, one expanded from model_calls.jsonl) for a replayed, a live and a finished
run; untrusted bodies shown literally."""

from __future__ import annotations

import asyncio

from textual.widgets import DataTable, Static

from icae_tui.display.sources import LiveSource, ReplaySource
from icae_tui.domain.events import ModelCallMade, RunFinished
from icae_tui.gateway import dump_calls
from icae_tui.runs.run import MODEL_CALLS_FILE, RunOutcome
from icae_tui.store.database import RunStore
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.model_calls import ModelCallsScreen
from icae_tui.ui.screens.run import RunScreen

from .helpers import MODEL_LIMITS, MODEL_RUN_ID, model_recording, model_run, started, until


def record(store: RunStore, run_id: str = MODEL_RUN_ID, calls=None) -> None:
    folder = store.artifacts_dir / run_id
    folder.mkdir(parents=True, exist_ok=True)
    recording = model_recording() if calls is None else calls
    (folder / MODEL_CALLS_FILE).write_text(dump_calls(recording))


async def replay(app: IcaeApp, pilot, events, store: RunStore | None = None) -> RunScreen:
    artifacts = store.artifacts_dir if store is not None else None
    screen = RunScreen(ReplaySource(events), artifacts=artifacts)
    await app.push_screen(screen)
    await pilot.pause()
    return screen


async def open_calls(app: IcaeApp, pilot) -> ModelCallsScreen:
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, ModelCallsScreen))
    assert isinstance(app.screen, ModelCallsScreen)
    return app.screen


def cells(screen: ModelCallsScreen, row: int) -> list[str]:
    table = screen.query_one("#calls", DataTable)
    return [str(c) for c in table.get_row_at(row)]


async def expand(pilot, screen: ModelCallsScreen, row: int, until_text: str) -> str:
    table = screen.query_one("#calls", DataTable)
    table.focus()
    table.move_cursor(row=row)
    await pilot.press("enter")
    await until(pilot, lambda: until_text in screen.detail_text)
    return screen.detail_text


async def test_the_header_shows_the_usage_against_the_limits(app, store):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await replay(app, pilot, model_run(), store)
        usage = screen.query_one("#run-usage", Static)
        assert usage.display
        assert str(usage.render()) == (
            "agent steps 3/10 · time 00:24/10:00   model 3/4 calls · 1.8k/2k tokens (1.6k→180)"
            " · $0.051/$0.05 · 2 upstream failure(s) retried"
        )
        styles = {str(usage.render())[s.start : s.end]: str(s.style) for s in usage.render().spans}
        assert "yellow" in styles["1.8k/2k"] and "red" in styles["$0.051/$0.05"]  # ≥80 %, 100 %
        assert "bold" in styles["3/4"] and "yellow" not in styles["3/4"]
        assert "l" in screen.active_bindings  # a model agent's run: its calls can be listed


async def test_a_scripted_run_has_no_usage_line_and_no_calls_key(app):
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await replay(app, pilot, [started()])
        assert not screen.query_one("#run-usage", Static).display
        assert "l" not in screen.active_bindings


async def test_the_calls_screen_lists_the_calls_and_expands_one_literally(app, store):
    record(store)
    async with app.run_test(size=(160, 45)) as pilot:
        await replay(app, pilot, model_run(), store)
        calls = await open_calls(app, pilot)
        assert calls.query_one("#calls", DataTable).row_count == 3
        assert cells(calls, 0) == ["1", "qwen-[bold]coder[/]", "ok", "200", "900→100",
                                   "$0.03", "1.25s", "bash", "—", ""]  # fmt: skip
        assert cells(calls, 1)[7:9] == ["—", "2 of 3"]
        assert cells(calls, 2)[2:4] == ["limit", "429"] and cells(calls, 2)[9] == "max_cost_usd"

        text = await expand(pilot, calls, 1, "response")
        # the request: only what is new since the model's last reply (the tool's output)
        assert "4 message(s); the last 1 shown: what came after the model's last reply" in text
        assert "── tool (tool call call_1)\nmini.py" in text
        assert "You are a coding agent" not in text
        # the retried failures, then the reply and the body, all literal
        assert "attempt 1: 503 — Service Unavailable, waited 0.5s" in text
        assert "attempt 2: no answer — connection reset" in text
        assert "reply (finish: stop)" in text
        assert "All [bold]done[/bold] \\x1b[31mred\\x1b[0m and [link=http://x]link[/link]" in text
        assert "\\u001b[31m" in text  # the body as recorded (JSON escapes)
        assert "\x1b" not in text

        text = await expand(pilot, calls, 0, "request")
        assert "── system" in text and "── user\nBuild mini" in text  # the first: all new
        assert '→ bash({"command": "ls"})' in text

        text = await expand(pilot, calls, 2, "not recorded")
        assert f"call #3 is not in {store.artifacts_dir / MODEL_RUN_ID / MODEL_CALLS_FILE}" in text
        assert "limit reached: max_cost_usd\nthe run's cost limit of $0.05 is reached" in text

        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))


async def test_no_recording_shows_not_recorded(app, store):
    async with app.run_test(size=(160, 45)) as pilot:
        await replay(app, pilot, model_run(), store)
        calls = await open_calls(app, pilot)
        text = await expand(pilot, calls, 0, "not recorded")
        assert f"no {store.artifacts_dir / MODEL_RUN_ID / MODEL_CALLS_FILE}" in text


async def test_a_broken_recording_says_so(app, store):
    folder = store.artifacts_dir / MODEL_RUN_ID
    folder.mkdir(parents=True)
    (folder / MODEL_CALLS_FILE).write_text('{"index": 1}\n{"broken\n')
    async with app.run_test(size=(160, 45)) as pilot:
        await replay(app, pilot, model_run(), store)
        calls = await open_calls(app, pilot)
        text = await expand(pilot, calls, 0, "not recorded")
        assert "line 1" in text


async def test_without_a_store_the_reports_folder_is_used(app, store, tmp_path):
    events = model_run()
    folder = tmp_path / "elsewhere" / MODEL_RUN_ID
    folder.mkdir(parents=True)
    (folder / MODEL_CALLS_FILE).write_text(dump_calls(model_recording()))
    last = events[-1]
    assert isinstance(last, RunFinished)
    last.report_path = str(folder / "report.json")
    async with app.run_test(size=(160, 45)) as pilot:
        await replay(app, pilot, events)  # no artifacts folder given
        calls = await open_calls(app, pilot)
        assert "reply (finish: tool_calls)" in await expand(pilot, calls, 0, "reply")


class LiveModelRun:
    """A live run that emits what the test says, then waits to be let go."""

    def __init__(self) -> None:
        self.run_id = MODEL_RUN_ID
        self.subscribers: list = []
        self.done = asyncio.Event()

    def subscribe(self, callback) -> None:
        self.subscribers.append(callback)

    def emit(self, ev) -> None:
        for callback in self.subscribers:
            callback(ev)

    async def execute(self) -> RunOutcome:
        await self.done.wait()
        return RunOutcome(self.run_id, "cancelled", None)

    def answer(self, question_id: int, text: str) -> bool:
        return False

    def set_responder(self, mode: str) -> bool:
        return False


async def test_a_live_run_adds_calls_as_they_come(app, store):
    run = LiveModelRun()
    first, second = model_recording()
    events = {type(ev).__name__ + str(getattr(ev, "index", "")): ev for ev in model_run()}
    async with app.run_test(size=(160, 45)) as pilot:
        screen = RunScreen(LiveSource(run), artifacts=store.artifacts_dir)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.running)
        run.emit(started(agent="model:local", limits=MODEL_LIMITS, run_id=MODEL_RUN_ID))
        await pilot.pause()
        calls = await open_calls(app, pilot)  # no call yet
        assert "No model calls yet." in str(calls.query_one("#calls-title", Static).render())
        record(store, calls=[first])  # appended as the call ends, then its event
        run.emit(events["ModelCallMade1"])
        await until(pilot, lambda: calls.query_one("#calls", DataTable).row_count == 1)
        assert "reply (finish: tool_calls)" in await expand(pilot, calls, 0, "reply")
        record(store, calls=[first, second])
        run.emit(events["ModelCallMade2"])
        await until(pilot, lambda: calls.query_one("#calls", DataTable).row_count == 2)
        assert "reply (finish: stop)" in await expand(pilot, calls, 1, "reply")
        assert isinstance(events["ModelCallMade2"], ModelCallMade)
        run.done.set()
        await until(pilot, lambda: not screen.running)
