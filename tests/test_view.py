"""The run view: one reducer for every display (pure, no Textual).

The headless printer and the console reduce the same stored events to the same `RunView`;
the printer prints the view's lines and nothing else; the operator's pauses are in the view.
"""

from __future__ import annotations

import io

import pytest

from icae_tui.display.plain import PlainPrinter
from icae_tui.display.sources import ReplaySource
from icae_tui.display.view import TRACE_KEEP, RunView
from icae_tui.domain.events import (
    AgentOutput,
    AgentPaused,
    AgentResumed,
    CaseFinished,
    CasesPlanned,
    PhaseChanged,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
    RunFinished,
)
from icae_tui.results.report import build_report
from icae_tui.store.database import RunStore
from tests.ui.helpers import (
    CASE_IDS,
    PATTERNS,
    RECORDED_ID,
    SPLITS,
    recorded_run,
    result,
    stamp,
    started,
    stream,
)


def stored(tmp_path, events) -> list:
    """The events as a store gives them back (what history replays)."""
    store = RunStore(tmp_path / "runs.db")
    try:
        for ev in events:
            store.append(ev)
        return store.events(events[0].run_id)
    finally:
        store.close()


def console_view(events) -> RunView:
    """What the run screen does with a stored run: a replay source feeding its view."""
    view = RunView()
    ReplaySource(events).connect(view.apply)
    return view


def hostile_run() -> list:
    """The hostile stream (ANSI, NUL, a 100k-character line, a partial line) to the end."""
    tail = [CaseFinished(result=result("public/upper#0")), RunFinished(status="completed")]
    return stamp(stream() + tail, "hostile")


@pytest.mark.parametrize("make", [recorded_run, hostile_run])
def test_the_printer_and_the_console_reduce_stored_events_to_the_same_view(tmp_path, make):
    events = stored(tmp_path, make())
    printer = PlainPrinter(io.StringIO(), verbose=True)
    for ev in events:
        printer(ev)
    console = console_view(events)

    assert type(printer.view) is type(console) is RunView
    assert printer.view == console
    assert console.started is not None and console.finished is not None  # the whole run
    assert console.trace_total >= 20 and console.turns and console.cases
    assert console.interaction is not None


def test_the_recorded_run_is_all_in_the_view():
    view = RunView.from_events(recorded_run())
    assert [row.verdict for row in view.cases.values()] == [
        "accepted",
        "wrong_answer",
        "accepted",
        "time_limit",
    ]
    assert [t.kind for t in view.turns] == [
        *("question", "answer", "switch", "question", "draft", "answer"),
        *("question", "answer", "question", "answer", "refused", "metrics"),
    ]
    assert view.asked == 6 and view.refused is not None and view.dropped is not None
    assert view.score is not None and view.score.overall == 0.5
    assert view.mode == "assisted" and view.phase == "score"


def test_the_printer_prints_the_views_lines_and_nothing_else():
    events = recorded_run()
    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in events:
        printer(ev)
    printer.summary()
    lines = out.getvalue().splitlines()
    view = RunView.from_events(events)
    assert lines[:-1] == [line.text for line in view.trace if line.kind != "output"]
    assert lines[-1].startswith("interaction: 3/3 questions (+3 over budget) · fallback 33.3%")
    verbose = io.StringIO()
    printer = PlainPrinter(verbose, verbose=True)
    for ev in events:
        printer(ev)
    assert verbose.getvalue().splitlines() == [line.text for line in view.trace]


def test_metrics_are_the_reports():
    events = recorded_run()
    view = RunView.from_events(events)
    assert view.interaction is not None
    assert view.interaction.model_dump() == build_report(events)["interaction"]
    assert view.metrics() == view.interaction


