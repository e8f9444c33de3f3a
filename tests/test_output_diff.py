"""Case detail's diff of the two sides' output: rows, inline spans, bounds, literal text."""

from __future__ import annotations

from icae_tui.display.diff import MAX_LINES, RowKind, diff_outputs


def test_rows_and_inline_spans():
    d = diff_outputs("major=1\nminor=2\npatch=3\n", "major=1\nminor=20\nextra\npatch=3\n")
    kinds = [r.kind for r in d.rows]
    assert kinds == [RowKind.EQUAL, RowKind.CHANGED, RowKind.ONLY_DELIVERY, RowKind.EQUAL]
    changed = d.rows[1]
    assert changed.oracle == "minor=2" and changed.delivery == "minor=20"
    assert changed.delivery_spans == ((7, 8),) and changed.oracle_spans == ()
    assert not d.identical and d.changed == 2


def test_missing_lines_and_identical():
    d = diff_outputs("a\nb\n", "a\n")
    assert [r.kind for r in d.rows] == [RowKind.EQUAL, RowKind.ONLY_ORACLE]
    assert diff_outputs("x\n", "x\n").identical


def test_hostile_output_is_literal_and_bounded():
    evil = "\x1b[31m[bold]red\x00\n" * 3 + ("y" * 100_000) + "\n"
    d = diff_outputs("", evil + "z\n" * (MAX_LINES + 10))
    assert d.cut and len(d.rows) == MAX_LINES
    assert all(
        "\x1b" not in (r.delivery or "") and "\x00" not in (r.delivery or "") for r in d.rows
    )
    assert "[bold]" in d.rows[0].delivery  # markup stays text; the display shows it literally
    assert max(len(r.delivery or "") for r in d.rows) <= 450  # 400 and a "cut" mark
