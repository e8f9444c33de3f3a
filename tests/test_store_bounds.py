"""A run's store is bounded whatever the agent or the delivery does (no Docker).

Side effects per case are capped with a true count and a digest; questions past the budget
are counted, not stored one by one; past the run's bound, low-value events are counted and
the events that decide the result are still stored. See icae_tui/store/bounds.py for the bound.
"""

from __future__ import annotations

import json

from icae_tui.domain.events import (
    AgentOutput,
    CaseFinished,
    CasesPlanned,
    Event,
    EventsDropped,
    PhaseChanged,
    Progress,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score, SideRun, Verdict
from icae_tui.domain.task import Level
from icae_tui.evaluation.verdict import same_effects
from icae_tui.results.report import build_report
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.effects import CHANGES_CAP, CHANGES_JSON_CAP, to_file_changes
from icae_tui.store import bounds
from icae_tui.store.bounds import MAX_RUN_BYTES, droppable
from icae_tui.users.channel import MAX_QUESTION_CHARS, budget_spent_text
from icae_tui.users.metrics import interaction_metrics


def _flood_diff(n: int, *, odd: str = "") -> dict:
    """n files created in /tmp, one note in the work dir; `odd` changes the last file's content."""
    diff = {f"/tmp/f{i:06d}": ("added", ("file", 0o644, 1, f"h{i}", "")) for i in range(n)}
    if odd:
        diff[f"/tmp/f{n - 1:06d}"] = ("added", ("file", 0o644, 1, odd, ""))
    diff["/data/note.txt"] = ("added", ("file", 0o644, 3, "n", ""))
    return diff


def _side(diff: dict) -> SideRun:
    changes = to_file_changes(diff, workdir="/data")
    return SideRun(
        exit_code=0, stdout="", stderr="", changes=changes,
        changes_total=changes.total, changes_sha256=changes.sha256,
    )  # fmt: skip


def test_side_effects_capped_with_true_count_and_digest():
    diff = _flood_diff(20_000)
    changes = to_file_changes(diff, workdir="/data")
    assert len(changes) == CHANGES_CAP and changes.total == 20_001
    # the work directory first, then by path: the same set always keeps the same entries
    assert changes[0].path == "note.txt"
    assert [c.path for c in changes[1:4]] == ["/tmp/f000000", "/tmp/f000001", "/tmp/f000002"]
    shuffled = dict(reversed(list(diff.items())))
    again = to_file_changes(shuffled, workdir="/data")
    assert list(again) == list(changes) and again.sha256 == changes.sha256

    # the same huge change set compares equal; a difference past the cap still counts
    same, other = _side(_flood_diff(20_000)), _side(_flood_diff(20_000, odd="x"))
    assert same.changes == other.changes  # what was kept cannot tell them apart
    assert same_effects(same, _side(diff)) and not same_effects(same, other)
    assert not same_effects(same, _side(_flood_diff(19_999)))


def test_long_paths_fill_the_byte_cap_first():
    deep = "/d" * 1500  # 3,000-character paths: deep trees have no length limit
    diff = {f"{deep}/f{i}": ("added", ("file", 0o644, 1, "h", "")) for i in range(500)}
    changes = to_file_changes(diff, workdir="/data")
    kept = sum(len(c.model_dump_json().encode()) for c in changes)
    assert 0 < len(changes) < min(CHANGES_CAP, changes.total) and kept <= CHANGES_JSON_CAP
    assert changes.total == 500


def test_results_recorded_before_the_cap_count_what_they_kept():
    side = SideRun.model_validate(
        {"exit_code": 0, "stdout": "", "stderr": "", "changes": [{"path": "a", "change": "added"}]}
    )
    assert side.changes_total == 1 and side.changes_sha256 == ""


def _run(fixture_catalog, store) -> tuple[Run, list[Event]]:
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"], level=Level.L1), store)
    seen: list[Event] = []
    run.subscribe(seen.append)
    return run, seen


async def _start(run: Run, budget: int) -> None:
    await run.emit(
        RunStarted(task_id="mini", task_title="mini", agent="a", level="L1",
                   responder="simulated", budget=budget, prd="", task_records=["C001", "C002"])
    )  # fmt: skip


async def test_questions_past_the_budget_are_counted_not_stored(fixture_catalog, store):
    from icae_tui.users.channel import ClarificationChannel

    run, seen = _run(fixture_catalog, store)
    await _start(run, budget=2)
    flood = 5000
    async with ClarificationChannel(run.desk, 2, run.emit) as channel:
        assert (await channel.ask("How should unknown operations be reported?")).remaining == 1
        await channel.ask("How is the word count formatted?")
        replies = [await channel.ask(f"{i:05d}" + "?" * 2000) for i in range(flood)]
    await run.emit(RunFinished(status="completed"))

    spent = budget_spent_text(2)
    assert all(r.over_budget and r.text == spent and r.remaining == 0 for r in replies)
    assert [r.question_id for r in replies] == list(range(3, 3 + flood))
    stored = store.events(run.run_id)
    # RunStarted, 2 turns, the first refused turn, summaries at 1, 10, 100, 1000 and the
    # close, RunFinished: O(log n), not 2 × 5,000
    assert len(stored) == 1 + 4 + 2 + 5 + 1, [type(e).__name__ for e in stored]
    assert store.usage(run.run_id).payload_bytes < 64 * 1024
    assert [e.seq for e in seen] == [e.seq for e in stored]  # displays saw what was stored
    last = [e for e in stored if isinstance(e, QuestionsRefused)][-1]
    assert (last.count, last.first_id, last.last_id) == (flood - 1, 4, 2 + flood)
    assert last.chars == (flood - 1) * MAX_QUESTION_CHARS and last.sample.startswith("00001?")

    metrics = interaction_metrics(stored)
    assert (metrics.turns, metrics.over_budget) == (2, flood)
    assert metrics.by_responder == {"simulated": 2, "budget": flood}
    assert metrics.covered == ["C001", "C002"]
    report = build_report(stored)
    assert report["refused_questions"]["count"] == flood - 1
    assert report["interaction"]["over_budget"] == flood
    assert len(report["turns"]) == 3 and len(json.dumps(report)) < 64 * 1024


def _case(i: int) -> CaseResult:
    side = SideRun(exit_code=0, stdout="ok\n", stderr="")
    return CaseResult(case_id=f"hidden/h#{i}", split="hidden", pattern="p", command="t",
                      verdict=Verdict.ACCEPTED, reason="identical", passed=True,
                      oracle=side, delivery=side)  # fmt: skip


async def _decisive(run: Run, i: int) -> None:
    """Events that decide the result: always stored."""
    await run.emit(CaseFinished(result=_case(i)))
    await run.emit(ScoreUpdated(score=Score(done=i + 1, planned=4)))
    await run.emit(QuestionAsked(question_id=i + 1, text="q", remaining_before=9))
    await run.emit(QuestionAnswered(question_id=i + 1, text="a", record_ids=["C001"]))


async def test_run_emit_past_the_byte_bound(fixture_catalog, store):
    run, seen = _run(fixture_catalog, store)
    await _start(run, budget=9)
    await run.emit(PhaseChanged(phase="generate"))
    chunk = "x" * (256 * 1024)  # one command's whole trace
    emitted = MAX_RUN_BYTES // len(chunk) + 40
    for i in range(emitted):
        await run.emit(AgentOutput(stream="stdout", text=chunk))
        if i in (10, emitted - 1):
            await _decisive(run, i // 10)
    await run.emit(PhaseChanged(phase="evaluate"))
    await run.emit(CasesPlanned(case_ids=["hidden/h#0", "hidden/h#1"]))
    await _decisive(run, 2)
    await run.emit(RunFinished(status="completed"))

    stored = store.events(run.run_id)
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert [(type(e), e.seq) for e in seen] == [(type(e), e.seq) for e in stored]
    outputs = sum(isinstance(e, AgentOutput) for e in stored)
    assert outputs < emitted and store.usage(run.run_id).payload_bytes <= MAX_RUN_BYTES
    # a prefix of the trace, then one notice; the totals just before the end
    notices = [e for e in stored if isinstance(e, EventsDropped)]
    assert [n.final for n in notices] == [False, True]
    first = stored.index(notices[0])
    assert not any(isinstance(e, AgentOutput) for e in stored[first:])
    assert notices[1].count == emitted - outputs and stored[-2] is notices[1]
    assert notices[1].by_kind == {"agent_output": emitted - outputs}
    assert notices[1].payload_bytes > (emitted - outputs) * len(chunk)
    # every decisive event made it, past the bound too
    assert sum(isinstance(e, CaseFinished) for e in stored) == 3
    assert sum(isinstance(e, QuestionAnswered) for e in stored) == 3
    assert [e.phase for e in stored if isinstance(e, PhaseChanged)] == ["generate", "evaluate"]
    assert isinstance(stored[-1], RunFinished)
    report = build_report(stored)
    assert report["dropped"]["count"] == emitted - outputs
    assert report["dropped"]["max_bytes"] == MAX_RUN_BYTES
    assert len(report["cases"]) == 3 and report["interaction"]["turns"] == 3


async def test_run_emit_past_the_event_bound(fixture_catalog, store, monkeypatch):
    # The real bound is 200,000 events (~12 s of SQLite here); the rule is the same at 500.
    monkeypatch.setattr(bounds, "MAX_RUN_EVENTS", 500)
    run, seen = _run(fixture_catalog, store)
    await _start(run, budget=9)
    for i in range(2000):
        await run.emit(Progress(message=f"step {i}"))
        if i % 400 == 0:
            await _decisive(run, i // 400)
    await run.emit(QuestionAsked(question_id=99, text="q", remaining_before=0, mode="budget"))
    await run.emit(QuestionAnswered(question_id=99, text="spent", over_budget=True,
                                    responder="budget"))  # fmt: skip
    await run.emit(RunFinished(status="completed"))

    stored = store.events(run.run_id)
    assert [e.seq for e in seen] == [e.seq for e in stored]
    low = [e for e in stored if droppable(e)]
    assert len(low) < 500 and sum(isinstance(e, CaseFinished) for e in stored) == 5
    final = stored[-2]
    assert isinstance(final, EventsDropped) and final.final
    assert final.by_kind == {"progress": 2000 - len(low), "question": 1, "answer": 1}
    # the over-budget question was dropped, and is still counted
    assert interaction_metrics(stored).over_budget == 1


def _summaries() -> list[Event]:
    return [
        RunStarted(task_id="mini", task_title="mini", agent="a", level="L1",
                   responder="simulated", budget=1, prd=""),
        QuestionAsked(question_id=1, text="q1", remaining_before=1),
        QuestionAnswered(question_id=1, text="a", record_ids=["C001"]),
        QuestionAsked(question_id=2, text="q2", remaining_before=0, mode="budget"),
        QuestionAnswered(question_id=2, text="spent", over_budget=True, responder="budget"),
        QuestionsRefused(count=1, chars=7, first_id=3, last_id=3, sample="[red]q3"),
        QuestionsRefused(count=10, chars=70, first_id=3, last_id=12, sample="[red]q3"),
        EventsDropped(count=5, payload_bytes=900, by_kind={"agent_output": 5},
                      max_events=200_000, max_bytes=MAX_RUN_BYTES),
        EventsDropped(count=9, payload_bytes=1200, by_kind={"agent_output": 9},
                      max_events=200_000, max_bytes=MAX_RUN_BYTES, final=True),
        RunFinished(status="completed"),
    ]  # fmt: skip


def test_headless_prints_the_summaries():
    import io

    from icae_tui.display.plain import PlainPrinter

    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in _summaries():
        printer(ev)
    printer.summary(_summaries())
    text = out.getvalue()
    assert "10 more question(s) past the budget (Q3–Q12, 70 characters)" in text
    assert "!! store bound reached: 5 low-value event(s) not stored (agent_output 5)" in text
    assert "!! in all: 9 low-value event(s)" in text
    assert "interaction: 1/1 questions (+11 over budget)" in text


async def test_console_shows_the_summaries_and_capped_changes(store):
    from textual.widgets import Static

    from icae_tui.catalog.loader import Catalog
    from icae_tui.ui.app import IcaeApp
    from icae_tui.ui.screens.dialogs import side_text
    from icae_tui.ui.screens.run import RunScreen

    app = IcaeApp(catalog=Catalog(), store=store)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = RunScreen()
        await app.push_screen(screen)
        await pilot.pause()
        for ev in _summaries():
            screen.handle_event(ev)
        screen.flush()
        await pilot.pause()
        status = str(screen.query_one("#status", Static).render())
        assert "display error" not in status and "run completed" in status
        refused = [text for kind, text in screen.clarify.turns if kind == "refused"]
        assert len(refused) == 1 and refused[0].startswith("+10 more past the budget")
        assert "[red]q3" in refused[0]  # the sample is shown literally
        assert screen.clarify.asked == 12  # 2 stored, 10 counted
        metrics = [text for kind, text in screen.clarify.turns if kind == "metrics"]
        assert "1/1 turns (+11 over budget)" in metrics[0]
        lines = list(screen.trace.lines)
        assert any("store bound reached: 5 low-value event(s) not stored" in line for line in lines)
        assert any("in all: 9 low-value event(s)" in line for line in lines)

    side = _side(_flood_diff(20_000))
    shown = side_text("delivery", side).plain
    assert f"… {20_001 - CHANGES_CAP} more not kept (20001 in all" in shown
