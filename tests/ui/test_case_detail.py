"""The case detail, from stored results (no Docker): both sides' output compared with what
differs highlighted, side by side when wide and stacked when narrow, hostile output shown
literally; the case's input, fixtures and prep; rungs never reached; re-run, edit and shells
refused without a kept delivery; the edit form refusing invalid JSON; a re-run (its core
faked) shown in place, and whether it changed the verdict; the console's runs keeping their
delivery until their screen goes or the app quits."""

from __future__ import annotations

import asyncio

import pytest
from textual.widget import Widget
from textual.widgets import Input, Static, TextArea

from icae_tui.display.handle import NOT_KEPT, STORED, CaseContext
from icae_tui.display.sources import ReplaySource
from icae_tui.domain.events import BuildChecked, CaseFinished, CasesPlanned, PhaseChanged
from icae_tui.domain.results import CaseResult, FileChange, Verdict
from icae_tui.evaluation import rerun as rerun_core
from icae_tui.evaluation.differential import Sides
from icae_tui.evaluation.verdict import judge
from icae_tui.runs import kept as kept_module
from icae_tui.runs.config import RunConfig
from icae_tui.runs.kept import KeptImages
from icae_tui.sandbox.registry import DEFAULT_ENGINE
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.case_detail import CaseDetailScreen, EditCaseScreen
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.run import RunScreen
from icae_tui.ui.widgets.case_view import SPAN_STYLE
from tests.test_verdict import REF, TASK
from tests.test_verdict import side as outcome

from .helpers import DETAIL_CASE as CASE
from .helpers import (
    FakeRun,
    finish,
    open_screen,
    recorded_run,
    side_run,
    started,
    until,
    wrong,
)

SIDES = Sides(oracle_image="icae-oracle-mini:test", delivery_image="icae-delivery-mini:test")


def kept_context(task, **extra) -> CaseContext:
    """A case of a completed console run that kept its delivery (SIDES), as the case detail
    gets it from the run's handle."""
    return CaseContext(task=task, kept=KeptImages(task, SIDES), run_id="r1", gone="", **extra)


async def open_detail(app, pilot, result: CaseResult, **kw) -> CaseDetailScreen:
    return await open_screen(app, pilot, CaseDetailScreen(result, **kw))


def text_of(screen, selector: str) -> str:
    """What a part of the screen shows, as plain lines (its rendered strips)."""
    return "\n".join(line for line, _ in lines_of(screen.query_one(selector)))


def lines_of(widget: Widget) -> list[tuple[str, list]]:
    """Each line a widget draws: its text, and its segments (text, style)."""
    out = []
    for y in range(widget.size.height):
        segments = [(seg.text, seg.style) for seg in widget.render_line(y)]
        out.append(("".join(t for t, _ in segments).rstrip(), segments))
    return out


def styled(widget: Widget, style: str) -> list[str]:
    """The runs of text drawn in `style` (e.g. "bold reverse green")."""
    from rich.style import Style

    want = Style.parse(style)
    return [
        text
        for _, segments in lines_of(widget)
        for text, seg_style in segments
        if seg_style is not None
        and seg_style.reverse == want.reverse
        and seg_style.bold == want.bold
        and seg_style.color == want.color
    ]


# --- the diff ---------------------------------------------------------------------------------


async def test_wide_diff_side_by_side_highlights_what_differs_and_shows_output_literally(app):
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_detail(app, pilot, wrong())
        stdout = screen.query_one("#case-stdout")
        shown = text_of(screen, "#case-stdout")
        assert "stdout  2 of 3 rows differ" in shown
        header = next(line for line in shown.splitlines() if "oracle (golden)" in line)
        assert "delivery (agent)" in header  # one row holds both sides
        changed = next(line for line in shown.splitlines() if line.startswith("~ words=3"))
        assert changed.split()[-1] == "3"  # the delivery's counterpart on the same row
        legend = "abc"  # the legend's sample of each highlight
        assert styled(stdout, SPAN_STYLE["oracle"]) == ["words=", legend]  # what differs only
        assert styled(stdout, SPAN_STYLE["delivery"]) == [legend]  # "3" is in both
        # hostile output: escapes visible, markup literal, nothing interpreted
        literal = r"\x1b[31mred\x1b[0m [bold]markup[/] [link=http://x]l[/link]"
        assert shown.count(literal) == 2
        extra = next(line for line in shown.splitlines() if "extra [i]line[/i]" in line)
        assert extra.startswith("+ (no line)")  # only the delivery has it, marked
        stderr = text_of(screen, "#case-stderr")
        assert r"warn: \x1b[2Jcleared?" in stderr and "(no line)" in stderr


