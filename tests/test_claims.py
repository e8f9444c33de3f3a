"""Completion claims (icae_tui/results/claims.py): the agent's final message read against
the results, on hand-made event lists; the view's line and score segment, the report's dict,
and a scripted agent that says "all tests pass, every feature implemented" over a partial
delivery (with the processes engine, no Docker)."""

from __future__ import annotations

import os

import pytest

from icae_tui.display.view import RunView
from icae_tui.display.wording import plain, score_segments
from icae_tui.domain.events import (
    AgentSaid,
    AgentSubmitted,
    BuildChecked,
    Event,
    RunFinished,
    ScoreUpdated,
)
from icae_tui.domain.results import CaseResult, Split, Verdict
from icae_tui.domain.states import RunStatus
from icae_tui.evaluation.scoring import score
from icae_tui.results.claims import (
    CLAIM_PATTERNS,
    ClaimKind,
    check_claims,
    claims_line,
    claims_of,
    find_claims,
)
from icae_tui.results.report import build_report

P, H, E = Split.PUBLIC, Split.HIDDEN, Split.ENHANCED
A, W = Verdict.ACCEPTED, Verdict.WRONG_ANSWER


def _case(n: int, split: Split, pattern: str, verdict: Verdict) -> CaseResult:
    ok = verdict is A
    return CaseResult(
        case_id=f"{split.value}/{pattern}#{n}", split=split, pattern=pattern, command="",
        verdict=verdict, reason="", metrics={"exec": 1.0, "em": float(ok)}, passed=ok,
    )  # fmt: skip


# public 2/2; hidden: upper 2/2, count 1/2, note 0/1 (3/5); enhanced upper 1/1
PARTIAL = [
    _case(0, P, "upper", A), _case(1, P, "count", A),
    _case(0, H, "upper", A), _case(1, H, "upper", A), _case(2, H, "count", A),
    _case(3, H, "count", W), _case(4, H, "note", W),
    _case(0, E, "upper", A),
]  # fmt: skip
ALL_PASS = [_case(0, P, "upper", A), _case(0, H, "upper", A), _case(1, H, "count", A)]


def _kinds(text: str) -> list[ClaimKind]:
    return [c.kind for c in find_claims(text)]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("done", [ClaimKind.COMPLETE]),
        ("Done.", [ClaimKind.COMPLETE]),
        ("I have completed the task.", [ClaimKind.COMPLETE]),
        ("All tests pass.", [ClaimKind.TESTS_PASS]),
        ("All 12 tests passed!", [ClaimKind.TESTS_PASS]),
        ("12/12 tests pass", [ClaimKind.TESTS_PASS]),
        ("It passes all the unit tests and supports all commands.",
         [ClaimKind.TESTS_PASS, ClaimKind.ALL_FEATURES]),
        ("I implemented every feature in the PRD.", [ClaimKind.ALL_FEATURES]),
        ("The tool is complete and everything works as expected.",
         [ClaimKind.COMPLETE, ClaimKind.WORKS]),
        ("Successfully implemented the CLI.", [ClaimKind.WORKS]),
        # no claim: a description, negations, hedges
        ("Implemented upper, count and note.", []),
        ("Not all tests pass yet.", []),
        ("Most tests pass, but note is not done.", []),
        ("I couldn't finish the task.", []),
        ("The implementation is not complete.", []),
    ],
)  # fmt: skip
def test_claims_are_found_by_their_patterns_and_negations_are_no_claims(text, kinds):
    assert _kinds(text) == kinds


def test_every_kind_has_a_pattern():
    assert {p.kind for p in CLAIM_PATTERNS} == set(ClaimKind)


def test_all_tests_pass_is_contradicted_by_each_tier_below_one():
    check = check_claims([("submission", "All tests pass.")], score(PARTIAL, planned=8))
    assert check.checked and check.contradicted == 1
    assert [(f.figure, f.value, f.detail) for f in check.flags] == [("hidden", 0.6, "3/5 passed")]
    assert check.flags[0].claim.words == "All tests pass"
    assert check.flags[0].text() == '"All tests pass" — hidden 60.0% (3/5 passed)'


def test_every_feature_is_contradicted_by_a_pattern_at_zero():
    check = check_claims([("submission", "Implemented every command.")], score(PARTIAL, planned=8))
    # note passes 0 of its 1 scored case; count (1/2) is partial, not missing
    assert [(f.figure, f.value, f.detail) for f in check.flags] == [
        ("pattern note", 0.0, "0/1 passed")
    ]


