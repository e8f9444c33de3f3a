"""The parts of a case's detail, drawn for the width they get: how each side ran (exit code,
time, bytes), the two sides' stdout and stderr compared line by line (`diff_outputs`), their
side effects compared path by path, and what the case is (input, command, fixtures, prep).

From `WIDE` columns on, the oracle and the delivery stand side by side (one row per line,
so a line and its counterpart stay level however they wrap); narrower, they are stacked: the
oracle's line (−) above the delivery's (+). Inside a changed line the characters that differ
are highlighted; a line that only one side has is marked in the gutter and named. Everything
from a case, an agent or a delivery is literal text (`safe`, `printable`): never markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from icae_tui.display.diff import Diff, DiffRow, RowKind, Span, diff_outputs
from icae_tui.display.wording import seconds
from icae_tui.domain.results import CaseResult, FileChange, SideRun
from icae_tui.domain.task import CaseRef
from icae_tui.ui.text import exit_text, safe

WIDE = 100  # columns from which the two sides stand side by side
ORACLE = "oracle (golden)"
DELIVERY = "delivery (agent)"

HEADING = "bold cyan"
MUTED = "dim"
NOTE = "dim italic"
SIDE_STYLE = {"oracle": "green", "delivery": "red"}  # the side's own line
SPAN_STYLE = {"oracle": "bold reverse green", "delivery": "bold reverse red"}  # what differs
GUTTER = {
    RowKind.EQUAL: (" ", ""),
    RowKind.CHANGED: ("~", "bold yellow"),
    RowKind.ONLY_ORACLE: ("−", "bold green"),
    RowKind.ONLY_DELIVERY: ("+", "bold red"),
}
ONLY = {
    RowKind.ONLY_ORACLE: "only the oracle has it",
    RowKind.ONLY_DELIVERY: "only the delivery has it",
}

FIXTURE_LINES = 20  # of each fixture's content shown
FIXTURE_CHARS = 2000
INPUT_CHARS = 20_000  # of the case's input, as JSON


class ByWidth:
    """A renderable that is `wide()` from `min_width` columns on, else `narrow()`: Textual
    lays it out at the width it gets (its height too), so a resize redraws the right one."""

    def __init__(
        self,
        wide: Callable[[], RenderableType],
        narrow: Callable[[], RenderableType],
        min_width: int = WIDE,
    ) -> None:
        self.wide, self.narrow, self.min_width = wide, narrow, min_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.wide() if options.max_width >= self.min_width else self.narrow()


def part(text: str, style: str = "") -> Text:
    """`text` in `style`, as a span: what is appended to it keeps its own style (a `Text`'s
    base style would colour everything appended)."""
    return Text().append(text, style=style)


def heading(label: str, detail: Text | str = "") -> Text:
    text = part(label, HEADING)
    if detail:
        text.append("  ")
        text.append_text(detail if isinstance(detail, Text) else Text(detail, style=MUTED))
    return text


# --- how each side ran ------------------------------------------------------------------------


def _notes(side: SideRun) -> str:
    notes = []
    if side.timed_out:
        notes.append("timed out")
    if side.oom_killed:
        notes.append("out of memory")
    if side.pids_capped:
        notes.append("hit the process limit")
    if side.overflowed:
        notes.append("output over the cap")
    if side.left_running:
        notes.append(f"left {side.left_running} running")
    return ", ".join(notes)


def _bytes(count: int, kept: str) -> str:
    shown = len(kept.encode())
    return f"{count} B" + (f" (first {shown} B kept)" if count > shown else "")


def run_table(r: CaseResult) -> Table:
    """Exit code, duration, output sizes and what went wrong, both sides in columns."""
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column("", style=MUTED, no_wrap=True)
    table.add_column(ORACLE, header_style="bold", overflow="fold")
    table.add_column(DELIVERY, header_style="bold", overflow="fold")
    table.add_column("", overflow="fold")
    o, d = r.oracle, r.delivery
    missing = Text("did not run", style=NOTE)

    def cells(fn: Callable[[SideRun], Text | str]) -> list[Text | str]:
        return [fn(o) if o is not None else missing, fn(d) if d is not None else missing]

    verdict: Text | str = ""
    if o is not None and d is not None:
        same = o.exit_code == d.exit_code
        verdict = Text("same", style=MUTED) if same else Text("differs", style="bold yellow")
    table.add_row("exit", *cells(lambda s: exit_text(s.exit_code, s.timed_out)), verdict)
    table.add_row("time", *cells(lambda s: seconds(s.duration_s)), "")
    table.add_row("stdout", *cells(lambda s: _bytes(s.stdout_bytes, s.stdout)), "")
    table.add_row("stderr", *cells(lambda s: _bytes(s.stderr_bytes, s.stderr)), "")
    if (o is not None and _notes(o)) or (d is not None and _notes(d)):
        table.add_row("notes", *cells(lambda s: Text(_notes(s) or "—", style="yellow")), "")
    return table


# --- stdout and stderr --------------------------------------------------------------------------


def marked(line: str | None, spans: Iterable[Span], side: str, kind: RowKind) -> Text:
    """One side's line of a row: literal, its differing characters highlighted."""
    if line is None:
        return Text("(no line)", style=NOTE)
    if kind is RowKind.EQUAL:
        return Text(line)
    if not line:
        return Text("(empty line)", style=NOTE)
    text = part(line, SIDE_STYLE[side])
    for start, end in spans:  # a line only one side has: its colour and its gutter mark
        text.stylize(SPAN_STYLE[side], start, end)
    return text