async def test_narrow_diff_is_stacked_oracle_above_delivery(app):
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_detail(app, pilot, wrong())
        stdout = screen.query_one("#case-stdout")
        lines = [line for line, _ in lines_of(stdout)]
        first = next(i for i, line in enumerate(lines) if line.startswith("− words=3"))
        assert lines[first + 1] == "+ 3"
        assert any(line.startswith("  \\x1b[31mred") for line in lines)  # equal: once, no mark
        assert any(
            line.startswith("+ extra [i]line[/i]") and "only the delivery has it" in line
            for line in lines
        )
        assert not any("oracle (golden)" in line and "delivery (agent)" in line for line in lines)
        assert styled(stdout, SPAN_STYLE["oracle"]) == ["words=", "abc"]  # and the legend's
        # one scroll for everything: the body scrolls, the sides do not scroll apart
        body = screen.query_one("#case-body")
        assert body.max_scroll_y > 0
        assert not screen.query(".case-side")


async def test_the_sides_exit_codes_times_and_side_effects_compared(app):
    result = wrong(
        delivery=side_run("3\n", exit_code=2, duration_s=1.5, timed_out=False, left_running=1,
                      changes=[FileChange(path="n.txt", change="added", sha256="ab" * 32)]),
    )  # fmt: skip
    result.oracle.duration_s = 0.031
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_detail(app, pilot, result)
        run = text_of(screen, "#case-run")
        assert "exit    0" in run and "differs" in run
        assert "31 ms" in run and "1.5s" in run
        assert "left 1 running" in run
        changes = text_of(screen, "#case-changes")
        assert "side effects  1 of 1 paths differ" in changes
        row = next(line for line in changes.splitlines() if "n.txt" in line)
        assert row.startswith("~") and "sha256 abababababab" in row


async def test_case_input_fixtures_and_prep_are_shown_literally(app, mini_with_files):
    ctx = CaseContext(task=mini_with_files, source="as this run has it", gone=NOT_KEPT)
    async with app.run_test(size=(120, 60)) as pilot:
        screen = await open_detail(app, pilot, wrong(), context=ctx)
        setup = text_of(screen, "#case-setup")
        assert "case  as this run has it" in setup
        assert '"op": "count"' in setup and '"text": "a b  c"' in setup
        assert "in/a.txt" in setup and "[red]alpha[/]" in setup and r"\x1b[2Jbeta" in setup
        assert "b.cfg" in setup and "k = v" in setup
        assert "prep     mkdir -p out" in setup
        assert "timeout  5 s" in setup


async def test_stored_case_without_its_task_says_what_is_missing(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, wrong())
        setup = text_of(screen, "#case-setup")
        assert "command  mini" in setup and "not available" in setup


async def test_ladder_shows_the_failed_rung_and_the_ones_not_reached(app):
    result = wrong(verdict=Verdict.WRONG_ANSWER, metrics={"exec": 0.0}, reason="exit code differs")
    result.delivery.exit_code = 2
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, result)
        summary = text_of(screen, "#case-summary")
        assert "exec ✘" in summary and "SP, EM, FM not reached" in summary
        assert "SP ✘" not in summary


async def test_case_detail_says_not_reached_for_rungs_that_never_ran(app):
    r = judge(TASK, REF, outcome(exit_code=0), outcome(exit_code=1))
    async with app.run_test(size=(160, 45)) as pilot:
        detail = CaseDetailScreen(r)
        await app.push_screen(detail)
        await pilot.pause()
        summary = str(detail.query_one("#case-summary", Static).render())
        assert "exec ✘" in summary and "SP, EM, FM not reached" in summary, summary
        assert "SP ✘" not in summary and "FM score" not in summary


# --- keys without a kept delivery -------------------------------------------------------------


@pytest.mark.parametrize("key", ["r", "e", "s", "o"])
async def test_keys_say_the_delivery_is_gone_for_a_stored_run(app, key):
    async with app.run_test(size=(120, 40)) as pilot:
        run = RunScreen(ReplaySource(recorded_run()))
        await app.push_screen(run)
        await until(pilot, lambda: run.results.verdicts()[1:2] == ["wrong_answer"])
        run.results.focus()
        run.results.move_cursor(row=1)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CaseDetailScreen))
        detail = app.screen
        assert detail.context().gone == STORED and detail.context().kept is None
        assert "the delivery is gone" in detail.note
        await pilot.press(key)
        await pilot.pause()
        assert app.screen is detail  # no form, no shell
        assert any("The delivery is gone: a stored run keeps none" in m for m in app.told)
        assert detail.rerun_worker is None