def test_patterns_and_splits_come_from_the_plan():
    view = RunView.from_events(recorded_run()[:27])  # up to CasesPlanned
    rows = list(view.cases.values())
    assert [r.case_id for r in rows] == CASE_IDS
    assert [r.pattern for r in rows] == PATTERNS
    assert [r.split for r in rows] == SPLITS
    assert [r.verdict for r in rows] == [""] * 4
    assert view.results_summary() == "4 pending"


def test_a_run_stored_before_patterns_were_planned_still_shows_its_rows():
    view = RunView.from_events(
        [started(), CasesPlanned(case_ids=CASE_IDS), CaseFinished(result=result("hidden/ops#1"))]
    )
    rows = list(view.cases.values())
    assert [r.pattern for r in rows] == ["", "", "ops", ""]  # known once the case finished
    assert view.results_summary() == "1 accepted · 3 pending"
    view.apply(CaseFinished(result=result("enhanced/late#0")))  # not planned: a row at the end
    assert list(view.cases)[-1] == "enhanced/late#0"


def test_the_responder_comes_from_the_events():
    view = RunView.from_events([started("human")])
    assert view.mode == "human"
    view.apply(ResponderChanged(mode="assisted"))
    assert view.mode == "assisted"


def test_a_waiting_question_gets_its_draft_when_the_operator_switches_to_assisted():
    view = RunView.from_events([started("human")])
    asked = QuestionAsked(
        question_id=1, text="Q?", remaining_before=3, mode="human", draft="D.", draft_records=[]
    )
    view.apply(asked)
    assert view.pending == asked and [t.kind for t in view.turns] == ["question"]
    view.apply(ResponderChanged(mode="assisted"))
    view.apply(ResponderChanged(mode="human"))
    view.apply(ResponderChanged(mode="assisted"))  # once per question
    assert [t.kind for t in view.turns] == ["question", "switch", "draft", "switch", "switch"]
    view.apply(QuestionAnswered(question_id=1, text="A.", responder="assisted"))
    assert view.pending is None
    view.apply(RunFinished(status="completed"))
    assert [t.kind for t in view.turns][-1] == "metrics"


def test_output_lines_are_completed_across_chunks_and_made_printable():
    view = RunView.from_events(
        [
            AgentOutput(stream="stdout", text="a\x1b[31mb"),
            AgentOutput(stream="stdout", text="c\nd"),
            AgentOutput(stream="stderr", text="e\r\n"),
        ]
    )
    assert [line.text for line in view.trace] == ["  out│ a\\x1b[31mbc", "  err│ e"]
    view.apply(RunFinished(status="failed", error="x"))  # anything else ends the partial line
    assert [line.text for line in view.trace][2:] == ["  out│ d", "━━ run failed — x"]


def test_a_display_that_fell_behind_gets_what_is_kept():
    view = RunView()
    view.apply(AgentOutput(stream="stdout", text="line\n" * (TRACE_KEEP + 10)))
    lines, cursor = view.trace_since(0)
    assert len(lines) == TRACE_KEEP and cursor == TRACE_KEEP + 10
    assert view.trace_since(cursor) == ([], cursor)


def test_a_replay_source_commands_nothing():
    source = ReplaySource(recorded_run())
    assert source.job() is None and source.run_id == RECORDED_ID
    assert not source.answer(1, "x") and source.set_responder("human") is False
    view = RunView.from_events(source.events)
    assert source.now(view) == source.events[-1].ts


def test_pause_events_in_the_view():
    view = RunView.from_events([
        started(), PhaseChanged(phase="generate"), AgentPaused(ts=100.0),
    ])  # fmt: skip
    assert view.agent_paused
    assert [line.text for line in view.trace][-1] == "⏸ agent paused by operator"
    assert view.status[0] == ("agent paused", "warn-strong")
    view.apply(AgentResumed(ts=112.5, paused_s=12.5))
    assert not view.agent_paused and view.paused_s == 12.5
    assert view.trace[-1].text == (
        "▶ agent resumed after 12.5s (not counted against its time limit)"
    )