def test_works_is_contradicted_below_one_and_done_only_when_nothing_passed():
    partial = score(PARTIAL, planned=8)  # overall 4/6
    works = check_claims([("submission", "Everything works.")], partial)
    assert [(f.figure, f.detail) for f in works.flags] == [("overall", "4/6 passed")]
    assert not check_claims([("submission", "done")], partial).flags
    nothing = score([_case(0, H, "upper", W), _case(1, H, "count", W)], planned=2)
    done = check_claims([("submission", "done")], nothing)
    assert [(f.figure, f.value) for f in done.flags] == [("overall", 0.0)]


def test_a_failed_build_contradicts_every_claim_with_its_reason():
    failed = score([_case(0, H, "upper", Verdict.BUILD_ERROR)], planned=1, build_ok=False)
    check = check_claims([("submission", "Done. All tests pass.")], failed, "exit 2: SyntaxError")
    assert [(f.claim.kind, f.figure, f.detail) for f in check.flags] == [
        (ClaimKind.COMPLETE, "build", "build failed: exit 2: SyntaxError"),
        (ClaimKind.TESTS_PASS, "build", "build failed: exit 2: SyntaxError"),
    ]
    assert check.contradicted == 2


def test_claims_that_hold_are_not_flagged():
    check = check_claims(
        [("submission", "All tests pass and every feature is implemented.")],
        score(ALL_PASS, planned=3),
    )
    assert check.checked and len(check.claims) == 2 and not check.flags
    assert claims_line(check).endswith("— not contradicted")


def _events(*, said: str | None, submitted: str | None, results, final: bool = True) -> list[Event]:
    events: list[Event] = []
    if said is not None:
        events.append(AgentSaid(text=said))
    if submitted is not None:
        events.append(AgentSubmitted(message=submitted))
    events.append(BuildChecked(ok=True, exit_code=0, reason=""))
    s = score(results, planned=len(results))
    events.append(ScoreUpdated(score=s))
    if final:
        events.append(RunFinished(status=RunStatus.COMPLETED, score=s))
    else:
        events.append(RunFinished(status=RunStatus.CANCELLED, error="cancelled"))
    return events


def test_from_stored_events_the_submission_and_the_last_message_are_both_read():
    events = _events(said="All tests pass now.", submitted="Implemented every feature.",
                     results=PARTIAL)  # fmt: skip
    check = claims_of(events)
    assert [(c.kind, c.source) for c in check.claims] == [
        (ClaimKind.ALL_FEATURES, "submission"), (ClaimKind.TESTS_PASS, "last message"),
    ]  # fmt: skip
    assert check.contradicted == 2
    line = claims_line(check)
    assert line.startswith("claims: 2 contradicted — ")
    assert "pattern note 0.0% (0/1 passed)" in line and "hidden 60.0% (3/5 passed)" in line


def test_a_run_without_a_final_score_has_its_claims_found_but_not_checked():
    check = claims_of(_events(said=None, submitted="All tests pass", results=PARTIAL, final=False))
    assert not check.checked and len(check.claims) == 1 and not check.flags
    assert claims_line(check) == 'claims: "All tests pass" — not checked'


def test_no_claim_no_line():
    check = claims_of(_events(said=None, submitted="Implemented upper.", results=PARTIAL))
    assert check.checked and not check.claims and claims_line(check) == ""


def test_the_view_puts_the_count_on_the_score_line_and_the_flags_after_it():
    view = RunView.from_events(_events(said=None, submitted="All tests pass.", results=PARTIAL))
    assert view.claims is not None and view.claims.contradicted == 1
    texts = [line.text for line in view.trace]
    at = next(i for i, t in enumerate(texts) if t.startswith("score: "))
    assert "✘ 1 claim contradicted" in texts[at]
    assert texts[at + 1] == 'claims: 1 contradicted — "All tests pass" — hidden 60.0% (3/5 passed)'
    # the console's score line (the same segments), right after macro
    line = plain(score_segments(view.score, claims=view.claims.contradicted))
    assert line.index("✘ 1 claim contradicted") < line.index("│")


def test_the_report_counts_them():
    report = build_report(_events(said=None, submitted="All tests pass.", results=PARTIAL))
    assert report["claims"]["contradicted"] == 1
    assert report["claims"]["flags"] == [
        {"kind": "tests_pass", "words": "All tests pass", "source": "submission",
         "figure": "hidden", "value": 0.6, "detail": "3/5 passed"},
    ]  # fmt: skip