async def test_a_build_error_case_is_not_re_run(app, mini_with_files):
    result = wrong(verdict=Verdict.BUILD_ERROR, reason="build failed", metrics={})
    ctx = kept_context(mini_with_files)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, result, context=ctx)
        await pilot.press("r")
        await pilot.pause()
        assert screen.rerun_worker is None
        assert any("did not build" in m for m in app.told)


# --- a build error: the build's output, one key away (issue 38 item 10) ------------------------

BUILD_ERR = (
    "/workspace/x.js:3\n  const const a\nSyntaxError: Unexpected token 'const'\n"
    "\x1b[2J[bold]not markup[/] nul:\x00\n\nNode.js v18.20.4\n"
)
BUILD_REASON = "build failed (exit 1): SyntaxError: Unexpected token 'const'"


def failed_build(**extra) -> BuildChecked:
    fields = dict(ok=False, exit_code=1, reason=BUILD_REASON, stdout="npm \x1b[31mci[/]\n",
                  stderr=BUILD_ERR)  # fmt: skip
    return BuildChecked(**(fields | extra))


def build_error_case(case_id: str = CASE) -> CaseResult:
    return CaseResult(case_id=case_id, split="hidden", pattern="ops", command="mini",
                      verdict=Verdict.BUILD_ERROR, reason=BUILD_REASON)  # fmt: skip


async def test_a_build_error_case_shows_the_builds_output_literally(app):
    """Enter on a build_error row of a stored run: the detail finds the run's build check
    and shows its exit code, stdout and stderr, hostile bytes escaped, markup literal."""
    ids = ["public/upper#0", "hidden/ops#0"]
    events = [
        started(),
        PhaseChanged(phase="build"),
        failed_build(),
        CasesPlanned(case_ids=ids, patterns=["upper", "ops"], splits=["public", "hidden"]),
    ]
    events += [CaseFinished(result=build_error_case(i)) for i in ids]  # fmt: skip
    for seq, ev in enumerate(events, 1):
        ev.run_id, ev.seq, ev.ts = "test-run", seq, 1_700_000_000.0 + seq
    async with app.run_test(size=(120, 40)) as pilot:
        run = RunScreen(ReplaySource(events))
        await app.push_screen(run)
        await until(pilot, lambda: run.results.verdicts() == ["build_error"] * 2)
        run.results.focus()
        run.results.move_cursor(row=1)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CaseDetailScreen))
        detail = app.screen
        assert detail.result.case_id == "hidden/ops#0"
        shown = text_of(detail, "#case-build")
        assert "build output  exit 1" in shown
        assert "build stdout" in shown and r"npm \x1b[31mci[/]" in shown
        lines = shown.splitlines()
        err = lines.index("build stderr")
        assert lines[err + 1 : err + 7] == [
            "/workspace/x.js:3", "  const const a", "SyntaxError: Unexpected token 'const'",
            r"\x1b[2J[bold]not markup[/] nul:\x00", "", "Node.js v18.20.4",
        ]  # fmt: skip


async def test_a_build_error_says_an_empty_stream_and_a_missing_build_check(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, build_error_case(), build=failed_build(
            exit_code=2, stdout="only here\n", stderr=""))  # fmt: skip
        shown = text_of(screen, "#case-build")
        assert "build output  exit 2" in shown and "only here" in shown
        assert "build stderr  empty" in shown
        await pilot.press("escape")
        missing = await open_detail(app, pilot, build_error_case())  # no run, no build check
        assert "build output  not available" in text_of(missing, "#case-build")


async def test_a_case_that_ran_shows_no_build_section(app):
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, wrong(), build=failed_build())
        assert not screen.query_one("#case-build").display


# --- re-running (the core faked) -------------------------------------------------------------