def _gutter(kind: RowKind) -> Text:
    mark, style = GUTTER[kind]
    return Text(mark, style=style)


def diff_table(diff: Diff) -> Table:
    """Side by side: a row per line pair, the gutter saying equal (blank), changed (~), only
    in the oracle's (−) or only in the delivery's (+)."""
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), expand=True)
    table.add_column("", width=1, no_wrap=True)
    table.add_column(ORACLE, ratio=1, overflow="fold", header_style="bold green")
    table.add_column(DELIVERY, ratio=1, overflow="fold", header_style="bold red")
    for row in diff.rows:
        table.add_row(
            _gutter(row.kind),
            marked(row.oracle, row.oracle_spans, "oracle", row.kind),
            marked(row.delivery, row.delivery_spans, "delivery", row.kind),
        )
    return table


def _stacked_lines(row: DiffRow) -> list[tuple[Text, Text]]:
    if row.kind is RowKind.EQUAL:
        return [(Text(" "), Text(row.oracle or ""))]
    lines = []
    if row.oracle is not None:
        text = Text().append_text(marked(row.oracle, row.oracle_spans, "oracle", row.kind))
        if row.kind is RowKind.ONLY_ORACLE:
            text.append(f"  ({ONLY[row.kind]})", style=NOTE)
        lines.append((Text("−", style="bold green"), text))
    if row.delivery is not None:
        text = Text().append_text(marked(row.delivery, row.delivery_spans, "delivery", row.kind))
        if row.kind is RowKind.ONLY_DELIVERY:
            text.append(f"  ({ONLY[row.kind]})", style=NOTE)
        lines.append((Text("+", style="bold red"), text))
    return lines


