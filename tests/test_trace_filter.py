"""The trace as a display keeps it (icae_tui/display/trace_filter.py): wrapping to a width,
filters by kind and text, the search and its hits, the bounds. No Textual."""

from __future__ import annotations

import random

import pytest

from icae_tui.display.trace_filter import (
    AGENT_ONLY,
    ALL_LINES,
    NO_OUTPUT,
    WRAP_INDENT,
    TraceBuffer,
    TraceFilter,
    Wrapper,
    compile_query,
    wrap_spans,
)
from icae_tui.display.view import TraceLine
from tests.test_core_without_textual import imported


def out(text: str) -> TraceLine:
    return TraceLine("output", "  out│ " + text)


def said(text: str) -> TraceLine:
    return TraceLine("said", "agent › " + text)


def command(text: str) -> TraceLine:
    return TraceLine("command", "$ " + text, "strong")


def rows_of(line: str, width: int) -> list[str]:
    return [
        (WRAP_INDENT if i else "") + line[a:b] for i, (a, b) in enumerate(wrap_spans(line, width))
    ]


# --- wrapping --------------------------------------------------------------------------------


def test_a_line_that_fits_is_one_row_and_a_narrow_width_does_not_wrap():
    assert wrap_spans("short", 40) == [(0, 5)]
    assert wrap_spans("x" * 100, 8) == [(0, 100)]  # under MIN_WIDTH
    assert wrap_spans("", 40) == [(0, 0)]


def test_rows_break_after_a_space_in_their_second_half_else_at_the_width():
    line = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    rows = rows_of(line, 20)
    assert rows[0] == "alpha beta gamma "  # the space at 16 is past half of 20
    assert all(len(r) <= 20 for r in rows)
    assert "".join(r.removeprefix(WRAP_INDENT) for r in rows) == line
    assert all(r.startswith(WRAP_INDENT) for r in rows[1:])
    blob = "y" * 50
    assert rows_of(blob, 20) == ["y" * 20, WRAP_INDENT + "y" * 18, WRAP_INDENT + "y" * 12]


def test_random_lines_rejoin_whole_and_fit_the_width():
    rng = random.Random(5)
    for _ in range(300):
        line = "".join(rng.choice("ab  cdefg,.") for _ in range(rng.randint(0, 400)))
        width = rng.randint(12, 90)
        rows = rows_of(line, width)
        assert all(len(r) <= width for r in rows)
        assert "".join(r.removeprefix(WRAP_INDENT) if i else r for i, r in enumerate(rows)) == line
        assert Wrapper().count(line, width) == len(rows)


def test_wide_characters_are_measured_in_cells():
    line = "字" * 30  # two cells each
    spans = wrap_spans(line, 20, [2] * 30)
    assert spans[0] == (0, 10)
    assert all((b - a) * 2 + (2 if i else 0) <= 20 for i, (a, b) in enumerate(spans))
    assert "".join(line[a:b] for a, b in spans) == line


# --- filters and queries ---------------------------------------------------------------------


def test_queries_are_literal_with_smart_case():
    pattern = compile_query("a.b(")
    assert pattern is not None
    assert pattern.search("x A.B( y") and not pattern.search("axb(")
    assert compile_query("Error").search("an error") is None  # an upper-case letter: exact
    assert compile_query("error").search("an ERROR") is not None
    assert compile_query("") is None
    assert compile_query("[bold]").search("markup [BOLD] stays text")


def test_the_kind_filters_cycle_and_say_what_they_show():
    f = TraceFilter()
    assert not f.active and f.describe() == ""
    assert f.shows(out("x")) and f.shows(said("x"))
    f = f.next_kinds()
    assert f.kinds is NO_OUTPUT and f.active and f.describe() == "no command output"
    assert not f.shows(out("x")) and f.shows(command("make")) and f.shows(said("hi"))
    f = f.next_kinds()
    assert f.kinds is AGENT_ONLY
    assert f.shows(said("hi")) and f.shows(command("ls")) and f.shows(TraceLine("question", "Q1"))
    assert not f.shows(out("x")) and not f.shows(TraceLine("phase", "phase generate"))
    assert f.next_kinds().kinds is ALL_LINES
    text = TraceFilter(NO_OUTPUT, "make")
    assert text.shows(command("make test")) and not text.shows(command("pytest"))
    assert text.describe() == "no command output, only “make”"


# --- the buffer ------------------------------------------------------------------------------


def buffer(width: int = 40, **bounds: int) -> TraceBuffer:
    b = TraceBuffer(**bounds)
    b.set_width(width)
    return b


def test_lines_are_laid_out_in_rows_and_again_at_a_new_width():
    b = buffer(30)
    long = said(" ".join(f"w{i}" for i in range(40)))
    b.add([command("make"), long, out("done")])
    rows = list(b.rows())
    assert len(rows) == b.row_count > 3
    assert rows[0] == "$ make" and rows[-1] == "  out│ done"
    assert all(len(r) <= 30 for r in rows)
    assert b.lines == [command("make").text, long.text, out("done").text]
    epoch = b.epoch
    assert b.set_width(80) and b.epoch != epoch
    assert b.row_count < len(rows) and all(len(r) <= 80 for r in b.rows())
    assert not b.set_width(80)


