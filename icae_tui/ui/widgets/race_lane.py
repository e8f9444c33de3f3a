"""One lane of the race screen: a run of the race, drawn as the run screen draws it but in a
column — its header (the lane's agent, phase, state, who answers, its clock), the progress
line, its trace, its clarifications with the answer box, its results and its score line.

The lane keeps the run screen's view model and operator (display/view.py, operator.py) and
reuses its widgets; the run is a batch's, attached (`AttachedSource`): the lane has no work
of its own, answers its questions, switches its responder, and the run's end comes in its
events. Until its run starts (images are built first) the lane says it is starting; a run
retried by the batch gets a fresh lane (ui/screens/race.py).

Events are applied as they come; the header, the clarifications and the answer box are
drawn at once; the trace, the results, the progress and the score when the screen flushes
(its timer: the run screen's cadence).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from icae_tui.display.handle import RunHandle
from icae_tui.display.operator import Asking, Do, Effect, Notify, Operator, Status
from icae_tui.display.progress import run_progress
from icae_tui.display.sources import AttachedSource, LiveRun
from icae_tui.display.view import RunView
from icae_tui.display.wording import phase_step
from icae_tui.domain.events import Event
from icae_tui.domain.task import Task
from icae_tui.ui.screens.run import SEVERITY, fit_parts
from icae_tui.ui.text import MODE_STYLES, clip, safe, score_text, segments, style_of
from icae_tui.ui.widgets.answer import AnswerBox
from icae_tui.ui.widgets.clarifications import ClarificationPane
from icae_tui.ui.widgets.progress import ProgressLine
from icae_tui.ui.widgets.results import ResultsTable
from icae_tui.ui.widgets.trace import TraceLog

STARTING = "starting: images, then the run…"
BOX_ON_THE_RIGHT = "box on the right"  # where the run screen's answer box is (answer.py)


class RaceLane(Vertical):
    """A lane; `attach(run)` once its run has started. The ids of its parts are the run
    screen's, so the console's styles (app.tcss) dress them the same."""

    def __init__(self, racer: str, *, task: Task | None, cancel: Callable[[], bool]) -> None:
        super().__init__(classes="race-lane")
        self.racer = racer  # the lane's name: its agent
        self.race_task = task  # its cases, for the run screen opened from the lane
        self.cancel = cancel
        self.view = RunView()
        self.run: LiveRun | None = None
        self.handle: RunHandle | None = None
        self.operator: Operator | None = None
        self._drawn: dict[str, object] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="lane-header")
        progress = ProgressLine(id="run-progress")
        progress.display = False
        yield progress
        trace = TraceLog(id="trace")
        trace.border_title = f"Trace · {self.racer}"
        yield trace
        yield ClarificationPane(id="clarify")
        answer = AnswerBox(id="answer")
        answer.display = False
        yield answer
        results = ResultsTable(id="results")
        results.border_title = "Results"
        yield results
        yield Static(score_text(None), id="score")
        yield Static(id="lane-status")

    @property
    def trace(self) -> TraceLog:
        return self.query_one("#trace", TraceLog)

    @property
    def results(self) -> ResultsTable:
        return self.query_one("#results", ResultsTable)

    @property
    def clarify(self) -> ClarificationPane:
        return self.query_one("#clarify", ClarificationPane)

    @property
    def answer_box(self) -> AnswerBox:
        return self.query_one("#answer", AnswerBox)

    @property
    def waiting(self) -> int | None:
        """The question waiting in this lane's answer box, if any."""
        op = self.operator
        if op is None or op.asking is not Asking.WAITING or op.waiting is None:
            return None
        return op.waiting.question_id

    @property
    def shown(self) -> bool:
        """Its parts are there to draw (not before its mount, nor while the console closes)."""
        return self.is_attached and bool(self.children)

    def on_mount(self) -> None:
        for widget in (self.trace, self.results, self.clarify):
            widget.show(self.view)
        self._draw()
        self.flush()

    # --- the run --------------------------------------------------------------------------

    def attach(self, run: LiveRun) -> None:
        """Follow `run` (what it stored so far, then each new event) and operate it."""
        self.run = run
        source = AttachedSource(run, task=self.race_task, cancel=self.cancel)
        self.handle = source.handle()
        self.operator = Operator(self.handle, self.view)
        self.operator.started(False)  # its work is the batch's, and goes on
        self.handle.connect(self.handle_event)

    def handle_event(self, ev: Event) -> None:
        """The source's subscriber: a display problem shows in the lane's status line."""
        try:
            self.view.apply(ev)
            if self.shown:
                self._draw()
        except Exception as err:  # the race goes on whatever a lane cannot draw
            if self.shown:
                self._status(Text(f"display error: {type(err).__name__}: ", "red")
                             + safe(err, limit=300))  # fmt: skip

    def _changed(self, part: str, value: object) -> bool:
        if self._drawn.get(part, self) == value:
            return False
        self._drawn[part] = value
        return True

    def _draw(self) -> None:
        v, op = self.view, self.operator
        if op is not None:
            op.sync()
        mode = op.mode if op is not None else None
        if self._changed("head", (v.head_rev, mode, op.work if op else None)):
            self._header()
        if self._changed("mode", mode):
            self.clarify.set_mode(mode)
            if op is not None:
                self.carry_out(op.mode_changed())
        if self._changed("turns", v.turns_rev):
            self.clarify.sync(short_draft=self.waiting)
        if self._changed("finished", v.finished is not None) and op is not None:
            self.carry_out(op.finished_elsewhere())
            self.flush()
        if self._changed("box", (op.waiting if op else None, op.asking if op else None, mode)):
            self._sync_box()
        if self._changed("status", v.status_rev):
            self._status(segments(list(op.status() if op is not None else v.status)))

    def carry_out(self, effects: Iterable[Effect]) -> None:
        """What the operator's transitions say, as far as a lane does it."""
        for effect in effects:
            if isinstance(effect, Notify):
                self.notify(effect.message, title=effect.title or self.racer, markup=False,
                            severity=SEVERITY[effect.severity], timeout=effect.timeout)  # fmt: skip
            elif isinstance(effect, Status):
                self._status(segments(list(effect.segs)))
            elif effect is Do.SYNC_BOX:
                self._sync_box()
            elif effect is Do.REDRAW:
                self._header()
            elif effect is Do.FOCUS_TRACE:
                self.trace.focus()
            elif effect is Do.CANCEL_WORK and self.handle is not None:
                self.handle.cancel()

    # --- drawing ----------------------------------------------------------------------------

    def flush(self, *, results: bool = True) -> None:
        """The trace; unless not `results`, the results, the progress, the score line and
        the header's clock."""
        if not self.shown:
            return
        self.trace.flush()
        if not results:
            return
        self.results.flush()
        v = self.view
        now = self.operator.clock_end() if self.operator is not None else None
        if now is not None:
            self.query_one("#run-progress", ProgressLine).show_progress(run_progress(v, now))
            if v.finished is None:
                self._header()  # its clock goes on
        if self._changed("score", (v.score_rev, v.cases_rev)):
            score = score_text(v.shown_score(), partial=v.score_partial)
            self.query_one("#score", Static).update(score, layout=False)

    def header_text(self, width: int = 0) -> Text:
        v, op = self.view, self.operator
        name = safe(self.racer, "bold")
        if v.started is None or op is None:
            return fit_parts([(name, 0), (Text(STARTING, style="dim"), 0)], width)
        state = Text()
        if v.finished is not None:
            state.append(f"{v.finished.status}", style=style_of(f"status:{v.finished.status}"))
        else:
            state.append_text(safe(v.phase or "—", "bold yellow"))
            state.append(phase_step(v.phase), style="dim")
            if self.waiting is not None:
                state.append("  ? waiting for you", style="bold magenta")
        mode = op.mode or "—"
        responder = Text("responder ", style="dim")
        responder.append_text(clip(mode, 20, MODE_STYLES.get(mode, "bold")))
        clock = Text(f"⏱ {op.clock_end() - v.started.ts:.1f} s", style="dim")
        return fit_parts([(name, 0), (state, 0), (responder, 1), (clock, 2)], width)

    def _header(self) -> None:
        if self.shown:
            header = self.query_one("#lane-header", Static)
            header.update(self.header_text(header.content_size.width), layout=False)

    def _status(self, text: Text) -> None:
        if self.shown:
            line = text.copy()
            width = self.size.width - 2
            if width > 0 and line.cell_len > width:
                line.truncate(width, overflow="ellipsis")
            self.query_one("#lane-status", Static).update(line, layout=False)

    def _sync_box(self) -> None:
        """The answer box shows while a question waits for the operator in this lane; it
        takes the focus unless the operator is typing in the other lane's box."""
        op, box = self.operator, self.answer_box
        q = op.waiting if op is not None else None
        if q is None and box.question_id is not None:
            box.forget()
        if op is None or q is None or op.asking is not Asking.WAITING:
            if box.display:
                had_focus = box.has_focus
                box.display = False
                if had_focus:
                    self.trace.focus()
            self._header()
            return
        status, notice = box.offer(q, op.mode)
        status = status.replace(BOX_ON_THE_RIGHT, "box below")  # the run screen's words
        if not box.display:
            box.display = True
            if not isinstance(self.screen.focused, AnswerBox):
                box.focus()
            self.notify(notice, title=f"Question · {self.racer}", markup=False)
        self._status(Text(status, "bold magenta"))
        self._header()

    # --- the operator ---------------------------------------------------------------------

    def on_answer_box_submitted(self, event: AnswerBox.Submitted) -> None:
        event.stop()
        if self.operator is not None:
            self.carry_out(self.operator.submit(event.text))

    def on_answer_box_left(self, event: AnswerBox.Left) -> None:
        event.stop()
        if self.operator is not None:
            self.carry_out(self.operator.left_box())

    def switch_responder(self) -> None:
        """Who answers this lane's questions, the next of simulated → human → assisted."""
        if self.operator is not None:
            self.carry_out(self.operator.switch(self.operator.next_mode()))
            self._draw()
