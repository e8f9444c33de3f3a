"""The run store (icae_tui/store/database.py): a run's events stored and loaded as they were, and the
report built from them."""

from icae_tui.domain.events import CaseFinished, QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.results.report import build_report


def test_store_round_trip_and_report(store):
    store.create_run("r1", "mini", "scripted:good", "L1", "simulated", 1.0)
    events = [
        RunStarted(task_id="mini", task_title="t", agent="a", level="L1", responder="simulated", budget=3, prd="p"),
        QuestionAsked(question_id=1, text="how?", remaining_before=3),
        QuestionAnswered(question_id=1, text="like so", record_ids=["C001"], scores={"C001": 90.0}, remaining=2),
        CaseFinished(result=CaseResult(case_id="hidden/x#0", split="hidden", pattern="x", command="t",
                                       verdict=Verdict.WRONG_ANSWER, reason="stdout differs")),
    ]  # fmt: skip
    for seq, ev in enumerate(events, start=1):
        ev.run_id, ev.seq = "r1", seq
        store.append(ev)
    store.finish_run("r1", "completed", 2.0, 0.0)
    loaded = store.events("r1")
    assert [type(e) for e in loaded] == [type(e) for e in events]
    assert loaded[2].record_ids == ["C001"]
    report = build_report(loaded)
    assert report["turns"][0]["records"] == ["C001"]
    assert report["failed_cases"] == [
        {"case_id": "hidden/x#0", "verdict": "wrong_answer", "reason": "stdout differs"}
    ]
    assert store.runs()[0].status == "completed"
