"""The run screen: header, agent trace, clarifications, results, score and status.

`handle_event` is the run's subscriber: it is called synchronously on the app's loop for each
event, in order. Cheap, rare events update widgets at once; the trace, the results table and
the score line are queued and flushed together every FLUSH_S seconds.

The operator switches the responder at any moment (m cycles simulated → human → assisted;
1/2/3 pick one; ctrl+t cycles even while typing in the answer box). A question waiting for the
operator shows the answer box: empty in human mode, pre-filled with the simulated user's draft
in assisted mode. Switching back to simulated hands the waiting question to the simulated user.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker, WorkerState

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentSubmitted,
    AgentWrote,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    Event,
    EventsDropped,
    PhaseChanged,
    Progress,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    ResponderChanged,
    RunFinished,
    RunStarted,
    ScoreUpdated,
)
from icae_tui.domain.results import Score
from icae_tui.run import RunConfig, RunOutcome
from icae_tui.ui.screens.dialogs import CaseDetailScreen, ConfirmScreen
from icae_tui.ui.text import STATUS_STYLES, clip, safe, score_text
from icae_tui.ui.widgets.answer import AnswerBox
from icae_tui.ui.widgets.clarifications import (
    MODE_STYLES,
    ClarificationPane,
    draft_source,
    metrics_line,
)
from icae_tui.ui.widgets.results import ResultsTable
from icae_tui.ui.widgets.trace import TraceLog
from icae_tui.users.metrics import interaction_metrics
from icae_tui.users.responders import MODES

FLUSH_S = 0.08
RUN_GROUP = "icae-run"
PHASES = ("prepare", "generate", "freeze", "build", "evaluate", "score")
OPERATOR_MODES = ("human", "assisted")  # the modes in which a question waits for the operator
LIVE_DRAFT_CHARS = 160  # of a draft in the pane while its whole text is in the answer box


class RunLike(Protocol):
    """What the screen needs of a Run (a real `icae_tui.run.Run`, or a test double)."""

    config: RunConfig
    run_id: str

    def subscribe(self, callback: Callable[[Event], None]) -> None: ...
    async def execute(self) -> RunOutcome: ...
    def answer(self, question_id: int, text: str) -> bool: ...
    def set_responder(self, mode: str) -> None: ...


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


class RunScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("q", "back", "Back", show=False),
        Binding("c", "cancel_run", "Cancel run"),
        Binding("t", "focus('#trace')", "Trace", show=False),
        Binding("r", "focus('#results')", "Results", show=False),
        Binding("f", "follow", "Follow trace"),
        # m cycles simulated → human → assisted; only the binding for the next mode is active,
        # so the footer reads "Responder ▸ <next>". ctrl+t does the same from anywhere; it is
        # listed in the footer while the answer box has the focus (where m would be typed).
        *(Binding("m", f"cycle('{mode}')", f"Responder ▸ {mode}") for mode in MODES),
        *(
            Binding("ctrl+t", f"cycle_typing('{mode}')", f"Responder ▸ {mode}", priority=True)
            for mode in MODES
        ),
        *(
            Binding("ctrl+t", f"cycle('{mode}')", f"Responder ▸ {mode}", show=False, priority=True)
            for mode in MODES
        ),
        *(
            Binding(str(i), f"responder('{mode}')", mode, show=False)
            for i, mode in enumerate(MODES, 1)
        ),
    ]

    def __init__(self, run: RunLike | None = None, *, replay: Iterable[Event] = ()) -> None:
        super().__init__()
        self.run = run
        self._replay = list(replay)
        self.worker: Worker[RunOutcome] | None = None
        self.outcome: RunOutcome | None = None
        self.finished: RunFinished | None = None
        self.crashed = ""
        self.started: RunStarted | None = None
        self.phase = ""
        self.phase_detail = ""
        self.score: Score | None = None
        self.status_message = ""
        self.mode = run.config.responder if run is not None else ""  # who answers, right now
        self.waiting: QuestionAsked | None = None  # a question waiting for the operator
        self._box_for: int | None = None  # the question the answer box's text belongs to
        self._sent: int | None = None  # answered by the operator, its answer event not yet in
        self._turn_events: list[Event] = []  # what the interaction metrics are computed from
        self.cancelling = False
        self._leave_when_done = False
        self._score_dirty = False
        self._t0: float | None = None  # wall-clock times from the events, so replays work too
        self._t_end: float | None = None
        self._patterns: dict[str, str] = {}
        self._trace: TraceLog | None = None
        self._results: ResultsTable | None = None
        if run is not None:
            self._patterns = {ref.id: ref.pattern for ref in run.config.task.cases}

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="run-header")
        with Horizontal(id="run-top"):
            trace = TraceLog(id="trace")
            trace.border_title = "Agent trace"
            yield trace
            with Vertical(id="side"):
                yield ClarificationPane(id="clarify")
                answer = AnswerBox(id="answer")
                answer.display = False
                yield answer
        results = ResultsTable(id="results")
        results.border_title = "Results"
        yield results
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
    def awaiting(self) -> int | None:
        """The id of the question waiting for the operator, if any."""
        return self.waiting.question_id if self.waiting is not None else None

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (
            WorkerState.PENDING,
            WorkerState.RUNNING,
        )

    def on_mount(self) -> None:
        self.set_interval(FLUSH_S, self.flush, name="flush")
        self.set_interval(1.0, self._render_header, name="clock")
        self._render_header()
        self._set_status(Text("waiting for the run to start…", style="dim"))
        self.clarify.set_mode(self.mode)
        if self.run is not None:
            cfg = self.run.config
            self.phase = "starting"
            self.sub_title = f"{cfg.task.id} · {cfg.agent}"
            self.run.subscribe(self.handle_event)
            self.worker = self.run_worker(
                self._execute(),
                name=f"run {self.run.run_id}",
                group=RUN_GROUP,
                exit_on_error=False,
                exclusive=False,
            )
        elif self._replay:
            for ev in self._replay:
                self.handle_event(ev)
            self.flush()
        self.trace.focus()

    async def _execute(self) -> RunOutcome:
        assert self.run is not None
        self.outcome = await self.run.execute()
        return self.outcome

    # --- events -----------------------------------------------------------------------------

    def handle_event(self, ev: Event) -> None:
        """The run's subscriber. Never raises: a display problem shows in the status line."""
        if not self.is_attached:
            return
        try:
            self._apply(ev)
        except Exception as err:  # the display must survive anything
            self._set_status(
                Text(f"display error on {type(ev).__name__}: {type(err).__name__}: ", "red")
                + safe(err, limit=300)
            )

    def _apply(self, ev: Event) -> None:  # noqa: C901 - one branch per event kind
        trace = self.trace
        match ev:
            case AgentOutput():
                trace.add_output(ev.stream, ev.text)
            case RunStarted():
                self.started = ev
                self._t0 = ev.ts
                self._turn_events.append(ev)
                self.mode = ev.responder
                self.clarify.set_budget(ev.budget)
                self.clarify.set_mode(ev.responder)
                self.refresh_bindings()
                trace.add(
                    f"run {ev.run_id} · task {ev.task_id} · agent {ev.agent} · level {ev.level}"
                    f" · responder {ev.responder} · budget {ev.budget}"
                )
                self._render_header()
            case PhaseChanged():
                self.phase, self.phase_detail = ev.phase, ev.detail
                trace.add(f"━━ {ev.phase}" + (f" · {ev.detail}" if ev.detail else ""))
                self._set_status(safe(f"{ev.phase}…" + (f" {ev.detail}" if ev.detail else "")))
                self._render_header()
            case Progress():
                trace.add(f"   · {ev.message}")
                self._set_status(safe(ev.message, "dim", limit=300))
            case AgentSaid():
                trace.add(ev.text, prefix="agent › ")
            case AgentWrote():
                trace.add(f"agent wrote {ev.path} ({ev.size} bytes)")
            case AgentCommand():
                trace.add(ev.command, prefix="$ ")
            case AgentCommandDone():
                trace.end_output()
                note = f" · {after}" if (after := ev.aftermath()) else ""
                trace.add(f"  ⏎ exit {ev.exit_code} · {ev.duration_s:.2f}s{note}")
            case QuestionAsked():
                trace.add(ev.text, prefix=f"? Q{ev.question_id} ")
                self.clarify.question(ev)
                if ev.mode in OPERATOR_MODES and ev.remaining_before > 0:
                    if self.run is not None:  # live: the operator answers it
                        self.waiting = ev
                        self._sync_answer_box()
                    elif ev.mode == "assisted":  # a replay: show what the operator was offered
                        self.clarify.draft(ev)
            case QuestionAnswered():
                trace.add(ev.text, prefix=f"  A{ev.question_id} ")
                self._turn_events.append(ev)
                self.clarify.answer(ev)
                if self.awaiting == ev.question_id:
                    self.waiting = self._box_for = self._sent = None
                    self.answer_box.set_text("")
                    self._sync_answer_box()
            case QuestionsRefused():
                self._turn_events.append(ev)
                self.clarify.refused(ev)
            case EventsDropped():  # the store bound: the trace from here on is not kept
                self._turn_events.append(ev)
                kinds = ", ".join(f"{k} {n}" for k, n in ev.by_kind.items())
                head = "in all" if ev.final else "store bound reached, no longer kept"
                trace.add(f"!! {head}: {ev.count} low-value event(s) ({kinds})")
            case ResponderChanged():
                trace.add(f"⇄ responder → {ev.mode}")
                self.clarify.switched(ev)
                self._mode_changed(ev.mode)
            case AgentSubmitted():
                trace.add(ev.message, prefix="agent submitted › ")
            case BuildChecked():
                trace.add(f"build {'ok' if ev.ok else 'FAILED'} — {ev.reason}")
                if not ev.ok:
                    for stream, body in (("stdout", ev.stdout), ("stderr", ev.stderr)):
                        if body:
                            trace.add_output(stream, body)
                    trace.end_output()
            case CasesPlanned():
                trace.add(f"   {len(ev.case_ids)} cases planned")
                self.results.plan(ev.case_ids, self._patterns)
            case CaseFinished():
                self.results.queue(ev.result)
            case ScoreUpdated():
                self.score = ev.score
                self._score_dirty = True
            case RunFinished():
                self._finish(ev)

    def _finish(self, ev: RunFinished) -> None:
        self.finished = ev
        self._t_end = ev.ts
        if ev.score is not None:
            self.score = ev.score
            self._score_dirty = True
        self.waiting = None
        self._sync_answer_box()
        self.trace.add(f"━━ run {ev.status}" + (f" — {ev.error}" if ev.error else ""))
        status = Text()
        status.append(f"run {ev.status}", style=STATUS_STYLES.get(ev.status, "bold"))
        if self.started is not None:
            metrics = interaction_metrics(self._turn_events)
            has_records = bool(self.started.task_records)
            self.clarify.metrics(metrics, has_records=has_records)
            status.append("  ·  " + metrics_line(metrics, has_records=has_records), style="dim")
        if ev.error:
            status.append(" — ")
            status.append_text(safe(ev.error, "red", limit=500))
        if ev.report_path:
            status.append("   report ", style="dim")
            status.append_text(safe(ev.report_path))
        self._set_status(status)
        self.flush()
        self._render_header()
        self.refresh_bindings()

    # --- batched drawing --------------------------------------------------------------------

    def flush(self) -> None:
        """Write what has queued up since the last flush (called every FLUSH_S seconds)."""
        if not self.is_attached:
            return
        try:
            self.trace.flush()
            self.results.flush()
            if self._score_dirty:
                self._score_dirty = False
                self.query_one("#score", Static).update(score_text(self.score))
        except Exception as err:
            self._set_status(Text(f"display error: {type(err).__name__}: {err}", "red"))

    def _set_status(self, text: Text) -> None:
        self.status_message = text.plain
        self.query_one("#status", Static).update(text)

    def _render_header(self) -> None:
        if not self.is_attached:
            return
        st = self.started
        text = Text()
        if st is None and self.run is not None:
            cfg = self.run.config
            st_id, title, agent = cfg.task.id, cfg.task.spec.title, cfg.agent
            level = cfg.level.value
        elif st is not None:
            st_id, title, agent, level = st.task_id, st.task_title, st.agent, st.level
        else:
            self.query_one("#run-header", Static).update(Text("no run", style="dim"))
            return
        text.append_text(safe(st_id, "bold"))
        text.append("   phase ", style="dim")
        if self.finished is not None:
            text.append(self.finished.status, style=STATUS_STYLES.get(self.finished.status, "bold"))
        elif self.crashed:
            text.append("crashed", style="bold red")
        else:
            step = f" {PHASES.index(self.phase) + 1}/{len(PHASES)}" if self.phase in PHASES else ""
            text.append_text(safe(self.phase or "—", "bold yellow"))
            text.append(step, style="dim")
        if self._t0 is not None:
            end = self._t_end if self._t_end is not None else time.time()
            text.append(f"   ⏱ {_clock(end - self._t0)}", style="dim")
        for label, value in (("agent", agent), ("level", level)):
            text.append(f"   {label} ", style="dim")
            text.append_text(clip(value, 40, "bold"))
        text.append("   responder ", style="dim")
        text.append_text(clip(self.mode or "—", 20, MODE_STYLES.get(self.mode, "bold")))
        text.append("   ")
        text.append_text(clip(title, 60, "italic dim"))
        self.query_one("#run-header", Static).update(text)

    # --- the responder and the operator answering ---------------------------------------------

    def _can_switch(self) -> bool:
        return (
            self.run is not None
            and self.started is not None
            and self.finished is None
            and self.running
            and not self.cancelling
        )

    def _next_mode(self) -> str:
        i = MODES.index(self.mode) if self.mode in MODES else -1
        return MODES[(i + 1) % len(MODES)]

    def action_cycle(self, mode: str) -> None:
        self.switch_responder(mode)

    def action_cycle_typing(self, mode: str) -> None:
        self.switch_responder(mode)

    def _typing(self) -> bool:
        return self.is_attached and self.focused is self.answer_box

    def action_responder(self, mode: str) -> None:
        self.switch_responder(mode)

    def switch_responder(self, mode: str) -> None:
        """Ask the run to switch who answers; the display follows at once."""
        if self.run is None or mode == self.mode:
            return
        if not self._can_switch():
            self.notify("The responder can be switched while a run is in progress.")
            return
        try:
            self.run.set_responder(mode)
        except Exception as err:  # an unknown mode, a run already gone: say so, keep going
            self.notify(f"Could not switch to {mode}: {err}", severity="error")
            return
        self._mode_changed(mode)

    def _mode_changed(self, mode: str) -> None:
        if mode == self.mode:
            return
        self.mode = mode
        self.clarify.set_mode(mode)
        self._render_header()
        self.refresh_bindings()
        if self.waiting is not None and mode not in OPERATOR_MODES:
            self._set_status(
                Text(f"Q{self.waiting.question_id} goes to the simulated user", "bold")
            )
        self._sync_answer_box()

    def _sync_answer_box(self) -> None:
        """Show the answer box iff a question waits for the operator in the current mode."""
        box = self.answer_box
        q = self.waiting
        if (
            q is None
            or self.run is None
            or self.finished is not None
            or self.mode not in OPERATOR_MODES
            or self._sent == q.question_id
        ):
            box.draft = ""
            if box.display:
                had_focus = box.has_focus
                box.display = False
                if had_focus or self.focused is None:
                    self.trace.focus()
            return
        qid = q.question_id
        if self._box_for != qid:  # a new question: a fresh box
            self._box_for = qid
            box.draft = ""
            box.set_text("")
        keys = "⏎ send · ^j new line · ^l clear"
        if self.mode == "assisted":
            self.clarify.draft(q, limit=LIVE_DRAFT_CHARS)
            box.draft = q.draft
            if not box.text.strip():
                box.set_text(q.draft)
            box.border_title = f"Answer Q{qid} · assisted · draft {draft_source(q.draft_records)}"
            box.border_subtitle = f"{keys} · ^r draft · ^t responder"
            status = f"Q{qid}: the simulated draft is in the box — Enter sends it, or edit it"
            notice = f"The agent asks Q{qid}. The simulated draft is in the answer box."
        else:
            if box.draft and box.text == box.draft:  # untouched draft: a human answers alone
                box.set_text("")
            box.draft = ""
            box.border_title = f"Answer Q{qid} · human"
            box.border_subtitle = f"{keys} · ^t responder"
            status = f"waiting for your answer to Q{qid} (box on the right)"
            notice = f"The agent asks Q{qid} — type your answer."
        self.refresh_bindings()
        if not box.display:
            box.display = True
            box.focus()
            self.notify(notice, title="Question")
        self._set_status(Text(status, "bold magenta"))

    def on_answer_box_submitted(self, event: AnswerBox.Submitted) -> None:
        event.stop()
        q = self.waiting
        if q is None or self.run is None or self.mode not in OPERATOR_MODES:
            return
        text = event.text.strip()
        if not text:
            self.notify("Type an answer first.", severity="warning")
            return
        if not self.run.answer(q.question_id, text):
            self.notify(f"Q{q.question_id} is not waiting for an answer.", severity="warning")
            return
        self._sent = q.question_id  # its answer event follows; the box goes now
        self._set_status(Text(f"Q{q.question_id} answered", "dim"))
        self._sync_answer_box()

    # --- the worker ---------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.worker:
            return
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self.crashed = f"{type(err).__name__}: {err}"
            self._t_end = time.time()
            self.flush()
            self._set_status(
                Text("run crashed — ", style="bold red") + safe(self.crashed, limit=500)
            )
            self._render_header()
        elif event.state == WorkerState.CANCELLED and self.finished is None:
            self._t_end = time.time()
            self._set_status(Text("run cancelled", style="bold yellow"))
            self._render_header()
        self.refresh_bindings()
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.cancelling = False
            self.waiting = None  # nobody will ask for that answer any more
            if self.is_attached:
                self._sync_answer_box()
            if self._leave_when_done:
                self._leave()

    # --- actions ------------------------------------------------------------------------------

    def _leave(self) -> None:
        self._leave_when_done = False
        if not self.is_attached or self not in self.app.screen_stack:
            return
        if self.app.screen is not self:  # a dialog on top is still closing: try again shortly
            self.set_timer(0.1, self._leave)
            return
        self.app.pop_screen()

    def action_back(self) -> None:
        if not self.running:
            self._leave()
            return
        if self.cancelling:  # second press while cleaning up: go now
            self._leave()
            return

        def confirmed(yes: bool | None) -> None:
            if yes and self.running:
                self._leave_when_done = True
                self.cancel_run()
            elif yes:
                self._leave()

        self.app.push_screen(
            ConfirmScreen("A run is in progress. Cancel it and go back?", "Cancel run", "Keep"),
            confirmed,
        )

    def action_cancel_run(self) -> None:
        if not self.running:
            self.notify("No run in progress.")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.cancel_run()

        self.app.push_screen(
            ConfirmScreen("Cancel the running run?", "Cancel run", "Keep"), confirmed
        )

    def cancel_run(self) -> None:
        if self.worker is not None and self.running:
            self.cancelling = True
            self._set_status(Text("cancelling… (removing containers)", style="bold yellow"))
            self.worker.cancel()
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":
            return self.running and not self.cancelling
        if action in ("cycle", "cycle_typing"):  # one binding per mode: only the next one lives
            if not self._can_switch() or not parameters or parameters[0] != self._next_mode():
                return False
            return action == "cycle" or self._typing()
        if action == "responder":
            return self._can_switch() and parameters[0] != self.mode
        return True

    def action_follow(self) -> None:
        trace = self.trace
        trace.auto_scroll = not trace.auto_scroll
        if trace.auto_scroll:
            trace.scroll_end(animate=False)
        self.notify("Following the trace." if trace.auto_scroll else "Trace scroll is free.")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        result = self.results.results.get(event.row_key.value or "")
        if result is None:
            self.notify("This case has not finished yet.")
            return
        self.app.push_screen(CaseDetailScreen(result))
