"""A case's detail: how both sides ran, their stdout and stderr compared (what differs
highlighted), their side effects compared, what the case is (input, command, fixtures, prep)
and the verdict ladder (which rung failed, which were never reached) — in one scroll. A
`build_error` case shows first the build's exit code, stdout and stderr (the run's
BuildChecked event, found in the handle's events), literally.

Everything it shows and does beyond the result comes from the run's handle
(display/handle.py: `RunHandle.case_context`). After a live run started from the console,
the run keeps its frozen delivery, and the case can be tried again on it: `r` re-runs it as
it was, `e` with an edited command or input, in a worker, and the screen then shows the new
result and whether it changed. `s` and `o` open a shell in the delivery's or the oracle's
image: the console steps aside (`App.suspend`) for the handle's `docker run -it` and comes
back when the shell ends. For a stored run, or a live one that has not completed, these keys
say why they cannot.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static, TextArea
from textual.worker import Worker, WorkerState

from icae_tui.display.handle import CaseContext, RunHandle, Side
from icae_tui.display.wording import ladder_segments
from icae_tui.domain.events import BuildChecked
from icae_tui.domain.results import CaseResult, MetricSpec, Verdict
from icae_tui.domain.task import CaseRef
from icae_tui.errors import ConfigError, InfraError
from icae_tui.ui.keymap import keyed
from icae_tui.ui.text import exit_text, safe, segments, verdict_text
from icae_tui.ui.widgets.case_view import (
    MUTED,
    NOTE,
    case_setup_text,
    changes_view,
    heading,
    input_json,
    part,
    run_table,
    stream_view,
)
from icae_tui.ui.widgets.footer import Footer

RERUN_GROUP = "icae-case-rerun"


def case_summary_text(r: CaseResult, metrics: Sequence[MetricSpec] = ()) -> Text:
    text = Text()
    text.append_text(safe(r.case_id, "bold"))
    text.append("  ")
    text.append_text(verdict_text(r.verdict))
    text.append("  ")
    text.append_text(safe(r.reason, limit=1000))
    text.append("\npattern ", style="dim")
    text.append_text(safe(r.pattern))
    text.append("  ·  split ", style="dim")
    text.append_text(safe(r.split))
    text.append("  ·  ", style="dim")
    segments(ladder_segments(r, metrics), text)  # rungs reached, the rest "not reached"; others
    return text


def build_view(build: BuildChecked | None) -> list[RenderableType]:
    """A failed build's output, under its reason: its exit code, then its stdout and stderr as
    the run kept them (each stream's tail), literally; an empty stream is said to be empty."""
    if build is None:
        return [heading("build output", Text("not available: the run's build check is not at "
                                             "hand", style=NOTE))]  # fmt: skip
    detail = part("exit ", MUTED)
    detail.append_text(exit_text(build.exit_code))
    detail.append("  ·  as the run kept it (each stream's tail)", style=MUTED)
    parts: list[RenderableType] = [heading("build output", detail)]
    for name, body in (("stdout", build.stdout), ("stderr", build.stderr)):
        parts.append(Text(""))
        if body:
            parts += [heading(f"build {name}"), safe(body.rstrip("\n"), lines=True)]
        else:
            parts.append(heading(f"build {name}", "empty"))
    return [*parts, Text("")]


def outputs_differ(a: CaseResult, b: CaseResult) -> bool:
    """Whether the delivery did something else in `b` than in `a` (exit, output, changes)."""
    x, y = a.delivery, b.delivery
    if x is None or y is None:
        return (x is None) != (y is None)
    fields = ("exit_code", "stdout_sha256", "stderr_sha256", "changes_sha256")
    if all(getattr(x, f) for f in fields[1:]) and all(getattr(y, f) for f in fields[1:]):
        return any(getattr(x, f) != getattr(y, f) for f in fields)
    return (x.exit_code, x.stdout, x.stderr, x.changes) != (y.exit_code, y.stdout, y.stderr,
                                                            y.changes)  # fmt: skip


# --- the edit form ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseEdit:
    """What the operator changed: the command (None: as it was) and the input."""

    command: str | None
    input: Any


class EditCaseScreen(ModalScreen[CaseEdit | None]):
    """The case's command (command tasks) and its input as JSON, to re-run it edited. The
    input must parse as JSON and a command must not be empty: else it says why and stays."""

    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "edit_case",
        [
            Binding("escape", "cancel", "Cancel"),
            Binding("ctrl+s", "submit", "Re-run", priority=True),
        ],
    )

    def __init__(self, ref: CaseRef, kind: str, command: str = "") -> None:
        """`ref`: the case as last run; `command`: the line it runs when it has none of its
        own (a command task's tool)."""
        super().__init__()
        self.ref = ref
        self.edits_command = kind == "command" or ref.case.command is not None
        self.command = ref.case.command or command
        self.error = ""

    def compose(self) -> ComposeResult:
        case = self.ref.case
        with Vertical(id="edit-dialog") as dialog:
            dialog.border_title = f"Re-run {self.ref.id} edited"
            if self.edits_command:
                yield Static(Text("command (sh -c)", style="bold cyan"))
                yield Input(self.command, id="edit-command")
            what = (
                "input — JSON: a string is written to stdin, null writes nothing"
                if self.edits_command
                else "input — JSON: written to the tool's stdin"
            )
            yield Static(Text(what, style="bold cyan"))
            yield TextArea(input_json(case.input), id="edit-input", soft_wrap=True)
            yield Static(id="edit-error")
            with Horizontal(id="edit-buttons"):
                yield Button("Re-run", variant="primary", id="edit-run")
                yield Button("Cancel", id="edit-cancel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#edit-error", Static).display = False
        first = "#edit-command" if self.edits_command else "#edit-input"
        self.query_one(first).focus()

    def refuse(self, message: str) -> None:
        self.error = message
        error = self.query_one("#edit-error", Static)
        error.update(Text(message, style="bold red"))
        error.display = True

    def action_submit(self) -> None:
        command = None
        if self.edits_command:
            command = self.query_one("#edit-command", Input).value.strip()
            if not command:
                self.refuse("The command is empty. Nothing was run.")
                return
        text = self.query_one("#edit-input", TextArea).text
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            self.refuse(f"The input is not valid JSON: {err.msg} (line {err.lineno}, column "
                        f"{err.colno}). Nothing was run.")  # fmt: skip
            return
        self.dismiss(CaseEdit(command, value))

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "edit-run":
            self.action_submit()
        else:
            self.dismiss(None)


