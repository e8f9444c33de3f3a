"""What displays say where the console's new user found it wrong (no Textual, no Docker):
unknown scores, rungs of the ladder that never ran, a question's responder after a switch,
the responders a stored run used, `icae runs` errors and a closed stdout."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from icae_tui.cli import main
from icae_tui.display import wording as w
from icae_tui.display.view import RunView
from icae_tui.domain.events import (
    CaseFinished,
    CasesPlanned,
    QuestionAnswered,
    QuestionAsked,
    ResponderChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Score, Verdict
from icae_tui.domain.task import Split
from icae_tui.evaluation.scoring import score
from icae_tui.evaluation.verdict import build_error_result, judge
from icae_tui.headless import PlainPrinter
from icae_tui.store import RunStore
from tests.test_verdict import REF, TASK, side


def case(case_id: str, passed: bool) -> CaseResult:
    split, rest = case_id.split("/")
    return CaseResult(
        case_id=case_id, split=split, pattern=rest.split("#")[0], command="tool",
        verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER,
        reason="identical" if passed else "stdout differs", passed=passed,
        metrics={"exec": 1.0, "sp": passed, "em": passed, "fm": passed},
    )  # fmt: skip


PLANNED = ["public/a#0", "public/a#1", "hidden/b#0", "enhanced/c#0"]


def started(responder: str = "simulated") -> RunStarted:
    return RunStarted(
        run_id="r1", task_id="t", task_title="T", agent="scripted:good", level="L1",
        responder=responder, budget=3, prd="Build it.",
    )  # fmt: skip


# --- 2. unknown is not zero -----------------------------------------------------------------


def test_a_score_with_only_public_cases_done_has_no_overall_yet():
    s = score([case("public/a#0", True), case("public/a#1", False)], planned=4)
    assert not s.measured
    line = w.score_line(s)
    assert "0.0%" not in line, line
    assert "overall —" in line and "macro —" in line
    assert "exec —" in line and "FM —" in line
    assert "2/4 cases done" in line


def test_a_measured_zero_is_still_zero():
    s = score([case("public/a#0", True), case("hidden/b#0", False)], planned=4)
    assert s.measured
    assert "overall 0.0%" in w.score_line(s)


def test_a_failed_build_scores_zero_even_without_hidden_cases():
    results = [build_error_result(TASK, REF.model_copy(update={"split": Split.PUBLIC}), "no build")]
    s = score(results, planned=1, build_ok=False)
    s.overall = s.macro = 0.0  # what the run does on a failed build
    assert s.measured
    assert "overall 0.0%" in w.score_line(s)


def test_a_score_built_without_splits_is_taken_as_given():
    s = Score(done=1, planned=1, overall=0.5, macro=0.5)  # stored before splits were kept
    assert s.measured
    assert "overall 50.0%" in w.score_line(s)


def test_headless_prints_a_dash_for_an_unknown_overall():
    out = io.StringIO()
    printer = PlainPrinter(out)
    results = [case("public/a#0", True)]
    for ev in (
        started(),
        CasesPlanned(case_ids=["public/a#0"]),
        CaseFinished(result=results[0]),
        ScoreUpdated(score=score(results, planned=1)),
    ):
        printer(ev)
    score_lines = [line for line in out.getvalue().splitlines() if line.startswith("score:")]
    assert score_lines == ["score: " + w.plain(w.score_segments(score(results, planned=1)))]
    assert "overall —" in score_lines[0] and "0.0%" not in score_lines[0]


def test_a_run_that_ends_without_a_score_shows_its_figures_as_partial():
    results = [case("public/a#0", True), case("hidden/b#0", True)]
    view = RunView.from_events(
        [
            started(),
            CasesPlanned(case_ids=PLANNED),
            *(CaseFinished(result=r) for r in results),
            ScoreUpdated(score=score(results, planned=4)),
            RunFinished(status="cancelled", error="cancelled by the operator"),
        ]
    )
    assert view.score is not None and view.score_partial
    line = w.plain(w.score_segments(view.score, partial=view.score_partial))
    assert line.startswith("overall — (partial 100.0% of 1 scored)"), line
    assert "2/4 cases done" in line


# --- 3. rungs that never ran ----------------------------------------------------------------


def ladder(result: CaseResult) -> str:
    return w.plain(w.ladder_segments(result))


def test_a_wrong_exit_code_leaves_the_later_rungs_not_reached():
    r = judge(TASK, REF, side(exit_code=0), side(exit_code=1))
    assert r.verdict is Verdict.WRONG_ANSWER and r.metrics["fm_score"] == 1.0
    text = ladder(r)
    assert text.startswith("exec ✘"), text
    assert "SP, EM, FM not reached" in text
    assert "SP ✘" not in text and "FM score" not in text


def test_each_rung_reads_as_far_as_the_ladder_went():
    accepted = judge(TASK, REF, side(), side())
    assert ladder(accepted) == "exec ✔  SP ✔  EM ✔  FM ✔ (FM score 1.00)"
    differs = judge(TASK, REF, side("abcdefgh\n"), side("abcdefgX\n"))
    assert ladder(differs).startswith("exec ✔  SP ✔  EM ✘  FM ✔ (FM score 0.")
    timed_out = judge(TASK, REF, side(), side(timed_out=True, exit_code=None))
    assert ladder(timed_out) == "exec, SP, EM, FM not reached"
    built = build_error_result(TASK, REF, "no build")
    assert ladder(built) == "exec, SP, EM, FM not reached"


# --- 9. a question's responder after a switch ------------------------------------------------


def question_heads(view: RunView) -> list[str]:
    return [w.plain(t.head) for t in view.turns if t.kind == "question"]


def test_a_waiting_question_names_the_responder_it_now_waits_for():
    asked = QuestionAsked(question_id=1, text="How?", remaining_before=3, mode="human")
    view = RunView.from_events([started("human"), asked])
    assert question_heads(view)[0].endswith("for human")
    view.apply(ResponderChanged(mode="assisted"))
    assert question_heads(view)[0].endswith("for assisted"), question_heads(view)
    view.apply(ResponderChanged(mode="simulated"))
    assert question_heads(view)[0].endswith("for simulated"), question_heads(view)
    view.apply(QuestionAnswered(question_id=1, text="So.", record_ids=["C001"], remaining=2))
    view.apply(ResponderChanged(mode="human"))  # answered: its head stays as it was
    assert question_heads(view)[0].endswith("for simulated")


def test_history_knows_every_responder_a_run_used(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    store.create_run("r1", "t", "scripted:good", "L1", "simulated", 1.0)
    store.create_run("r2", "t", "scripted:good", "L1", "human", 2.0)
    for seq, ev in enumerate([started(), ResponderChanged(mode="human"),
                              ResponderChanged(mode="assisted")], 1):  # fmt: skip
        ev.run_id, ev.seq, ev.ts = "r1", seq, float(seq)
        store.append(ev)
    assert store.responders_used(["r1", "r2", "r3"]) == {"r1": ["human", "assisted"]}
    assert w.responders_label("simulated", ["human", "assisted"]) == "simulated→human→assisted"
    assert w.responders_label("human", []) == "human"


# --- 6. `icae runs --export` ------------------------------------------------------------------


def test_exporting_a_missing_run_is_an_error(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "runs", "--export", "nonexistent"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no stored run 'nonexistent'" in captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--export", ""], "--export needs a run id"),
        (["--export", "  "], "--export needs a run id"),
        (["--trajectory"], "--trajectory goes with --export RUN_ID"),
    ],
)
def test_export_options_without_a_run_are_errors(tmp_path, capsys, args, message):
    assert main(["--home", str(tmp_path), "runs", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err


# --- 7. a closed stdout -----------------------------------------------------------------------


def closed_stdout(*args: str, home) -> tuple[int, str]:
    """Run `icae` with its stdout a pipe that nobody reads (closed at once): its exit status
    and what it wrote to stderr."""
    env = {**os.environ, "PYTHONUNBUFFERED": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "icae_tui", "--home", str(home), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


@pytest.fixture
def full_store(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    for i in range(200):
        run_id = f"20240101-{i:06d}-abcdef"
        store.create_run(run_id, "semver", "scripted:good", "L1", "simulated", float(i))
        store.finish_run(run_id, "completed", float(i) + 1, 0.5, "x" * 80)
    ev = started()
    ev.run_id, ev.seq, ev.ts = "20240101-000000-abcdef", 1, 0.0
    ev.prd = "a long PRD line\n" * 20_000  # a report of some 300 KB
    store.append(ev)
    store.close()
    return tmp_path


@pytest.mark.parametrize(
    "args", [["runs"], ["runs", "--export", "20240101-000000-abcdef"], ["tasks"]]
)
def test_a_closed_stdout_ends_quietly(full_store, args):
    status, err = closed_stdout(*args, home=full_store)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert status == 141


def test_the_headless_printer_stops_printing_when_stdout_is_gone():
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    printer = PlainPrinter(Closed())
    printer(started())  # no exception into the run's log
    printer(CasesPlanned(case_ids=["public/a#0"]))
    assert printer.closed


async def test_a_run_that_scored_nothing_is_stored_without_an_overall(fixture_catalog, tmp_path):
    from icae_tui.run import Run, RunConfig, RunOutcome

    store = RunStore(tmp_path / "runs.db")
    run = Run(RunConfig(task=fixture_catalog.tasks["mini"]), store)
    store.create_run(run.run_id, "mini", "scripted:good", "L1", "simulated", 0.0)
    public_only = score([case("public/a#0", True)], planned=1)
    await run._finish(RunOutcome(run.run_id, "completed", public_only))
    row = store.run(run.run_id)
    assert row is not None and row.status == "completed"
    assert row.overall is None  # history and `icae runs` show "—", as the score line does