@pytest.fixture
def fake_rerun(monkeypatch):
    """`rerun_case` that holds until released, then passes an `upper` input and gives the
    same result otherwise."""
    calls: list = []
    release = asyncio.Event()

    async def rerun_case(task, sides, ref, *, run_id, engine):
        assert engine == DEFAULT_ENGINE  # the run's engine, carried to its re-runs
        calls.append((ref, sides, run_id))
        await release.wait()
        if isinstance(ref.case.input, dict) and ref.case.input.get("op") == "upper":
            same = side_run("FINE\n")
            return wrong(verdict=Verdict.ACCEPTED, reason="identical", passed=True,
                         metrics=dict.fromkeys(("exec", "sp", "em", "fm"), 1.0),
                         oracle=same, delivery=same)  # fmt: skip
        return wrong()

    monkeypatch.setattr(rerun_core, "rerun_case", rerun_case)
    return calls, release


async def test_rerun_shows_re_running_then_the_result_and_whether_it_changed(
    app, mini_with_files, fake_rerun
):
    calls, release = fake_rerun
    ctx = kept_context(mini_with_files, source="as this run has it")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, wrong(), context=ctx)
        await pilot.press("r")
        await until(pilot, lambda: len(calls) == 1)
        assert screen.note.startswith("re-running…")
        await pilot.press("r")  # one at a time
        assert len(calls) == 1 and any("in progress" in m for m in app.told)
        release.set()
        await screen.rerun_worker.wait()
        await until(pilot, lambda: screen.pending is None)
        assert "re-run 1 (as it was): side_effects — the same verdict as the run" in screen.note
        ref, sides, run_id = calls[0]
        assert ref.id == CASE and sides == SIDES and run_id == "r1-rerun1"


async def test_edit_form_refuses_invalid_json_then_reruns_the_edited_input(
    app, mini_with_files, fake_rerun
):
    calls, release = fake_rerun
    release.set()
    ctx = kept_context(mini_with_files, source="as this run has it")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, wrong(), context=ctx)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditCaseScreen))
        form = app.screen
        area = form.query_one("#edit-input", TextArea)
        assert '"op": "count"' in area.text  # pre-filled with the case's input
        assert not form.query("#edit-command")  # a dispatcher case: its input only
        area.text = '{"op": "upper", "text": fine}'
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is form and not calls
        error = str(form.query_one("#edit-error", Static).render())
        assert "not valid JSON" in error and "line 1, column 25" in error
        assert "Nothing was run" in error
        area.text = '{"op": "upper", "text": "fine"}'
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.screen is screen and screen.rerun_worker is not None)
        await screen.rerun_worker.wait()
        await until(pilot, lambda: screen.pending is None)
        assert calls[0][0].case.input == {"op": "upper", "text": "fine"}
        assert calls[0][0].id == CASE
        assert "re-run 1 (edited input): accepted — changed: the run's was side_effects" in (
            screen.note
        )
        assert "accepted" in text_of(screen, "#case-summary")
        setup = text_of(screen, "#case-setup")
        assert "as run in re-run 1: edited input" in setup and '"op": "upper"' in setup
        # the form opens again on the edited input
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditCaseScreen))
        assert '"op": "upper"' in app.screen.query_one("#edit-input", TextArea).text
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        assert len(calls) == 1


async def test_a_command_case_edits_its_command_and_refuses_an_empty_one(
    app, mini_with_files, fake_rerun
):
    calls, release = fake_rerun
    release.set()
    ref = next(r for r in mini_with_files.cases if r.id == CASE)
    with_command = ref.model_copy(update={"case": ref.case.model_copy(update={"command": "mini"})})
    task = mini_with_files.model_copy(update={"cases": [with_command]})
    ctx = kept_context(task)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_detail(app, pilot, wrong(), context=ctx)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditCaseScreen))
        form = app.screen
        command = form.query_one("#edit-command", Input)
        assert command.value == "mini"
        command.value = "   "
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is form and "The command is empty" in form.error
        command.value = "mini --verbose"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: screen.rerun_worker is not None)
        await screen.rerun_worker.wait()
        await until(pilot, lambda: screen.pending is None)
        assert calls[0][0].case.command == "mini --verbose"
        assert "(edited command)" in screen.note


# --- shells ----------------------------------------------------------------------------------


@pytest.mark.docker  # the run's engine gives the shell's command (its `shell_argv`)
async def test_shell_without_docker_cli_says_so(app, mini_with_files, monkeypatch):
    from icae_tui.ui.screens import case_detail

    monkeypatch.setattr(case_detail.shutil, "which", lambda name: None)
    ctx = kept_context(mini_with_files)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(app, pilot, wrong(), context=ctx)
        await pilot.press("s")
        await pilot.pause()
        told = app.told[-1]
        assert "docker's command-line client is not installed" in told
        assert "icae-delivery-mini:test" in told and "-w /workspace" in told