# --- the case detail ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """A re-run under way: its number, how the case was changed, the case as run."""

    number: int
    how: str
    ref: CaseRef


class CaseDetailScreen(ModalScreen[None]):
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "case",
        [
            Binding("escape,q,enter", "close", "Close"),
            Binding("r", "rerun", "Re-run"),
            Binding("e", "edit", "Edit & re-run"),
            Binding("s", "shell('delivery')", "Shell: delivery"),
            Binding("o", "shell('oracle')", "Shell: oracle"),
        ],
    )

    def __init__(
        self,
        result: CaseResult,
        handle: RunHandle | None = None,
        *,
        context: CaseContext | None = None,
        metrics: Sequence[MetricSpec] = (),
        build: BuildChecked | None = None,
    ) -> None:
        """`handle`: the run the case is from (what it kept is asked when needed);
        `context`: a fixed one instead (tests, or a case without its run); `metrics`: the
        run's metric specs, for the ladder line; `build`: the run's build check, shown for a
        `build_error` case (None: looked for in the handle's events)."""
        super().__init__()
        self.original = result  # the run's result
        self.result = result  # what is shown: the run's, or the last re-run's
        self.handle = handle
        self.fixed = context
        self.metrics = metrics
        self.build = build
        self.ref: CaseRef | None = None  # the case as last run (edited or not)
        self.reruns = 0
        self.pending: Pending | None = None
        self.rerun_worker: Worker[CaseResult] | None = None
        self.note = ""  # the re-run line, as plain text
        self.how = ""  # the shown re-run: "re-run 2: edited input"; "" for the run's result

    def context(self) -> CaseContext:
        if self.fixed is not None:
            return self.fixed
        if self.handle is not None:
            return self.handle.case_context()
        return CaseContext()

    # --- drawing -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="case-dialog") as dialog:
            dialog.border_title = f"Case {self.result.case_id}"
            yield Static(id="case-summary")
            yield Static(id="case-rerun")
            with VerticalScroll(id="case-body"):
                yield Static(id="case-build")
                yield Static(id="case-run")
                yield Static(id="case-stdout")
                yield Static(id="case-stderr")
                yield Static(id="case-changes")
                yield Static(id="case-setup")
        yield Footer()

    def on_mount(self) -> None:
        ctx = self.context()
        self.ref = ctx.ref(self.result.case_id)
        if self.build is None and self.handle is not None and self.built_wrong:
            self.build = last_build(self.handle.recorded())
        self.show()
        if ctx.kept is None:
            self.set_note(Text(f"re-run and shells: {ctx.gone}", style="dim italic"))
        else:
            self.set_note(Text("r re-runs this case on the kept delivery, e with an edited "
                               "input; s / o: a shell in the delivery / the oracle",
                               style="dim"))  # fmt: skip
        self.query_one("#case-body").focus()

    def set_note(self, text: Text) -> None:
        self.note = text.plain
        self.query_one("#case-rerun", Static).update(text)

    @property
    def built_wrong(self) -> bool:
        return self.result.verdict is Verdict.BUILD_ERROR

    def show(self) -> None:
        """Draw `self.result` and the case as last run."""
        r, ctx = self.result, self.context()
        self.query_one("#case-summary", Static).update(case_summary_text(r, self.metrics))
        build = self.query_one("#case-build", Static)
        build.display = self.built_wrong
        if self.built_wrong:
            build.update(Group(*build_view(self.build)))
        self.query_one("#case-run", Static).update(run_table(r))
        stdout = stream_view("stdout", r.oracle, r.delivery)
        stderr = stream_view("stderr", r.oracle, r.delivery)
        self.query_one("#case-stdout", Static).update(Group(Text(""), *stdout))
        self.query_one("#case-stderr", Static).update(Group(Text(""), *stderr))
        changes = changes_view(r.oracle, r.delivery)
        self.query_one("#case-changes", Static).update(Group(Text(""), *changes))
        self.query_one("#case-setup", Static).update(Group(Text(""), self._setup(ctx)))

    def _setup(self, ctx: CaseContext) -> RenderableType:
        task = ctx.task
        source = f"as run in {self.how}" if self.how else ctx.source
        missing = ""
        if task is None:
            missing = "input, fixtures and prep: not available (the run's task is not loaded)"
        elif self.ref is None:
            missing = f"input, fixtures and prep: not available ({task.id} has no such case now)"
        return case_setup_text(
            self.result.command, self.ref, kind=ctx.kind, timeout_s=ctx.timeout_s(self.ref),
            source=source, missing=missing,
        )  # fmt: skip

    # --- re-running ------------------------------------------------------------------------

    def _ready(self) -> tuple[CaseContext, CaseRef] | None:
        """The context and the case, when a re-run can start; else None, and why is said."""
        ctx = self.context()
        if ctx.why_not or ctx.task is None:
            self.notify(ctx.why_not, title="Re-run", severity="warning")
            return None
        ref = ctx.ref(self.original.case_id)
        if ref is None:
            self.notify(f"{ctx.task.id} has no case {self.original.case_id}.", severity="error")
            return None
        if self.original.verdict is Verdict.BUILD_ERROR:
            self.notify("The delivery did not build: its cases are not run.", title="Re-run",
                        severity="warning")  # fmt: skip
            return None
        if self.pending is not None:
            self.notify("A re-run is in progress.", title="Re-run")
            return None
        return ctx, ref

    def action_rerun(self) -> None:
        ready = self._ready()
        if ready is not None:
            ctx, ref = ready
            self.start_rerun(ctx, ref, "as it was")

    def action_edit(self) -> None:
        ready = self._ready()
        if ready is None:
            return
        ctx, ref = ready
        last = self.ref if self.ref is not None else ref

        tool = self.original.command  # what the case runs when it has no command of its own

        def chosen(edit: CaseEdit | None) -> None:
            if edit is None or ctx.kept is None:
                return
            command = edit.command
            if command is not None and ref.case.command is None and command == tool:
                command = None  # the tool, as the case has it
            case = ctx.kept.edited(ref, command=command, input=edit.input)
            self.start_rerun(ctx, case, edited_how(ref, case))

        self.app.push_screen(EditCaseScreen(last, ctx.kind, tool), chosen)

    def start_rerun(self, ctx: CaseContext, ref: CaseRef, how: str) -> None:
        assert ctx.kept is not None
        self.reruns += 1
        self.pending = Pending(self.reruns, how, ref)
        self.set_note(Text(f"re-running… (re-run {self.reruns}: {how}) on the kept delivery "
                           "and the oracle", style="bold yellow"))  # fmt: skip
        run_id = f"{ctx.run_id or 'case'}-rerun{self.reruns}"
        self.rerun_worker = self.run_worker(
            ctx.kept.rerun(ref, run_id=run_id),
            name=f"re-run {ref.id}",
            group=RERUN_GROUP,
            exit_on_error=False,
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = self.rerun_worker
        if worker is None or event.worker is not worker:
            return
        if self.pending is None or not self.is_attached:
            return
        pending = self.pending
        if event.state == WorkerState.SUCCESS:
            self.pending = None
            result = worker.result
            assert result is not None  # a worker that succeeded holds its result
            self.rerun_done(pending, result)
        elif event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self.pending = None
            err = event.worker.error
            note = Text().append(f"re-run {pending.number} failed: ", style="bold red")
            note.append_text(safe(f"{type(err).__name__}: {err}" if err else "cancelled",
                                  limit=500))  # fmt: skip
            self.set_note(note)

    def rerun_done(self, pending: Pending, result: CaseResult) -> None:
        before = self.original
        self.result, self.ref = result, pending.ref
        self.how = f"re-run {pending.number}: {pending.how}"
        note = Text().append(f"re-run {pending.number} ({pending.how}): ", style="bold")
        note.append_text(verdict_text(result.verdict))
        if result.verdict == before.verdict:
            note.append(" — the same verdict as the run", style="bold")
            if outputs_differ(before, result):
                note.append("; the delivery's output differs from the run's", style="yellow")
        else:
            note.append(" — changed: the run's was ", style="bold yellow")
            note.append_text(verdict_text(before.verdict))
        self.set_note(note)
        dialog = self.query_one("#case-dialog")
        dialog.border_title = f"Case {result.case_id} · re-run {pending.number}"
        self.show()

    # --- shells --------------------------------------------------------------------------------

    async def action_shell(self, side: str) -> None:
        ctx = self.context()
        if ctx.kept is None or ctx.why_not:
            self.notify(ctx.why_not, title="Shell", severity="warning")
            return
        try:  # the run's engine gives the command (a remote one's names that engine)
            shell = await ctx.kept.shell(Side(side))
        except (InfraError, ConfigError) as err:
            self.notify(f"The run's engine cannot open a shell: {err}", title="Shell",
                        severity="error", timeout=20, markup=False)  # fmt: skip
            return
        argv, line, image, workdir = list(shell.argv), shell.line, shell.image, shell.workdir
        if shutil.which(argv[0]) is None:
            self.notify(f"docker's command-line client is not installed here. With it: {line}",
                        title="Shell", severity="error", timeout=20, markup=False)  # fmt: skip
            return
        try:
            with self.app.suspend():
                print(f"\nicae: a shell in the {side} ({image}), in {workdir}. "
                      "Exit it to come back to the console.\n", flush=True)  # fmt: skip
                code = subprocess.call(argv, stdin=sys.__stdin__, stdout=sys.__stdout__,
                                       stderr=sys.__stderr__)  # fmt: skip
        except SuspendNotSupported:
            self.notify(f"This console cannot hand its terminal over. In a terminal: {line}",
                        title="Shell", severity="warning", timeout=20, markup=False)  # fmt: skip
            return
        except OSError as err:
            self.notify(f"Could not start docker: {err}", title="Shell", severity="error",
                        markup=False)  # fmt: skip
            return
        if code in (125, 126, 127):  # docker's own failures, or no shell in the image
            self.notify(f"docker could not open the shell (exit {code}): {line}", title="Shell",
                        severity="error", timeout=20, markup=False)  # fmt: skip

    def action_close(self) -> None:
        self.dismiss(None)


def last_build(events: Sequence[object]) -> BuildChecked | None:
    """The run's build check: the last one among its events (None: none yet, or not kept)."""
    return next((ev for ev in reversed(events) if isinstance(ev, BuildChecked)), None)


def edited_how(before: CaseRef, after: CaseRef) -> str:
    """How `after` differs from the case: "edited input", "edited command", "edited command
    and input", or "as it was"."""
    what = []
    if after.case.command != before.case.command:
        what.append("command")
    if after.case.input != before.case.input:
        what.append("input")
    return "edited " + " and ".join(what) if what else "as it was"
