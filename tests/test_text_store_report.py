from icae_tui.domain.events import CaseFinished, QuestionAnswered, QuestionAsked, RunStarted
from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.report import build_report
from icae_tui.safe_text import decode, printable


def test_printable_neutralises_controls():
    hostile = "ok\x1b[2J\x00\r[bold]x[/]\u2028"
    shown = printable(hostile)
    assert "\x1b" not in shown and "\x00" not in shown and "\r" not in shown
    assert "\\x1b[2J" in shown and "[bold]x[/]" in shown
    assert printable("a\nb", keep_newlines=True) == "a\nb"
    assert printable("x" * 50, limit=10).startswith("x" * 10 + "…")
    assert decode(b"\xff\xfeok") == "\ufffd\ufffdok"


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