def diff_stacked(diff: Diff) -> Table:
    """Stacked: an equal line once; a changed line as the oracle's (−) above the
    delivery's (+); a line only one side has, marked and named."""
    table = Table.grid(padding=(0, 1, 0, 0), expand=True)
    table.add_column(width=1, no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for row in diff.rows:
        for gutter, text in _stacked_lines(row):
            table.add_row(gutter, text)
    return table


def _ending_note(oracle: str, delivery: str) -> str:
    if oracle.endswith("\n") != delivery.endswith("\n"):
        ends = "the oracle's" if oracle.endswith("\n") else "the delivery's"
        return f"the same lines; only {ends} ends with a newline"
    return "the same lines; the bytes differ (line endings)"


def stream_view(name: str, o: SideRun | None, d: SideRun | None) -> list[RenderableType]:
    """A stream's heading (identical, how many lines differ, what was cut) and its diff."""
    if o is None or d is None:
        who = " and ".join(n for n, s in (("the oracle", o), ("the delivery", d)) if s is None)
        return [heading(name, Text(f"not compared: {who} did not run", style=NOTE))]
    a, b = getattr(o, name), getattr(d, name)
    if not a and not b:
        return [heading(name, "empty on both sides")]
    diff = diff_outputs(a, b)
    lines = len(diff.rows)
    if diff.identical:
        detail = part(f"identical · {lines} line{'s' if lines != 1 else ''}", MUTED)
    elif diff.changed == 0:
        detail = part(_ending_note(a, b), "yellow")
    else:
        detail = part(f"{diff.changed} of {lines} rows differ", "bold yellow")
    if diff.cut:
        detail.append("  (cut: the first rows only)", style="yellow")
    for side_name, side in (("oracle", o), ("delivery", d)):
        total, kept = getattr(side, f"{name}_bytes"), getattr(side, name)
        if total > len(kept.encode()):
            detail.append(f"  ({side_name}: the first {len(kept.encode())} of {total} B)",
                          style="yellow")  # fmt: skip
    parts: list[RenderableType] = [heading(name, detail)]
    if not lines:
        return parts
    if diff.changed:
        parts.append(
            ByWidth(
                lambda: Group(diff_table(diff), diff_legend(wide=True)),
                lambda: Group(diff_stacked(diff), diff_legend(wide=False)),
            )
        )
    else:
        parts.append(ByWidth(lambda: diff_table(diff), lambda: diff_stacked(diff)))
    return parts


def diff_legend(*, wide: bool) -> Text:
    """What the marks mean: side by side, the gutter says how a row differs; stacked, whose
    line it is."""
    if wide:
        text = part("~ changed  ", MUTED)
        text.append("−", style="bold green")
        text.append(" only the oracle's  ", style=MUTED)
        text.append("+", style="bold red")
        text.append(" only the delivery's  ", style=MUTED)
    else:
        text = part("−", "bold green")
        text.append(" the oracle's line  ", style=MUTED)
        text.append("+", style="bold red")
        text.append(" the delivery's  ", style=MUTED)
    text.append("abc", style=SPAN_STYLE["oracle"])
    text.append(" ", style=MUTED)
    text.append("abc", style=SPAN_STYLE["delivery"])
    text.append(" what differs", style=MUTED)
    return text


# --- side effects ---------------------------------------------------------------------------


def change_text(c: FileChange | None) -> Text:
    if c is None:
        return Text("(no change)", style=NOTE)
    text = part(f"{c.change} {c.type}", "yellow")
    if c.type == "file":
        text.append(f" {c.size} B", style=MUTED)
    if c.sha256:
        text.append(f" sha256 {c.sha256[:12]}", style=MUTED)
    if c.target:
        text.append(" → ")
        text.append_text(safe(c.target))
    return text


def _same(a: FileChange, b: FileChange) -> bool:
    return (a.change, a.type, a.sha256, a.target) == (b.change, b.type, b.sha256, b.target)


def change_rows(o: SideRun, d: SideRun) -> list[tuple[str, FileChange | None, FileChange | None]]:
    """Every path either side changed, in order, with each side's change (or None)."""
    mine = {c.path: c for c in o.changes}
    theirs = {c.path: c for c in d.changes}
    paths = sorted(set(mine) | set(theirs))
    return [(p, mine.get(p), theirs.get(p)) for p in paths]


def _row_mark(a: FileChange | None, b: FileChange | None) -> Text:
    if a is not None and b is not None:
        return Text("=", style=MUTED) if _same(a, b) else Text("~", style="bold yellow")
    return Text("−", style="bold green") if a is not None else Text("+", style="bold red")


def changes_view(o: SideRun | None, d: SideRun | None) -> list[RenderableType]:
    """Both sides' file changes, path by path: the same, different, or one side's only."""
    if o is None or d is None:
        return [heading("side effects", Text("not compared: a side did not run", style=NOTE))]
    rows = change_rows(o, d)
    if not rows and not o.changes_total and not d.changes_total:
        return [heading("side effects", "none on either side")]
    differing = sum(not (a and b and _same(a, b)) for _, a, b in rows)
    if differing:
        detail = part(f"{differing} of {len(rows)} paths differ", "bold yellow")
    else:
        detail = part(f"identical · {len(rows)} path{'s' if len(rows) != 1 else ''}", MUTED)
    for side_name, side in (("oracle", o), ("delivery", d)):
        if side.changes_total > len(side.changes):
            more = side.changes_total - len(side.changes)
            detail.append(f"  ({side_name}: … {more} more not kept, {side.changes_total} in all,"
                          f" sha256 {side.changes_sha256[:12]})", style="yellow")  # fmt: skip

    def wide() -> Table:
        table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0))
        table.add_column("", width=1, no_wrap=True)
        table.add_column("path", overflow="fold", header_style="bold", ratio=2)
        table.add_column(ORACLE, overflow="fold", header_style="bold green", ratio=2)
        table.add_column(DELIVERY, overflow="fold", header_style="bold red", ratio=2)
        for path, a, b in rows:
            table.add_row(_row_mark(a, b), safe(path), change_text(a), change_text(b))
        return table

    def narrow() -> Table:
        table = Table.grid(padding=(0, 1, 0, 0), expand=True)
        table.add_column(width=1, no_wrap=True)
        table.add_column(ratio=1, overflow="fold")
        for path, a, b in rows:
            table.add_row(_row_mark(a, b), safe(path, "bold"))
            table.add_row(Text(""), part("oracle    ", MUTED) + change_text(a))
            table.add_row(Text(""), part("delivery  ", MUTED) + change_text(b))
        return table

    return [heading("side effects", detail), ByWidth(wide, narrow)]


