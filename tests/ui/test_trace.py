"""The agent trace on the run screen (icae_tui/ui/widgets/trace.py): a flush lays nothing out,
following and pausing, wrapping, search with next and previous, filters, copying, bounds.
Fake runs: the events go to the screen's view, `flush()` hands the lines to the trace."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from icae_tui.display.sources import ReplaySource
from icae_tui.display.trace_filter import TraceFilter
from icae_tui.display.view import TraceLine
from icae_tui.display.wording import not_held_line
from icae_tui.domain.events import AgentCommand, AgentOutput, AgentSaid, QuestionAsked
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.prompt import PromptScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.trace import MAX_LINES, MAX_ROWS, WRAP_INDENT, TraceLog

from .helpers import open_screen, started, until


async def open_trace(app: IcaeApp, pilot, *events) -> tuple[RunScreen, TraceLog]:
    screen = await open_screen(app, pilot, RunScreen(ReplaySource([])))
    for ev in (started(), *events):
        screen.handle_event(ev)
    screen.flush()
    await pilot.pause()
    screen.trace.focus()
    await pilot.pause()
    return screen, screen.trace


def output(n: int, start: int = 0, word: str = "line") -> AgentOutput:
    return AgentOutput(stream="stdout", text="".join(f"{word} {i}\n" for i in range(start, n)))


def in_view(trace: TraceLog) -> list[str]:
    top = round(trace.scroll_y)
    return list(trace.rows[top : top + trace.scrollable_content_region.height])


async def ask(pilot, key: str, text: str) -> None:
    """Press `key`, type `text` in the prompt it opens, Enter."""
    app = pilot.app
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, PromptScreen))
    await pilot.press("ctrl+a", "ctrl+k", *text)  # what was there before goes
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, PromptScreen))


async def test_a_flush_lays_nothing_out_and_takes_its_lines(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen, trace = await open_trace(app, pilot)
        asked: list[bool] = []  # what the trace asked of the screen: a layout, or a repaint
        refresh = trace.refresh

        def spy(*regions, layout: bool = False, **kw):
            asked.append(layout)
            return refresh(*regions, layout=layout, **kw)

        trace.refresh = spy  # type: ignore[method-assign]
        for i in range(20):
            screen.handle_event(output(500 * (i + 1), 500 * i))
            screen.flush()
            await pilot.pause()
        assert asked and not any(asked)  # repaints, never a layout of the screen
        assert trace.lines[-1] == "  out│ line 9999" and trace.pending == 0
        assert trace.is_vertical_scroll_end and trace.virtual_size.height == trace.row_count
        assert in_view(trace)[-1] == "  out│ line 9999"


async def test_paused_the_view_stays_on_its_lines_while_old_ones_go(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen, trace = await open_trace(app, pilot, output(MAX_LINES - 100))
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert not trace.following and trace.border_subtitle == "paused — f to follow"
        shown = in_view(trace)
        screen.handle_event(output(MAX_LINES + 400, MAX_LINES - 100))
        screen.flush()
        await pilot.pause()
        assert len(trace.lines) == MAX_LINES  # the oldest lines went
        assert in_view(trace) == shown  # ... and what is in view did not move
        await pilot.press("f")  # the run screen's key
        await pilot.pause()
        assert trace.following and trace.is_vertical_scroll_end
        assert in_view(trace)[-1] == f"  out│ line {MAX_LINES + 399}"


async def test_the_first_row_says_how_many_earlier_lines_are_not_held(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen, trace = await open_trace(app, pilot, output(300))
        assert trace.not_held == 0 and not trace.rows[0].startswith("…")
        screen.handle_event(output(MAX_LINES + 250, 300))  # the view keeps the last MAX_LINES
        screen.flush()
        await pilot.pause()
        skipped = screen.view.trace_total - MAX_LINES  # gone before the trace took them
        assert trace.not_held == skipped and len(trace.lines) == MAX_LINES
        assert trace.rows[0] == not_held_line(skipped)
        assert trace.rows[1] == f"  out│ line {MAX_LINES + 250 - MAX_LINES}"
        assert len(trace.rows) == trace.virtual_size.height == MAX_LINES + 1

        screen.handle_event(output(MAX_LINES + 350, MAX_LINES + 250))  # the trace drops 100
        screen.flush()
        await pilot.pause()
        assert trace.not_held == skipped + 100
        assert trace.rows[0] == "… " + f"{skipped + 100:,} earlier lines not held here" + (
            " — e exports the whole trace"
        )
        await pilot.press("home")  # all that is held can be scrolled to, the note first
        await pilot.pause()
        assert not trace.following
        assert in_view(trace)[:2] == [not_held_line(skipped + 100), "  out│ line 350"]
        assert "earlier lines not held" in str(trace.render_line(0).text)
        screen.handle_event(output(MAX_LINES + 360, MAX_LINES + 350))  # paused: the view stays
        screen.flush()
        await pilot.pause()
        assert in_view(trace)[1] == "  out│ line 360" and trace.not_held == skipped + 110

        trace.set_filter(TraceFilter(text="line 4"))  # filtered: only the lines not kept count
        await pilot.pause()
        assert trace.rows[0] == not_held_line(skipped + 110)
        assert all("line 4" in row for row in trace.rows[1:])


async def test_wide_characters_wrap_within_the_width(app):
    said = "漢字かな交じり文 " * 30
    async with app.run_test(size=(80, 30)) as pilot:
        _, trace = await open_trace(app, pilot, AgentSaid(text=said))
        width = trace.scrollable_content_region.width
        rows = list(trace.rows)
        rows = rows[next(i for i, row in enumerate(rows) if row.startswith("agent › ")) :]
        assert len(rows) > 3 and all(cell_len(row) <= width for row in rows)
        assert "".join(row.removeprefix(WRAP_INDENT) for row in rows[1:]) in said


async def test_search_marks_the_hits_and_n_and_shift_n_walk_them(app):
    async with app.run_test(size=(120, 30)) as pilot:
        lines = AgentOutput(
            stream="stdout",
            text="".join(
                f"{'needle [bold]x[/] here' if i in (10, 200, 390) else f'hay {i}'}\n"
                for i in range(400)
            ),
        )
        _, trace = await open_trace(app, pilot, lines)
        assert trace.following

        await ask(pilot, "slash", "needle [bold]")  # literal text, markup and all
        b = trace.buffer
        hit_text = "  out│ needle [bold]x[/] here"
        assert b.hits == 3 and not trace.following  # going to a hit pauses following
        assert b.hit_number() == 3  # following, the search starts from the end: the last hit
        assert hit_text in in_view(trace)
        assert trace.border_subtitle is not None and "3/3" in trace.border_subtitle
        assert "paused" in trace.border_subtitle

        await pilot.press("N")
        await pilot.pause()
        assert b.hit_number() == 2 and hit_text in in_view(trace)
        await pilot.press("N")
        await pilot.pause()
        assert b.hit_number() == 1
        top = round(trace.scroll_y)
        row = trace.buffer.row(trace.buffer.first_row(b.current or 0) or 0)
        assert top <= trace.buffer.first_row(row.seq) < top + trace.size.height
        await pilot.press("n")
        await pilot.pause()
        assert b.hit_number() == 2
        await pilot.press("n", "n")
        await pilot.pause()
        assert b.hit_number() == 1  # round the end

        # the hit is drawn marked: the current one in its own style
        y = (b.first_row(b.current or 0) or 0) - round(trace.scroll_y)
        strip = trace.render_line(y)
        marked = [seg.text for seg in strip if seg.style and seg.style.bgcolor is not None]
        assert "needle [bold]" in "".join(marked)

        await ask(pilot, "slash", "")  # an empty search clears it
        assert b.query == "" and b.hits == 0
        assert trace.border_subtitle == "paused — f to follow"


async def test_v_hides_command_output_and_shows_only_the_agent(app):
    async with app.run_test(size=(120, 30)) as pilot:
        _, trace = await open_trace(
            app,
            pilot,
            AgentCommand(command="make test"),
            output(30),
            AgentSaid(text="all good"),
            QuestionAsked(question_id=1, text="Which format?", remaining_before=0),
        )
        everything, lines = list(trace.rows), list(trace.lines)
        assert any(row.startswith("  out│ ") for row in everything)

        await pilot.press("v")
        await pilot.pause()
        rows = list(trace.rows)
        assert rows and not any(row.startswith("  out│ ") for row in rows)
        assert "$ make test" in rows and "agent › all good" in rows
        assert trace.border_subtitle == "no command output"
        assert trace.lines == lines  # hidden, not gone

        await pilot.press("v")
        await pilot.pause()
        rows = list(trace.rows)
        assert "$ make test" in rows and "agent › all good" in rows
        assert any("Which format?" in row for row in rows)
        assert not any(row.startswith("run ") for row in rows)  # the run's line is not the agent's

        await pilot.press("v")
        await pilot.pause()
        assert list(trace.rows) == everything and not trace.border_subtitle


async def test_a_text_filter_shows_only_the_lines_with_it(app):
    async with app.run_test(size=(120, 30)) as pilot:
        screen, trace = await open_trace(app, pilot, output(100))
        await ask(pilot, "ampersand", "line 4")
        assert list(trace.rows) == ["  out│ line 4", *(f"  out│ line {i}" for i in range(40, 50))]
        screen.handle_event(output(406, 398))
        screen.flush()
        await pilot.pause()
        assert list(trace.rows)[-6:] == [f"  out│ line {i}" for i in range(400, 406)]
        assert "  out│ line 398" not in list(trace.rows)  # new lines are filtered too
        assert trace.border_subtitle == "only “line 4”"
        await ask(pilot, "ampersand", "")
        assert trace.row_count >= 108


async def test_y_copies_the_lines_in_view_and_shift_y_every_line(app, tmp_path: Path):
    async with app.run_test(size=(120, 30)) as pilot:
        told: list[str] = []
        _, trace = await open_trace(app, pilot, output(200))
        trace.notify = lambda message, **kw: told.append(message)  # type: ignore[method-assign]
        trace.save_dir = tmp_path

        await pilot.press("y")
        await pilot.pause()
        view = [row for row in in_view(trace)]
        assert app.clipboard == "\n".join(view)
        assert app.clipboard.endswith("  out│ line 199")
        saved = sorted(tmp_path.glob("icae-trace-*.txt"))
        assert len(saved) == 1 and saved[0].read_text() == app.clipboard + "\n"
        assert "Copied the lines in view" in told[-1] and str(saved[0]) in told[-1]

        await pilot.press("Y")
        await pilot.pause()
        assert app.clipboard == "\n".join(trace.lines)
        assert app.clipboard.count("\n") == len(trace.lines) - 1
        assert "the whole trace" in told[-1] and len(list(tmp_path.glob("*.txt"))) == 2

        await pilot.press("v")  # filtered: what is shown
        await pilot.pause()
        await pilot.press("Y")
        await pilot.pause()
        assert "out│" not in app.clipboard and "every line shown" in told[-1]


async def test_copying_says_so_when_the_file_cannot_be_written(app, tmp_path: Path):
    async with app.run_test(size=(120, 30)) as pilot:
        told: list[str] = []
        _, trace = await open_trace(app, pilot, output(5))
        trace.notify = lambda message, **kw: told.append(message)  # type: ignore[method-assign]
        trace.save_dir = tmp_path / "missing"
        assert trace.copy("all") is None
        assert app.clipboard.endswith("line 4") and "not saved" in told[-1]


async def test_a_hundred_thousand_lines_keep_at_most_the_bounded_rows(app):
    async with app.run_test(size=(100, 30)) as pilot:
        screen, trace = await open_trace(app, pilot)
        long = "word " * 60  # several rows each
        trace.add(TraceLine("output", f"  out│ {i} {long}") for i in range(100_000))
        await pilot.pause()
        assert len(trace.lines) <= MAX_LINES
        assert len(trace.rows) <= MAX_ROWS and trace.virtual_size.height == len(trace.rows)
        assert trace.lines[-1].startswith("  out│ 99999 ")
        assert trace.is_vertical_scroll_end
        assert in_view(trace)[-1].startswith(WRAP_INDENT + "word")


# --- following and wrapping ------------------------------------------------------------------


def follow_label(screen: RunScreen) -> str:
    return screen.active_bindings["f"].binding.description


async def test_follow_shows_its_state_and_scrolling_up_pauses_it(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource([])))
        trace = screen.trace
        screen.handle_event(started())
        screen.handle_event(output(300))
        screen.flush()
        await pilot.pause()
        assert trace.is_vertical_scroll_end
        assert follow_label(screen) == "Follow on"
        assert not trace.border_subtitle

        trace.focus()
        await pilot.press("pageup")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert not trace.auto_scroll and not trace.is_vertical_scroll_end
        assert trace.border_subtitle == "paused — f to follow"
        assert follow_label(screen) == "Follow off"
        y = trace.scroll_y
        screen.handle_event(output(600, 300))
        screen.flush()
        await pilot.pause()
        assert trace.scroll_y == y  # paused: new lines do not move the view

        await pilot.press("f")
        await pilot.pause()
        assert trace.auto_scroll and trace.is_vertical_scroll_end
        assert follow_label(screen) == "Follow on" and not trace.border_subtitle
        await pilot.press("f")
        await pilot.pause()
        assert not trace.auto_scroll and follow_label(screen) == "Follow off"
        assert trace.border_subtitle == "paused — f to follow"


async def test_long_lines_wrap_to_the_trace_width(app):
    said = " ".join(f"word{i}" for i in range(120))
    logical = "agent › " + said
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_screen(app, pilot, RunScreen(ReplaySource([])))
        trace = screen.trace
        screen.handle_event(started())
        screen.handle_event(AgentSaid(text=said))
        screen.flush()
        await pilot.pause()

        def rows_of_said() -> list[str]:
            rows = list(trace.rows)
            first = next(i for i, row in enumerate(rows) if row.startswith("agent › "))
            rest = [row for row in rows[first + 1 :] if row.startswith(WRAP_INDENT)]
            return [rows[first], *rest]

        width = trace.scrollable_content_region.width
        assert logical in trace.lines  # the trace's lines stay whole
        rows = rows_of_said()
        assert len(rows) > 1 and all(cell_len(row) <= width for row in trace.rows)
        assert rows[0] + "".join(row[len(WRAP_INDENT) :] for row in rows[1:]) == logical
        assert trace.max_scroll_x == 0

        await pilot.resize_terminal(160, 40)
        await until(pilot, lambda: trace.scrollable_content_region.width > width)
        await pilot.pause()
        wider = trace.scrollable_content_region.width
        assert all(cell_len(row) <= wider for row in trace.rows)
        assert len(rows_of_said()) < len(rows)  # wrapped again, to the new width
