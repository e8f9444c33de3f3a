"""Sorting and filtering the results rows (display/results_filter.py): no Textual."""

from __future__ import annotations

from dataclasses import replace

from icae_tui.display.results_filter import (
    PENDING_VERDICT,
    ResultsQuery,
    cycle_filter,
    describe,
    matches,
    natural,
    next_sort,
    next_value,
    options,
    select,
    sort_by,
)
from icae_tui.display.view import CaseRow
from icae_tui.domain.results import CaseResult, SideRun, Verdict


def result(case_id: str, verdict: Verdict, reason: str = "", delivery_exit: int | None = 0,
           timed_out: bool = False) -> CaseResult:  # fmt: skip
    split, rest = case_id.split("/")
    passed = verdict is Verdict.ACCEPTED
    return CaseResult(
        case_id=case_id, split=split, pattern=rest.split("#")[0], command="mini",
        verdict=verdict, reason=reason, passed=passed,
        metrics={"exec": 1.0, "sp": passed, "em": passed, "fm": passed},
        oracle=SideRun(exit_code=0, stdout="", stderr=""),
        delivery=SideRun(exit_code=delivery_exit, stdout="", stderr="", timed_out=timed_out),
    )  # fmt: skip


def row(case_id: str, verdict: Verdict | None = None, reason: str = "", **side) -> CaseRow:
    split, rest = case_id.split("/")
    r = result(case_id, verdict, reason, **side) if verdict is not None else None
    return CaseRow(case_id, rest.split("#")[0], split, r)


ROWS = [
    row("public/upper#0", Verdict.ACCEPTED, "identical"),
    row("hidden/ops#10", Verdict.WRONG_ANSWER, "stdout differs at line 1", delivery_exit=2),
    row("hidden/ops#2", Verdict.ACCEPTED, "identical"),
    row("hidden/count#0"),  # pending
    row(
        "enhanced/edge#0",
        Verdict.TIME_LIMIT,
        "no exit within 10 s",
        delivery_exit=None,
        timed_out=True,
    ),
    row("enhanced/edge#1", Verdict.RUNTIME_ERROR, "exit code 139", delivery_exit=139),
]
IDS = [r.case_id for r in ROWS]


def test_the_default_query_keeps_the_planned_order():
    q = ResultsQuery()
    assert q.default and not q.filtered
    assert select(ROWS, q) == IDS
    assert describe(q, 6, 6) == ""


def test_filters_by_tier_pattern_and_verdict():
    assert select(ROWS, ResultsQuery(split="enhanced")) == ["enhanced/edge#0", "enhanced/edge#1"]
    assert select(ROWS, ResultsQuery(pattern="ops")) == ["hidden/ops#10", "hidden/ops#2"]
    assert select(ROWS, ResultsQuery(verdict="accepted")) == ["public/upper#0", "hidden/ops#2"]
    assert select(ROWS, ResultsQuery(verdict=PENDING_VERDICT)) == ["hidden/count#0"]
    both = ResultsQuery(split="hidden", verdict="accepted")
    assert select(ROWS, both) == ["hidden/ops#2"]
    assert describe(both, 1, 6) == "tier hidden · verdict accepted · 1 of 6"


def test_failures_only_leaves_out_passed_and_pending_cases():
    q = ResultsQuery(failures_only=True)
    assert select(ROWS, q) == ["hidden/ops#10", "enhanced/edge#0", "enhanced/edge#1"]
    assert describe(q, 3, 6) == "failures only · 3 of 6"


def test_search_looks_in_case_id_pattern_and_reason_case_insensitively():
    assert select(ROWS, ResultsQuery(search="EDGE")) == ["enhanced/edge#0", "enhanced/edge#1"]
    assert select(ROWS, ResultsQuery(search="line 1")) == ["hidden/ops#10"]
    assert select(ROWS, ResultsQuery(search="#0")) == [
        "public/upper#0", "hidden/count#0", "enhanced/edge#0",
    ]  # fmt: skip
    assert select(ROWS, ResultsQuery(search="   ")) == IDS  # blank: no filter
    hostile = CaseRow("hidden/x#0", "p\x1b[31m", "hidden")
    assert matches(hostile, ResultsQuery(search="\\x1b"))  # what the table shows is searched
    assert describe(ResultsQuery(search=" ops "), 2, 6) == '"ops" · 2 of 6'


def test_sorting_keeps_pending_rows_last_both_ways():
    by_verdict = ResultsQuery(sort="verdict")
    assert select(ROWS, by_verdict) == [
        "public/upper#0", "hidden/ops#2",  # accepted, in planned order
        "hidden/ops#10", "enhanced/edge#1", "enhanced/edge#0", "hidden/count#0",
    ]  # fmt: skip
    down = replace(by_verdict, descending=True)
    assert select(ROWS, down) == [
        "enhanced/edge#0", "enhanced/edge#1", "hidden/ops#10",
        "public/upper#0", "hidden/ops#2", "hidden/count#0",
    ]  # fmt: skip
    assert describe(down, 6, 6) == "by verdict ↓"


def test_case_ids_sort_naturally_and_exit_codes_numerically():
    assert natural("ops#2") < natural("ops#10")
    assert select(ROWS, ResultsQuery(sort="case")) == [
        "enhanced/edge#0", "enhanced/edge#1", "hidden/count#0", "hidden/ops#2",
        "hidden/ops#10", "public/upper#0",
    ]  # fmt: skip
    assert select(ROWS, ResultsQuery(sort="delivery")) == [
        "public/upper#0", "hidden/ops#2", "hidden/ops#10", "enhanced/edge#1",
        "enhanced/edge#0",  # timed out: after any exit code
        "hidden/count#0",  # not run yet
    ]  # fmt: skip


def test_planned_order_reversed():
    assert select(ROWS, ResultsQuery(descending=True)) == IDS[::-1]


def test_the_sort_cycles_through_the_columns_and_a_header_flips_the_order():
    q = ResultsQuery()
    seen = []
    for _ in range(7):
        q = next_sort(q)
        seen.append(q.sort)
    assert seen == ["case", "pattern", "verdict", "reason", "oracle", "delivery", "planned"]
    q = sort_by(ResultsQuery(), "verdict")
    assert (q.sort, q.descending) == ("verdict", False)
    q = sort_by(q, "verdict")
    assert (q.sort, q.descending) == ("verdict", True)
    assert sort_by(q, "nonsense") == q


def test_filter_values_cycle_through_what_the_rows_have():
    assert options(ROWS, "split") == [("public", 1), ("hidden", 3), ("enhanced", 2)]
    assert options(ROWS, "verdict") == [
        ("accepted", 2), ("wrong_answer", 1), ("runtime_error", 1), ("time_limit", 1),
        ("pending", 1),
    ]  # fmt: skip
    q = ResultsQuery()
    tiers = []
    for _ in range(4):
        q = cycle_filter(q, ROWS, "split")
        tiers.append(q.split)
    assert tiers == ["public", "hidden", "enhanced", None]
    assert next_value("gone", ["a", "b"]) is None  # a value no row has any more: all
    assert next_value(None, []) is None


def test_clearing_keeps_the_sort():
    q = ResultsQuery(sort="verdict", descending=True, split="hidden", search="x")
    assert q.cleared() == ResultsQuery(sort="verdict", descending=True)
