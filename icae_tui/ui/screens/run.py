"""The run screen: header, agent trace, clarifications, results, score and status.

It draws a `RunView` (icae_tui/display) fed by a source: a live run (`LiveSource`: the run
executes in a worker; the operator answers, switches the responder and cancels) or a stored
one (`ReplaySource`: its events at once, nothing to run, nothing to command). The source's
handle (display/handle.py) says what the run can do and does it; the operator's state (the
work going, cancelling, cancelled; a question waiting or answered; leaving) and every
decision on it are the `Operator`'s (display/operator.py): this screen carries out the effects
its transitions return, and does the widget work. `handle_event`
is the source's subscriber, called on the app's loop for each event in order: it applies the
event to the view, then draws the header, the clarifications, the status line and the answer
box at once; the trace every FLUSH_S seconds, the results table, the progress and the score
line every RESULTS_TICKS of those (about twice a second: each change of the table draws every
row in view again, which under a flood of finished cases took a quarter of the loop's time).

The operator switches the responder at any moment (m cycles simulated → human → assisted;
1/2/3 pick one; ctrl+t cycles even while typing in the answer box). A question waiting for the
operator shows the answer box: empty in human mode, pre-filled with the simulated user's draft
in assisted mode. Switching back to simulated hands the waiting question to the simulated user.

Under the header, a second line shows the agent's usage against its limits (steps, wall
clock, model calls, tokens, cost; "warn" from 80 %, "error" at the limit) when it has limits
or made model calls. Each model call is one line of the trace; l opens the run's model calls
(a table, Enter expands one from the run's model_calls.jsonl), live, finished or replayed.

Watching and taking over: a progress line under the header (the phase, a bar, the agent's
time against its limit, the cases done with an estimate of the time left: display/progress.py);
p pauses the agent of a live run while it builds, and lets it go on (the header and the trace
say so); the run's end is notified (its score, its error, a cancel); e exports the run's
report, trajectory and trace as text to a folder; the results sort and filter (ResultsPane).

At 80×24 the screen keeps its essential state in view: the header drops its least important
parts first (the task's title, the level, the agent, the clock) and never the phase, nor who
answers; the status line keeps to one row, cut with "…", but for an error, which wraps; the
footer shows the most important keys (FOOTER_FIRST) and "? All keys" for the rest
(widgets/footer.py). A notification that leaves makes the screen draw itself whole again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState

from icae_tui.agents.config import AgentKind
from icae_tui.display.export import Exported, export_folder, export_run
from icae_tui.display.handle import Outcome, RunHandle, RunKind
from icae_tui.display.operator import (
    Asking,
    Confirm,
    Do,
    Effect,
    End,
    Notify,
    Operator,
    Severity,
    Status,
    Work,
)
from icae_tui.display.progress import run_progress
from icae_tui.display.sources import ReplaySource, RunSource
from icae_tui.display.view import RunView
from icae_tui.display.wording import Seg, clock, phase_step, usage_segments
from icae_tui.domain.events import Event, QuestionAsked, RunFinished, RunStarted
from icae_tui.domain.states import ResponderMode
from icae_tui.store.database import MODEL_CALLS_FILE
from icae_tui.ui.keymap import keyed
from icae_tui.ui.screens.case_detail import CaseDetailScreen
from icae_tui.ui.screens.dialogs import ConfirmScreen
from icae_tui.ui.screens.model_calls import ModelCallsScreen
from icae_tui.ui.screens.score_charts import ScoreChartsScreen
from icae_tui.ui.text import MODE_STYLES, clip, safe, score_text, segments, style_of
from icae_tui.ui.widgets.answer import AnswerBox
from icae_tui.ui.widgets.clarifications import ClarificationPane
from icae_tui.ui.widgets.footer import Footer
from icae_tui.ui.widgets.progress import ProgressLine
from icae_tui.ui.widgets.results import ResultsPane, ResultsTable
from icae_tui.ui.widgets.teach_picker import TeachPicker
from icae_tui.ui.widgets.trace import TraceLog
from icae_tui.users.responders import MODES
from icae_tui.users.teaching import OfferWatch, TeachOffer, record_choices
from icae_tui.users.teachings import TeachingsError, teach

FLUSH_S = 0.08
RESULTS_TICKS = 6  # the flush timer's ticks between two draws of the results (0.48 s)
SCRIPTED = AgentKind.SCRIPTED.prefix  # agents that call no model
RUN_GROUP = "icae-run"
EXPORT_SUBFOLDER = "export"  # in the run's artifacts, when the export folder is not writable
GAP = "   "  # between two parts of the header
TOAST_WIDTH, TOAST_CELLS = 60, 3  # Textual's toast: 60 cells, half the screen at most; its
# border and padding take 3 of them
TOAST_RACK = "textual-toastrack"  # the id of the screen's rack of notifications (Textual's)
SEVERITY: dict[Severity, SeverityLevel] = {
    Severity.INFORMATION: "information",
    Severity.WARNING: "warning",
    Severity.ERROR: "error",
}
END_OF = {
    WorkerState.SUCCESS: End.RETURNED,
    WorkerState.ERROR: End.RAISED,
    WorkerState.CANCELLED: End.CANCELLED,
}
WRAPS = ("error", "error-strong")  # a status with these hints wraps; any other keeps to a row


def fit_parts(parts: Sequence[tuple[Text, int]], width: int) -> Text:
    """`parts` (each with its rank: 0 always kept) joined by GAP in their order, the worst
    ranked left out (the last of equal ranks first) until the rest fits `width` cells."""
    kept = [i for i, (text, _) in enumerate(parts) if text.plain]

    def length() -> int:
        return sum(parts[i][0].cell_len for i in kept) + len(GAP) * max(0, len(kept) - 1)

    while width > 0 and length() > width:
        droppable = [i for i in kept if parts[i][1] > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda i: (parts[i][1], i)))
    return Text(GAP).join(parts[i][0] for i in kept)


def path_lines(path: str, width: int) -> str:
    """`path` on lines of at most `width` characters, broken after a "/" (never inside a
    name, unless the name alone is wider)."""
    names = path.split("/")
    lines: list[str] = []
    line = ""
    for piece in [name + "/" for name in names[:-1]] + names[-1:]:
        if line and len(line) + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line += piece
    lines.append(line)
    return "\n".join(lines)


def short_path(path: Path) -> str:
    """`path` as short as it reads plainly: under the current folder, "./…"; under home,
    "~/…"; else whole."""
    for base, shown in ((Path.cwd(), "."), (Path.home(), "~")):
        try:
            return f"{shown}/{path.relative_to(base)}"
        except ValueError:
            continue
    return str(path)


class RunScreen(Screen[None]):
    # what the footer keeps when it is narrow (widgets/footer.py), most important first:
    # answering, who answers, cancelling, skipping a teaching and leaving (a replay's: playing
    # and pausing)
    FOOTER_FIRST: ClassVar[tuple[str, ...]] = (
        "answer_box", "cycle_typing", "cycle", "leave", "cancel_run", "skip", "back", "play_pause",
        "restore_draft", "pause", "select_cursor", "export",
    )  # fmt: skip
    # action ids for keymap.toml (ui/keymap.py)
    BINDINGS: ClassVar[list[BindingType]] = keyed(
        "run",
        [
            Binding("escape", "back", "Back"),
            Binding("q", "back", "Back", show=False),
            Binding("c", "cancel_run", "Cancel run"),
            Binding("t", "focus('#trace')", "Trace", show=False),
            Binding("r", "focus('#results')", "Results", show=False),
            # f turns following on or off; only the binding for the other state lives, so the
            # footer reads the state: "Follow on" while the trace follows new lines.
            Binding("f", "follow('off')", "Follow on", id="run.follow"),
            Binding("f", "follow('on')", "Follow off", id="run.follow"),
            Binding("l", "model_calls", "Model calls"),  # m is taken: it switches the responder
            Binding("g", "charts", "Score charts", show=False),
            # p pauses the agent of a live run while it builds, or lets it go on: one binding per
            # state, only the one that applies lives (the footer reads "Pause agent" or "Resume").
            Binding("p", "pause('on')", "Pause agent", id="run.pause"),
            Binding("p", "pause('off')", "Resume agent", id="run.pause"),
            Binding("e", "export", "Export"),
            Binding("w", "answer_box", "Answer"),  # back into the answer box once left
            # m cycles simulated → human → assisted; only the binding for the next mode is active,
            # so the footer reads "Responder ▸ <next>". ctrl+t does the same from anywhere; it is
            # listed in the footer while the answer box has the focus (where m would be typed).
            *(Binding("m", f"cycle('{mode}')", f"Responder ▸ {mode}") for mode in MODES),
            *(
                Binding("ctrl+t", f"cycle_typing('{mode}')", f"Responder ▸ {mode}", priority=True)
                for mode in MODES
            ),
            *(
                Binding(
                    "ctrl+t", f"cycle('{mode}')", f"Responder ▸ {mode}", show=False, priority=True
                )
                for mode in MODES
            ),
            *(
                Binding(str(i), f"responder('{mode}')", mode, show=False)
                for i, mode in enumerate(MODES, 1)
            ),
        ],
    )

    def __init__(self, source: RunSource | None = None, *, artifacts: Path | None = None) -> None:
        """`artifacts`: the store's folder of run artifacts (`RunStore.artifacts_dir`), where
        the run's model_calls.jsonl is; without it, the folder of the run's report."""
        super().__init__()
        self.source: RunSource = source if source is not None else ReplaySource()
        self.handle: RunHandle = self.source.handle()
        self.artifacts = artifacts
        self.view = RunView()
        self.operator = Operator(self.handle, self.view)
        self.worker: Worker[Outcome | None] | None = None
        self.status_message = ""
        self._status_text = Text()  # the status line's whole text
        self._status_wraps = False  # it may take more than a row (an error)
        self._note_on: int | None = None  # the question the status line is about, if any
        self._toasts = 0  # the notifications shown on this screen at the last tick
        self._drawn: dict[str, object] = {}  # what was drawn last, by part
        self._trace: TraceLog | None = None
        self._results: ResultsTable | None = None
        self._ticks = 0  # of the flush timer
        self.export_base: Path | None = None  # where exports go (None: the current directory)
        self.exported: Exported | None = None  # the last export
        # teaching the simulated user: offers after a human answered where it fell back
        self._teach_watch = OfferWatch()
        self._offers: deque[TeachOffer] = deque()

    # --- layout and state -------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="run-header")
        usage = Static(id="run-usage")
        usage.display = False
        yield usage
        progress = ProgressLine(id="run-progress")
        progress.display = False
        yield progress
        with Horizontal(id="run-top"):
            trace = TraceLog(id="trace")
            trace.border_title = "Agent trace"
            yield trace
            with Vertical(id="side"):
                yield ClarificationPane(id="clarify")
                answer = AnswerBox(id="answer")
                answer.display = False
                yield answer
                picker = TeachPicker(id="teach")
                picker.display = False
                yield picker
        results = ResultsTable(id="results")
        results.border_title = "Results"
        yield ResultsPane(results, id="results-pane")
        yield Static(score_text(None), id="score")
        yield Static(id="status")
        yield Footer()

    @property
    def trace(self) -> TraceLog:
        if self._trace is None:
            self._trace = self.query_one("#trace", TraceLog)
        return self._trace

    @property
    def results(self) -> ResultsTable:
        if self._results is None:
            self._results = self.query_one("#results", ResultsTable)
        return self._results

    @property
    def clarify(self) -> ClarificationPane:
        return self.query_one("#clarify", ClarificationPane)

    @property
    def answer_box(self) -> AnswerBox:
        return self.query_one("#answer", AnswerBox)

    @property
    def teach_picker(self) -> TeachPicker:
        return self.query_one("#teach", TeachPicker)

    @property
    def started(self) -> RunStarted | None:
        return self.view.started

    @property
    def finished(self) -> RunFinished | None:
        return self.view.finished

    @property
    def outcome(self) -> Outcome | None:
        """What a live run's work returned, once it has."""
        return self.handle.outcome

    @property
    def mode(self) -> ResponderMode | None:
        return self.operator.mode

    @property
    def waiting(self) -> QuestionAsked | None:
        return self.operator.waiting

    @property
    def awaiting(self) -> int | None:
        return self.waiting.question_id if self.waiting is not None else None

    @property
    def running(self) -> bool:
        return self.operator.running

    @property
    def cancelling(self) -> bool:
        return self.operator.cancelling

    @property
    def crashed(self) -> str:
        return self.operator.crashed

    def on_mount(self) -> None:
        for widget in (self.trace, self.results, self.clarify):
            widget.show(self.view)
        self.set_interval(FLUSH_S, self._tick, name="flush")
        self.set_interval(1.0, self._render_header, name="clock")
        self._draw()
        job = self.handle.job()
        self.operator.started(job is not None)
        self.handle.connect(self.handle_event)
        if job is not None:
            self.worker = self.run_worker(
                job,
                name=f"run {self.handle.run_id}",
                group=RUN_GROUP,
                exit_on_error=False,
                exclusive=False,
            )
        self.flush()
        # an attached run may come with a question already waiting: its box keeps the focus
        (self.answer_box if self.answer_box.display else self.trace).focus()

    def carry_out(self, effects: Iterable[Effect]) -> None:
        """Do what the operator's transition says."""
        for effect in effects:
            if isinstance(effect, Notify):
                self.notify(effect.message, title=effect.title, timeout=effect.timeout,
                            severity=SEVERITY[effect.severity], markup=False)  # fmt: skip
            elif isinstance(effect, Confirm):
                self._confirm(effect)
            elif isinstance(effect, Status):
                self._show_status(effect.segs, about=effect.about)
            elif effect is Do.CANCEL_WORK:
                if self.worker is not None:
                    self.worker.cancel()
                elif self.handle.attached:  # a batch's run: cancelled alone, by the batch
                    self.handle.cancel()
            elif effect is Do.LEAVE:
                self._leave()
            elif effect is Do.REDRAW:
                if self.is_attached:
                    self._draw()
                    self._render_header()
                    self.refresh_bindings()
            elif effect is Do.KEYS:
                if self.is_attached:
                    self.refresh_bindings()
            elif effect is Do.SYNC_BOX:
                self._sync_answer_box()
            elif effect is Do.FOCUS_TRACE:
                self.trace.focus()

    def _confirm(self, confirm: Confirm) -> None:
        def answered(yes: bool | None) -> None:
            self.carry_out(self.operator.confirmed(confirm.prompt, bool(yes)))

        dialog = ConfirmScreen(confirm.question, confirm.yes, confirm.no)
        self.app.push_screen(dialog, answered)

    # --- events -----------------------------------------------------------------------------

    def handle_event(self, ev: Event) -> None:
        """The source's subscriber. Never raises: a display problem shows in the status line."""
        try:
            self.view.apply(ev)
            if self.handle.kind is RunKind.LIVE and self.handle.task is not None:
                offer = self._teach_watch.observe(ev)
                if offer is not None:
                    self._offers.append(offer)
            if self.is_attached:
                self._draw()
                if self._offers and not self.teach_picker.display:
                    self._next_offer()
        except Exception as err:  # the display must survive anything
            if self.is_attached:
                self._set_status(
                    Text(f"display error on {type(ev).__name__}: {type(err).__name__}: ", "red")
                    + safe(err, limit=300)
                )

    def _changed(self, part: str, value: object) -> bool:
        if self._drawn.get(part, self) == value:
            return False
        self._drawn[part] = value
        return True

    def _draw(self) -> None:
        """Draw what changed, but for the batched parts (see `flush`)."""
        v = self.view
        self.operator.sync()
        if self._changed("head", (v.head_rev, self.mode)):
            self._render_header()
            if v.started is not None:
                self.sub_title = f"{v.started.task_id} · {v.started.agent}"
        if self._changed("has_calls", self._has_model_calls()):
            self.refresh_bindings()
        if self._changed("pausable", (self.operator.can_pause, v.agent_paused)):
            self.refresh_bindings()
        if self._changed("mode", self.mode):
            self._mode_changed()
        if self._changed("turns", (v.head_rev, v.turns_rev)):
            self.clarify.sync(short_draft=self.awaiting)
        if self._changed("status", (v.status_rev, self.operator.work)):
            self._show_status(self.operator.status())
        if self._changed("finished", v.finished is not None):
            self.carry_out(self.operator.finished_elsewhere())
            self.flush()
            self.refresh_bindings()
            self._tell_end()
        if self._changed("box", self._box_state()):
            self._sync_answer_box()
        if self._note_on is not None and self._note_on != self.awaiting:
            self._show_status(self.operator.status())  # its question is answered

    def _tell_end(self) -> None:
        """A live run's end in a notification (display/operator.py says what)."""
        notice = self.operator.end_notice()
        if notice is not None:
            self.carry_out([notice])

    # --- drawing ----------------------------------------------------------------------------

    def _tick(self) -> None:
        """The flush timer: the trace each time, the results every RESULTS_TICKS times."""
        self._ticks += 1
        self.flush(results=self._ticks % RESULTS_TICKS == 0)
        self._repaint_after_toasts()

    def _repaint_after_toasts(self) -> None:
        """Draw the whole screen again once a notification has left it. Textual repaints
        only what changed, and drops a repaint that comes while any widget recomposes (its
        batch: App._display returns at once), such as the footer does whenever the keys
        change, which they do as a run ends; the cells of a toast removed then stayed on the
        terminal, over the score and status lines, until a resize drew everything again."""
        try:
            rack = self.get_child_by_id(TOAST_RACK)
        except NoMatches:  # notifications off (tests), or not composed yet
            return
        toasts = len(rack.children)
        if toasts < self._toasts:
            self.refresh()
        self._toasts = toasts

    def flush(self, *, results: bool = True) -> None:
        """Write what has queued up since the last flush: the trace, and unless `results` is
        False the results table, the progress and the score line."""
        if not self.is_attached:
            return
        try:
            self.trace.flush()
            if not results:
                return
            self.results.flush()
            st = self.view.started
            if st is not None and self._drawn.get("clock") != self._clock_text(st):
                self._render_header()  # the clock moved (a replay's: to its last event, at once)
            if self._changed("progress", self.view.cases_rev):
                self._render_progress()
        except Exception as err:
            self._set_status(Text(f"display error: {type(err).__name__}: {err}", "red"))

    def _render_score(self) -> None:
        """The score line: its cases done are the progress line's (RunView.shown_score)."""
        v = self.view
        if self._changed("score", (v.score_rev, v.cases_rev)):
            claims = v.claims.contradicted if v.claims is not None else 0
            score = score_text(v.shown_score(), partial=v.score_partial, claims=claims)
            # one row, fixed: no layout of the whole screen for it
            self.query_one("#score", Static).update(score, layout=False)

    def _show_status(self, segs: Sequence[Seg], *, about: int | None = None) -> None:
        """The status line from the view's segments: an error's may wrap."""
        wraps = any(hint in WRAPS for _, hint in segs)
        self._set_status(segments(list(segs)), about=about, wraps=wraps)

    def _set_status(self, text: Text, *, about: int | None = None, wraps: bool = True) -> None:
        """Show `text` in the status line; `about`: the waiting question it is about (it goes
        once that question no longer waits); unless it `wraps`, it keeps to one row, cut with
        "…" (the trace and the notifications have the rest)."""
        self._note_on = about
        self.status_message = text.plain
        self._status_text, self._status_wraps = text, wraps
        self._draw_status()

    def _draw_status(self) -> None:
        status = self.query_one("#status", Static)
        text = self._status_text
        width = status.content_size.width or max(0, self.size.width - 2)
        if not self._status_wraps and width and text.cell_len > width:
            text = text.copy()
            text.truncate(width, overflow="ellipsis")
        status.update(text)

    def on_resize(self, event: events.Resize) -> None:
        """What is fitted to the width is fitted again (once the widgets have their size)."""
        self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        if self.is_attached:
            self._render_header()
            self._draw_status()

    def _clock_end(self) -> float:
        return self.operator.clock_end()

    def _clock_text(self, st: RunStarted) -> str:
        return clock(self._clock_end() - st.ts)

    def _render_header(self) -> None:
        if not self.is_attached:
            return
        header = self.query_one("#run-header", Static)
        v, st = self.view, self.view.started
        if st is None:
            header.update(Text(self.handle.label, style="dim"), layout=False)
            return
        phase = Text("phase ", style="dim")
        if v.finished is not None:
            phase.append(v.finished.status, style=style_of(f"status:{v.finished.status}"))
        elif self.operator.work is Work.CRASHED:
            phase.append("crashed", style="bold red")
        elif self.cancelling:
            phase.append("cancelling…", style="bold yellow")
        else:
            phase.append_text(safe(v.phase or "—", "bold yellow"))
            phase.append(phase_step(v.phase), style="dim")
            if v.agent_paused:
                phase.append("  ⏸ agent paused", style="bold yellow")
        responder = Text("responder ", style="dim")
        responder.append_text(clip(self.mode or "—", 20, MODE_STYLES.get(self.mode or "", "bold")))
        self._drawn["clock"] = shown = self._clock_text(st)
        labelled = [
            Text.assemble((f"{label} ", "dim"), clip(value, 40, "bold"))
            for label, value in (("agent", st.agent), ("level", st.level))
        ]
        parts = [
            (safe(st.task_id, "bold"), 0), (phase, 0), (responder, 0),
            (Text(f"⏱ {shown}", style="dim"), 1), (labelled[0], 2), (labelled[1], 3),
            (clip(st.task_title, 60, "italic dim"), 4),
        ]  # fmt: skip
        width = header.content_size.width or max(0, self.size.width - 2)
        header.update(fit_parts(parts, width), layout=False)  # one row, fixed: a repaint
        self._render_usage()
        self._render_progress()

    def _render_progress(self) -> None:
        """The progress line: the phase, a bar, the figures (display/progress.py); the score
        line with it, so both say the same cases done."""
        if self.is_attached:
            progress = run_progress(self.view, self._clock_end())
            self.query_one("#run-progress", ProgressLine).show_progress(progress)
            self._render_score()

    def _render_usage(self) -> None:
        """The agent's usage against its limits, under the header (when there is any)."""
        usage = self.query_one("#run-usage", Static)
        segs = usage_segments(self.view.usage(self._clock_end()))
        usage.display = bool(segs)
        if segs:
            usage.update(segments(segs))

    # --- the responder and the operator answering ---------------------------------------------

    def action_cycle(self, mode: str) -> None:
        self.switch_responder(mode)

    def action_cycle_typing(self, mode: str) -> None:
        self.switch_responder(mode)

    def action_responder(self, mode: str) -> None:
        self.switch_responder(mode)

    def _typing(self) -> bool:
        return self.is_attached and self.focused is self.answer_box

    def switch_responder(self, mode: str) -> None:
        """Ask the run to switch who answers; the display follows at once."""
        self.carry_out(self.operator.switch(mode))

    def _mode_changed(self) -> None:
        self.clarify.set_mode(self.mode)
        self._render_header()
        self.refresh_bindings()
        self.carry_out(self.operator.mode_changed())

    def _box_state(self) -> tuple[object, ...]:
        return (self.awaiting, self.operator.asking, self.mode)

    def _sync_answer_box(self) -> None:
        """Show the answer box iff a question waits for the operator in the current mode."""
        self._show_box()
        self._drawn["box"] = self._box_state()

    def _show_box(self) -> None:
        box = self.answer_box
        q = self.waiting
        if q is None and box.question_id is not None:
            box.forget()
        if q is None or self.operator.asking is not Asking.WAITING:
            box.draft = ""
            if box.display:
                had_focus = box.has_focus
                box.display = False
                if had_focus or self.focused is None:
                    self._focus_after_box()
            return
        status, notice = box.offer(q, self.mode)
        self.refresh_bindings()
        if not box.display:
            box.display = True
            box.focus()
            self.notify(notice, title="Question")
        self._set_status(Text(status, "bold magenta"), about=q.question_id)

    def _focus_after_box(self) -> None:
        """The answer box went: the teach picker, when it asks, else the trace."""
        picker = self.teach_picker
        if picker.display:
            picker.focus_records()
        else:
            self.trace.focus()

    # --- teaching the simulated user (users/teaching.py) ---------------------------------------

    def _next_offer(self) -> None:
        """Show the next offer to teach, if any: the picker takes the focus unless the
        operator is answering (a new question keeps the box)."""
        picker = self.teach_picker
        task = self.handle.task
        while self._offers and task is not None:
            offer = self._offers.popleft()
            ua = task.user_agent.get(offer.level)
            choices, likely = record_choices(ua.oracle_data, offer) if ua else ([], -1)
            if not choices:  # the level has no record to attach it to
                continue
            picker.show_offer(offer, choices, likely)
            picker.display = True
            if not self.answer_box.display:
                picker.focus_records()
            return
        self._close_picker()

    def _close_picker(self) -> None:
        picker = self.teach_picker
        had_focus = picker.has_focus_within
        picker.offer = None
        picker.display = False
        if self._offers:
            self._next_offer()
        elif had_focus:
            (self.answer_box if self.answer_box.display else self.trace).focus()

    def on_teach_picker_chosen(self, event: TeachPicker.Chosen) -> None:
        event.stop()
        task, offer = self.handle.task, event.offer
        if task is None:
            return
        try:
            teaching, new = teach(Path(task.root), level=offer.level, record_id=event.record_id,
                                  phrase=event.phrase, run_id=offer.run_id,
                                  question_id=offer.question_id, answer=offer.answer)  # fmt: skip
        except (TeachingsError, ValueError) as err:  # kept open: nothing is lost
            self.notify(str(err), title="Not taught", severity="error", markup=False)
            return
        review = f"icae tasks teach {task.id}"
        if new:
            message = (f"Q{offer.question_id} → {event.record_id}: teaching #{teaching.id}, "
                       f"pending until accepted ({review})")  # fmt: skip
        else:
            message = (f"Already taught to {event.record_id}: teaching #{teaching.id}, "
                       f"{teaching.status.value} ({review})")  # fmt: skip
        self.notify(message, title="Taught", markup=False)
        self._close_picker()

    def on_teach_picker_skipped(self, event: TeachPicker.Skipped) -> None:
        event.stop()
        self._close_picker()

    def on_answer_box_left(self, event: AnswerBox.Left) -> None:
        event.stop()
        self.carry_out(self.operator.left_box())

    def action_answer_box(self) -> None:
        self.answer_box.focus()

    def on_answer_box_submitted(self, event: AnswerBox.Submitted) -> None:
        event.stop()
        self.carry_out(self.operator.submit(event.text))

    # --- the worker ---------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.worker:
            return
        end = END_OF.get(event.state)
        if end is None:
            self.refresh_bindings()
            return
        err = event.worker.error
        error = f"{type(err).__name__}: {err}" if end is End.RAISED else ""
        if end is End.RAISED:
            self.flush()
        self.carry_out(self.operator.ended(end, error))

    # --- actions ------------------------------------------------------------------------------

    def _leave(self) -> None:
        if not self.is_attached or self not in self.app.screen_stack:
            return
        if self.app.screen is not self:  # a dialog on top is still closing: try again shortly
            self.set_timer(0.1, self._leave)
            return
        self.app.pop_screen()

    def action_back(self) -> None:
        self.carry_out(self.operator.back())

    def action_cancel_run(self) -> None:
        self.carry_out(self.operator.cancel())

    def cancel_run(self) -> None:
        """Cancel the run: the status line says what is being stopped, then, once the run's
        work is over, that its containers are removed."""
        self.carry_out(self.operator.cancel_now())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        op = self.operator
        if action == "cancel_run":
            return op.can_cancel
        if action in ("cycle", "cycle_typing"):  # one binding per mode: only the next one lives
            if not op.can_switch or not parameters or parameters[0] != op.next_mode():
                return False
            return action == "cycle" or self._typing()
        if action == "responder":
            return op.can_switch and parameters[0] != self.mode
        if action == "model_calls":  # not for scripted agents: they call no model
            return self._has_model_calls()
        if action == "pause":  # one binding per state: only the one that applies lives
            paused = self.view.agent_paused
            return op.can_pause and parameters[0] == ("off" if paused else "on")
        if action == "answer_box":  # a question waits in the box, and the focus is elsewhere
            return self.is_attached and self.answer_box.display and not self._typing()
        if action == "follow":  # one binding per state: only the one to leave it lives
            following = self._trace.following if self._trace is not None else True
            return parameters[0] == ("off" if following else "on")
        return True

    # --- pausing the agent ---------------------------------------------------------------------

    def action_pause(self, state: str) -> None:
        if self.operator.begin_pause():
            self.run_worker(self.pause_agent(state == "on"), name="pause the agent",
                            group="icae-pause", exit_on_error=False)  # fmt: skip

    async def pause_agent(self, on: bool) -> bool:
        """Ask the run to pause the agent (`on`) or let it go on; a refusal is notified.
        The display follows the run's AgentPaused / AgentResumed events."""
        done, effects = await self.operator.pause(on)
        self.carry_out(effects)
        return done

    # --- exporting ------------------------------------------------------------------------------

    def _run_id(self) -> str:
        return (self.view.started.run_id if self.view.started is not None else "") or (
            self.handle.run_id
        )

    def _export_events(self) -> list[Event]:
        """The run's events: the source's, else the store's (by the run's id)."""
        events = list(self.handle.recorded())
        store = getattr(self.app, "store", None)
        if not events and store is not None and self._run_id():
            events = store.events(self._run_id())
        return events

    def export_folders(self) -> list[Path]:
        """Where an export goes: under `export_base` (default: the current directory), else
        in the run's artifacts."""
        run_id = self._run_id()
        folders = [export_folder(self.export_base or Path.cwd(), run_id)]
        calls = self.calls_file()
        if calls is not None:
            folders.append(calls.with_name(EXPORT_SUBFOLDER))
        return folders

    def action_export(self) -> None:
        events = self._export_events()
        if not events:
            self.notify("Nothing to export yet: the run has not started.")
            return
        self.run_worker(lambda: self._export(events, self.export_folders()), thread=True,
                        name="export the run", group="icae-export", exit_on_error=False)  # fmt: skip

    def _export(self, events: list[Event], folders: list[Path]) -> None:
        """In a thread: the files written to the first folder that takes them."""
        problem = ""
        for folder in folders:
            try:
                exported = export_run(events, folder)
            except OSError as err:
                problem = f"{folder}: {err.strerror or err}"
                continue
            self.app.call_from_thread(self._exported, exported)
            return
        self.app.call_from_thread(
            self.notify, f"Could not export the run: {problem}", title="Export",
            severity="error", markup=False,
        )  # fmt: skip

    def _exported(self, exported: Exported) -> None:
        """Notified with the folder on lines of its own, broken after a "/" to the toast's
        width (a long path broke mid-name at 80 columns)."""
        self.exported = exported
        names = ", ".join(path.name for path in exported.files)
        room = min(TOAST_WIDTH, self.app.size.width // 2) - TOAST_CELLS
        folder = path_lines(short_path(exported.folder), room)
        self.notify(f"{names} ({exported.events} events) in\n{folder}",
                    title="Exported", timeout=15, markup=False)  # fmt: skip

    # --- model calls --------------------------------------------------------------------------

    def _has_model_calls(self) -> bool:
        """Calls were made, or may be: configured agents reach a model through the gateway."""
        st = self.view.started
        return bool(self.view.calls) or (st is not None and not st.agent.startswith(SCRIPTED))

    def calls_file(self) -> Path | None:
        """The run's model_calls.jsonl (it may not exist yet, or at all)."""
        run_id = self.view.started.run_id if self.view.started is not None else ""
        run_id = run_id or self.handle.run_id
        if self.artifacts is not None and run_id:
            return self.artifacts / run_id / MODEL_CALLS_FILE
        if self.view.finished is not None and self.view.finished.report_path:
            return Path(self.view.finished.report_path).with_name(MODEL_CALLS_FILE)
        return None

    def action_charts(self) -> None:
        self.app.push_screen(ScoreChartsScreen(self._export_events))

    def action_model_calls(self) -> None:
        self.app.push_screen(ModelCallsScreen(self.view, self.calls_file(), live=self.running))

    def action_follow(self, state: str) -> None:
        self.trace.follow(state == "on")

    def on_trace_log_follow_changed(self, event: TraceLog.FollowChanged) -> None:
        event.stop()
        self.refresh_bindings()  # the footer reads "Follow on" or "Follow off"

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self.view.cases.get(event.row_key.value or "")
        if row is None or row.result is None:
            self.notify("This case has not finished yet.")
            return
        # what the run kept (r, e, s, o) is asked of its handle
        self.app.push_screen(
            CaseDetailScreen(row.result, self.handle, metrics=self.view.metric_specs)
        )