def test_a_filter_hides_lines_and_keeps_them():
    b = buffer()
    b.add([command("make"), out("compiling"), out("error: x"), said("fixing it")])
    b.set_filter(TraceFilter(NO_OUTPUT))
    assert list(b.rows()) == ["$ make", "agent › fixing it"]
    assert len(b.lines) == 4  # kept, only hidden
    b.add([out("more"), command("make again")])
    assert list(b.rows())[-1] == "$ make again"
    b.set_filter(TraceFilter(ALL_LINES, "error"))
    assert list(b.rows()) == ["  out│ error: x"]
    b.set_filter(TraceFilter())
    assert b.row_count == 6


def test_search_walks_its_hits_round_the_ends_and_marks_them():
    b = buffer(20)
    b.add([out("one needle"), out("nothing"), out("two NEEDLE"), out("three")])
    assert b.search("needle") == 2
    assert b.hit_number() is None
    first = b.step(True, None)
    assert first == 0 and b.hit_number() == 1
    assert b.step(True, None) == 2 and b.hit_number() == 2
    assert b.step(True, None) == 0  # round the end
    assert b.step(False, None) == 2  # and back
    assert b.step(True, 1) == 2  # after the line 1
    assert b.step(False, 2) == 0  # before the line 2
    row = b.row(b.first_row(2) or 0)
    assert [row.text[a:c] for a, c in b.marks(row)] == ["NEEDLE"]
    b.add([out("a needle more")])
    assert b.hits == 3  # lines added are searched too
    assert b.search("Needle") == 0  # smart case
    assert b.search("") == 0 and b.marks(b.row(0)) == []


def test_a_match_cut_by_a_wrap_is_marked_on_both_rows():
    b = buffer(14)
    line = TraceLine("said", "abcdefghijklmnopqrstuvwxyz")
    b.add([line])
    b.search("lmnop")
    first, second = b.row(0), b.row(1)
    assert first.text == "abcdefghijklmn" and second.text == WRAP_INDENT + "opqrstuvwxyz"
    assert [first.text[a:c] for a, c in b.marks(first)] == ["lmn"]
    assert [second.text[a:c] for a, c in b.marks(second)] == ["op"]


def test_the_search_follows_the_filter():
    b = buffer()
    b.add([out("needle in output"), said("needle said")])
    assert b.search("needle") == 2
    b.set_filter(TraceFilter(NO_OUTPUT))
    assert b.hits == 1 and b.step(True, None) == 1


def test_the_oldest_lines_go_first_and_the_rows_they_took_are_told():
    b = buffer(20, max_lines=10, max_rows=1000)
    b.add(out(f"n{i}") for i in range(10))
    assert b.search("n1") == 1
    dropped = b.add([out("n10"), out("n11")])
    assert dropped == 2 and b.lines[0] == "  out│ n2" and len(b.lines) == 10
    assert b.hits == 2 and b.seq_at(0) == 2  # n1 went (seq 1); n10, n11 are hits
    b = buffer(20, max_lines=1000, max_rows=10)
    b.add(out("x" * 30) for _ in range(5))  # two rows each
    assert b.row_count == 10
    assert b.add([out("y" * 30)]) == 2 and b.row_count == 10
    assert b.row(b.row_count - 1).text.endswith("y")


def test_not_held_counts_the_lines_gone_from_the_start():
    b = buffer(20, max_lines=10, max_rows=1000)
    b.add(out(f"n{i}") for i in range(10))
    assert b.not_held == 0
    b.add([out("n10"), out("n11")])  # past max_lines
    assert b.not_held == 2 and b.seq_at(0) == 2
    b = buffer(20, max_lines=1000, max_rows=10)
    b.add(out("x" * 30) for _ in range(5))  # two rows each: the bound
    b.add([out("y" * 30)])  # kept, but its row bound drops the first line shown
    assert b.kept == 6 and b.not_held == 1 and b.row(0).seq == 1
    b.set_filter(TraceFilter(NO_OUTPUT))  # filtered: only the lines not kept count
    assert b.not_held == 0


def test_a_hundred_thousand_lines_keep_the_bounds():
    b = buffer(60)
    long = "word " * 80  # seven rows at 60
    b.add(out(f"{i} {long}") for i in range(100_000))
    assert b.total == 100_000
    assert len(b.lines) == b.max_lines == 50_000
    assert b.row_count <= b.max_rows
    assert b.row(b.row_count - 1).text.endswith("word ")
    assert b.row(0).text.startswith("  out│ ")  # the first row is a line's first


def test_rows_keep_their_key_when_lines_go_at_the_top():
    b = buffer(20, max_lines=5)
    b.add(out(f"n{i}") for i in range(5))
    key = b.row_key(4)
    b.add([out("n5")])
    assert b.row_key(3) == key and b.row(3).text == "  out│ n4"


def test_an_empty_buffer_has_no_rows():
    b = TraceBuffer()
    assert b.row_count == 0 and list(b.rows()) == [] and b.seq_at(0) is None
    with pytest.raises(IndexError):
        b.row(0)
    assert b.step(True, None) is None


def test_the_module_imports_neither_textual_nor_rich():
    assert imported(["icae_tui.display.trace_filter"], ("textual", "rich")) == ""