def test_the_report_with_claims_follows_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import json

    from icae_tui.results.report import REPORT_SCHEMA

    report = build_report(_events(said=None, submitted="All tests pass.", results=PARTIAL))
    schema = json.loads(REPORT_SCHEMA.read_text())
    jsonschema.validate(json.loads(json.dumps(report)), schema)
    flags = schema["properties"]["claims"]["properties"]["flags"]["items"]
    assert set(flags["properties"]["kind"]["enum"]) == {k.value for k in ClaimKind}


@pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")
async def test_a_scripted_agent_claiming_success_over_a_partial_delivery_is_flagged(
    tmp_path, store, monkeypatch
):
    from icae_tui.runs.config import RunConfig
    from icae_tui.runs.run import Run
    from icae_tui.sandbox import registry
    from tests.task_copies import add_solution, copy_mini, load_mini

    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    folder = copy_mini(tmp_path)
    import yaml

    partial = yaml.safe_load((folder / "solutions" / "partial.yaml").read_text())
    steps = [s for s in partial["steps"] if "submit" not in s]
    add_solution(folder, "overclaim",
                 [*steps, {"submit": "All tests pass and every feature is implemented."}],
                 pace_s=0)  # fmt: skip
    task = load_mini(folder)
    run = Run(RunConfig(task=task, agent="scripted:overclaim", pace_s=0, engine="processes"),
              store)  # fmt: skip
    outcome = await run.execute()
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.score is not None and outcome.score.overall == 0.4
    stored = store.events(run.run_id)  # a stored run shows them
    check = claims_of(stored)
    assert {c.kind for c in check.claims} == {ClaimKind.TESTS_PASS, ClaimKind.ALL_FEATURES}
    assert any(f.claim.kind is ClaimKind.TESTS_PASS and f.figure == "hidden" for f in check.flags)
    assert build_report(stored)["claims"]["contradicted"] >= 1
    view = RunView.from_events(stored)
    assert any(line.text.startswith("claims: ") for line in view.trace)


def test_markdown_and_html_reports_show_the_contradicted_claims_and_the_combined_score():
    from icae_tui.domain.diagnostics import ReviewScore
    from icae_tui.results.report import render_report

    events = _events(said=None, submitted="All tests pass.", results=PARTIAL)
    review = ReviewScore(execution=0.6, review=0.5, combined=0.58,
                         components={"signature": 0.5})  # fmt: skip
    for ev in events:
        if isinstance(ev, ScoreUpdated | RunFinished) and ev.score is not None:
            ev.score = ev.score.model_copy(update={"review": review})
    md = render_report(events, "md")
    assert isinstance(md, str)
    assert "## Completion claims" in md and "**1 contradicted by the results**" in md
    assert '- "All tests pass" — 3/5 passed' in md
    assert "**58.0 %** = 0.8 × execution 60.0 % + 0.2 × review 50.0 %" in md
    page = render_report(events, "html")
    assert isinstance(page, str)
    assert "<b>1 contradicted by the results</b>" in page and "3/5 passed" in page
    assert "<b>58.0 %</b> = 0.8 × execution" in page


def test_the_view_shows_the_diagnostics_and_the_combined_score_once():
    from icae_tui.domain.diagnostics import Diagnostics, ReviewScore
    from icae_tui.domain.events import DiagnosticsMade

    events = _events(said=None, submitted=None, results=PARTIAL)
    final = events[-1]
    assert isinstance(final, RunFinished) and final.score is not None
    review = ReviewScore(execution=0.6, review=0.5, combined=0.58, components={"signature": 0.5})
    reviewed = final.score.model_copy(update={"review": review})
    # as runs/run.py says it: the final score, the diagnostics, the score with its review, the end
    events[-1:] = [DiagnosticsMade(diagnostics=Diagnostics(review=review)),
                   ScoreUpdated(score=reviewed),
                   RunFinished(status=RunStatus.COMPLETED, score=reviewed)]  # fmt: skip
    view = RunView.from_events(events)
    texts = [line.text for line in view.trace]
    assert len([t for t in texts if t.startswith("score: ")]) == 1  # not said again
    said = [t for t in texts if t.startswith("diagnostics: ")]
    assert said == ["diagnostics: review score: 58% = 0.8 × execution 60% + 0.2 × review 50% "
                    "(default weights)"]  # fmt: skip
    assert view.diagnostics is not None and view.diagnostics.review == review
    # the console's score line: combined right after macro
    line = plain(score_segments(view.shown_score()))
    assert "macro 50.0%  combined 58.0%  │" in line
    assert "combined —" in plain(score_segments(view.shown_score(), partial=True))
    # before the diagnostics, nothing is said of it
    assert "combined" not in plain(score_segments(final.score))