@pytest.mark.docker
async def test_shell_where_the_terminal_cannot_be_handed_over_says_so(
    app, mini_with_files, monkeypatch
):
    from icae_tui.ui.screens import case_detail

    monkeypatch.setattr(case_detail.shutil, "which", lambda name: "/usr/bin/docker")
    ran: list = []
    monkeypatch.setattr(case_detail.subprocess, "call", lambda *a, **k: ran.append(a) or 0)
    ctx = kept_context(mini_with_files)
    async with app.run_test(size=(120, 40)) as pilot:  # headless: no terminal to give
        await open_detail(app, pilot, wrong(), context=ctx)
        await pilot.press("o")
        await pilot.pause()
        assert not ran
        assert "cannot hand its terminal over" in app.told[-1]
        assert "icae-oracle-mini:test" in app.told[-1] and "-w /opt/oracle" in app.told[-1]


async def test_shell_on_an_engine_that_cannot_be_opened_says_so(app, mini_with_files):
    ctx = CaseContext(task=mini_with_files, kept=KeptImages(mini_with_files, SIDES, "nowhere"),
                      run_id="r1", gone="")  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(app, pilot, wrong(), context=ctx)
        await pilot.press("s")
        await until(pilot, lambda: bool(app.told))
        assert "The run's engine cannot open a shell" in app.told[-1]
        assert "'nowhere'" in app.told[-1]


# --- the console keeps its runs' deliveries ---------------------------------------------------


class KeepingRun(FakeRun):
    """A finished run that kept its delivery, as the console starts it."""

    made: list[RunConfig] = []

    def __init__(self, config: RunConfig, store) -> None:
        super().__init__(config.task, script=self.finished)
        self.config = config
        KeepingRun.made.append(config)

    @staticmethod
    async def finished(run):
        outcome = finish(run)
        if run.config.keep_delivery:
            outcome.sides = SIDES
        return outcome


@pytest.fixture
def keeping(monkeypatch):
    KeepingRun.made = []
    discarded: list[Sides] = []

    async def discard_delivery(sides, *, engine):
        assert engine == DEFAULT_ENGINE
        discarded.append(sides)

    monkeypatch.setattr(kept_module, "Run", KeepingRun)
    monkeypatch.setattr(rerun_core, "discard_delivery", discard_delivery)
    return discarded


async def test_a_console_run_keeps_its_delivery_until_its_screen_goes(
    fixture_catalog, store, keeping
):
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(120, 40)) as pilot:
        run = app.start_run(RunConfig(task=fixture_catalog.tasks["mini"]))
        await until(pilot, lambda: run.outcome is not None and run.finished is not None)
        assert KeepingRun.made[0].keep_delivery
        await until(pilot, lambda: run.results.verdicts() == ["accepted"])
        run.results.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CaseDetailScreen))
        ctx = app.screen.context()
        assert ctx.kept == KeptImages(ctx.task, SIDES) and ctx.gone == ""
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is run)
        assert keeping == []  # the run's screen is still there
        await pilot.press("escape")  # leaving discards the delivery: asked first
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "discards its kept delivery" in app.screen.question
        assert (app.screen.yes, app.screen.no) == ("Leave", "Keep it")
        await pilot.press("n")  # kept: the run stays, and its delivery
        await until(pilot, lambda: app.screen is run)
        assert keeping == [] and run.handle.kept is not None
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.screen is not run and run not in app.screen_stack)
        await until(pilot, lambda: keeping == [SIDES])


async def test_quitting_discards_the_kept_deliveries(fixture_catalog, store, keeping):
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test(size=(120, 40)) as pilot:
        run = app.start_run(RunConfig(task=fixture_catalog.tasks["mini"]))
        await until(pilot, lambda: run.outcome is not None)
        await app.action_quit()
    assert keeping == [SIDES]


async def test_characters_that_differ_are_highlighted_on_both_sides(app):
    result = wrong(oracle=side_run("sum=10 ok\n"), delivery=side_run("sum=12 ko\n"))
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_detail(app, pilot, result)
        stdout = screen.query_one("#case-stdout")
        oracle = [t for t in styled(stdout, SPAN_STYLE["oracle"]) if t != "abc"]
        delivery = [t for t in styled(stdout, SPAN_STYLE["delivery"]) if t != "abc"]
        assert oracle and delivery
        assert "0" in "".join(oracle) and "2" in "".join(delivery)
        assert not any("sum=1" in t for t in oracle + delivery)  # the same part is not