# --- what the case is -------------------------------------------------------------------------


def input_json(value: Any) -> str:
    """The case's input as the edit form and the detail show it: indented JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _field(text: Text, label: str) -> None:
    text.append(f"\n{label:<9}", style=MUTED)


def case_setup_text(
    command: str,
    ref: CaseRef | None,
    *,
    kind: str = "",
    timeout_s: float | None = None,
    source: str = "",
    missing: str = "",
) -> Text:
    """The case: its command (as run), input, fixtures and prep; `source` says where the
    definition comes from, `missing` why it is not there."""
    text = heading("case", Text(source, style=NOTE) if source else "")
    _field(text, "command")
    text.append_text(safe(command, lines=True, limit=2000))
    if kind == "dispatcher" and ref is not None and ref.case.command is None:
        text.append("  (the input below: one JSON object on its stdin)", style=NOTE)
    if ref is None:
        text.append("\n")
        text.append(missing or "input, fixtures and prep: not available", style=NOTE)
        return text
    case = ref.case
    _field(text, "input")
    if case.input is None:
        text.append("(none)", style=NOTE)
    else:
        body = safe(input_json(case.input), lines=True, limit=INPUT_CHARS)
        if "\n" in body.plain:
            body = Text().join(Text("\n  ") + line for line in body.split("\n"))
        text.append_text(body)
    _field(text, "fixtures")
    if not case.files:
        text.append("(none)", style=NOTE)
    for path, content in case.files.items():
        text.append("\n  ")
        text.append_text(safe(path, "bold"))
        text.append(f"  {len(content.encode())} B", style=MUTED)
        lines = content.splitlines()
        shown = "\n".join(lines[:FIXTURE_LINES])
        for line in safe(shown, lines=True, limit=FIXTURE_CHARS).split("\n"):
            text.append("\n    ")
            text.append_text(line)
        if len(lines) > FIXTURE_LINES:
            text.append(f"\n    … {len(lines) - FIXTURE_LINES} more lines", style=NOTE)
    _field(text, "prep")
    if case.prep:
        text.append_text(safe(case.prep, lines=True, limit=2000))
    else:
        text.append("(none)", style=NOTE)
    if timeout_s is not None:
        _field(text, "timeout")
        text.append(f"{timeout_s:g} s")
    return text
