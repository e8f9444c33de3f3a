"""One view of a run for every display: `RunView.apply(event)` is the only place where
events become what a display shows.

The live console, the replay of a stored run and the headless printer each keep a `RunView`
and feed it the run's events in order; they differ only in how they draw its state. The view
knows nothing of Textual or Rich: its text is plain (made printable), with style hints.

The agent's usage against its limits (`usage()`: steps, wall clock, model calls, tokens,
cost) and each model call (`calls`, for the model calls screen) are kept too. The operator's
pauses of the agent (AgentPaused, AgentResumed) are off its wall clock, as they are off its
time limit; when each phase began is kept for the progress line (display/progress.py).

Displays draw incrementally: `trace` is append-only (the last TRACE_KEEP lines are kept,
`trace_total` counts them all, `trace_since` gives what came after a display's cursor), and
the `*_rev` counters change whenever their part of the state does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from icae_tui.display import wording as w
from icae_tui.display.diagnostics import diagnostics_lines
from icae_tui.domain.agent import Limits
from icae_tui.domain.diagnostics import Diagnostics
from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentPaused,
    AgentResumed,
    AgentSaid,
    AgentStopped,
    AgentStreamed,
    AgentSubmitted,
    AgentThought,
    AgentToolUsed,
    AgentWrote,
    BuildChecked,
    CaseFinished,
    CasesPlanned,
    DiagnosticsMade,
    Event,
    EventsDropped,
    ModelCallMade,
    PackageRefused,
    PackageServed,
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
from icae_tui.domain.results import LADDER_METRICS, CaseResult, MetricSpec, Score
from icae_tui.domain.states import (
    AnsweredBy,
    ModelRole,
    Phase,
    ResponderMode,
    StopReason,
    Stream,
)
from icae_tui.results.claims import ClaimsCheck, claims_line, claims_of
from icae_tui.users.metrics import InteractionMetrics, interaction_metrics
from icae_tui.util.safe_text import printable

MODEL_AGENT_PREFIX = "model:"  # the built-in model agent: one model call a step
STREAMED: Final = "said"  # the pseudo-stream of the agent's streamed text, completed like output
Source = Stream | Literal["said"]  # where a piece of output came from
TRACE_KEEP = 50_000  # trace lines kept; a display that fell further behind skips the rest


@dataclass
class ModelUsage:
    """The run's model calls, summed: what the header and the headless summary show."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    infra_failures: int = 0

    def add(self, ev: ModelCallMade) -> None:
        self.calls += 1
        self.tokens_in += ev.tokens_in
        self.tokens_out += ev.tokens_out
        self.infra_failures += ev.infra_failures
        if ev.cost is not None:
            self.cost = (self.cost or 0.0) + ev.cost


@dataclass(frozen=True)
class TraceLine:
    """One printable line of the run's log. `kind` says what it is (run, phase, progress,
    said, wrote, command, output, done, question, answer, refused, dropped, switch, submitted,
    build, planned, case, score, finished, report), so a display can leave some out."""

    kind: str
    text: str
    style: str = ""


@dataclass(frozen=True)
class Turn:
    """An entry of the clarifications: question, draft, answer, refused, switch or metrics.
    `head` is printable; `body` (None: no body line) is the untrusted text, cut at `limit`."""

    kind: str
    head: tuple[w.Seg, ...]
    body: str | None = None
    body_style: str = ""
    limit: int = w.TEXT_LIMIT
    question_id: int | None = None


@dataclass(frozen=True)
class CaseRow:
    """A planned case; `not_run`: the run ended before it was judged (a cancel, a failure)."""

    case_id: str
    pattern: str = ""
    split: str = ""
    result: CaseResult | None = None
    not_run: bool = False

    @property
    def verdict(self) -> str:
        return self.result.verdict.value if self.result is not None else ""

    @property
    def reason(self) -> str:
        return self.result.reason if self.result is not None else ""


@dataclass
class RunView:
    # the run's header facts (RunStarted), phase, responder and outcome
    started: RunStarted | None = None
    phase: Phase | None = None
    phase_detail: str = ""
    # who answers, per the events (RunStarted, then ResponderChanged)
    mode: ResponderMode | None = None
    finished: RunFinished | None = None
    last_ts: float | None = None  # of the latest event: a stored run's clock stops there
    # the log
    trace: deque[TraceLine] = field(default_factory=lambda: deque(maxlen=TRACE_KEEP))
    trace_total: int = 0
    # clarifications
    turns: list[Turn] = field(default_factory=list)
    asked: int = 0  # questions asked, stored or only counted
    pending: QuestionAsked | None = None  # a question waiting for the operator
    refused: QuestionsRefused | None = None  # the latest (cumulative) count past the budget
    dropped: EventsDropped | None = None  # the latest (cumulative) count past the store bound
    interaction: InteractionMetrics | None = None  # once the run is over
    model: ModelUsage = field(default_factory=lambda: ModelUsage())  # the model calls so far
    calls: list[ModelCallMade] = field(default_factory=list)  # each call, for the calls screen
    packages: list[PackageServed] = field(default_factory=list)  # what the gateway served
    # the agent: its steps (see `usage`) and its wall clock (the generate phase)
    steps: int | None = None
    agent_t0: float | None = None  # when the generate phase began
    agent_t1: float | None = None  # when the agent stopped (or the phase ended)
    # the operator's pauses of the agent (AgentPaused, AgentResumed): not on its clock
    agent_paused: bool = False
    paused_since: float | None = None  # when the pause under way began
    paused_s: float = 0.0  # the pauses that are over, summed
    # when the current phase began, and when the cases were planned (display/progress.py)
    phase_t0: float | None = None
    planned_t0: float | None = None
    # results
    cases: dict[str, CaseRow] = field(default_factory=dict)  # in planned order
    cases_done: int = 0  # of `cases`, judged: the one count the score line and progress show
    metric_specs: tuple[MetricSpec, ...] = LADDER_METRICS  # each case's, as the run planned
    score: Score | None = None
    score_partial: bool = False  # the run ended without a score: `score` is what was measured
    # the agent's completion claims read against the final score (results/claims.py)
    claims: ClaimsCheck | None = None
    # diagnostics beyond tests (structure, API signature, rules, critic, review score)
    diagnostics: Diagnostics | None = None
    status: tuple[w.Seg, ...] = ((w.WAITING_TO_START, "muted"),)
    # change counters for incremental drawing
    head_rev: int = 0
    turns_rev: int = 0
    cases_rev: int = 0
    score_rev: int = 0
    status_rev: int = 0
    # what the reducer remembers between events
    _partial: dict[Source, str] = field(default_factory=dict)
    _metric_events: list[Event] = field(default_factory=list)
    _drafted: set[int] = field(default_factory=set)
    _refused_at: int | None = None
    _pending_at: int | None = None  # the turn of the question waiting for the operator
    _score_headed: bool = False  # the score's heading is in the trace
    _final_written: Score | None = None  # the last final score written to the trace
    _claim_events: dict[str, Event] = field(default_factory=dict)  # the last of each kind: what
    # claims are read from (the agent's submission and last message, the build)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> RunView:
        view = cls()
        for ev in events:
            view.apply(ev)
        return view

    # --- reading ------------------------------------------------------------------------

    @property
    def budget(self) -> int | None:
        return self.started.budget if self.started is not None else None

    @property
    def has_records(self) -> bool:
        return self.started is not None and bool(self.started.task_records)

    @property
    def limits(self) -> Limits:
        return self.started.limits if self.started is not None else Limits()

    def usage(self, now: float | None = None) -> w.Usage:
        """The agent's figures against its limits at `now` (the display's clock; default: the
        latest event's time). Steps: the agent's own count once it stopped (AgentStopped); a
        model agent takes one step per model call, so until then its calls are its steps; other
        agents' steps are not known before they stop. Its wall clock runs from the generate
        phase to its stop (the run starts the limit's clock a moment later: never less)."""
        end = self.agent_t1
        if end is None:
            end = now if now is not None else self.last_ts
        agent_s = None
        if self.agent_t0 is not None and end is not None:
            agent_s = max(0.0, end - self.agent_t0 - self.paused_until(end))
        m = self.model
        return w.Usage(
            limits=self.limits, steps=self.steps, agent_s=agent_s, calls=m.calls,
            tokens_in=m.tokens_in, tokens_out=m.tokens_out, cost=m.cost,
            infra_failures=m.infra_failures,
        )  # fmt: skip

    def paused_until(self, end: float) -> float:
        """The seconds the agent was paused, up to `end` (a pause under way included)."""
        if self.agent_paused and self.paused_since is not None:
            return self.paused_s + max(0.0, end - self.paused_since)
        return self.paused_s

    def trace_since(self, cursor: int) -> tuple[list[TraceLine], int]:
        """The lines after `cursor` (a count of lines seen) that are still kept, and the
        new cursor."""
        kept = len(self.trace)
        new = min(self.trace_total - cursor, kept)
        return [self.trace[i] for i in range(kept - new, kept)], self.trace_total

    def metrics(self) -> InteractionMetrics:
        """The interaction metrics of what was seen so far (the report's function)."""
        return interaction_metrics(self._metric_events)

    @property
    def cases_planned(self) -> int:
        return len(self.cases)

    def shown_score(self) -> Score | None:
        """The score as a display shows it: its cases done of planned are the view's (the
        progress bar's), so the two never disagree while a run is being cancelled or a case
        has finished whose score is not in yet."""
        score = self.score
        if score is None or not self.cases:
            return score
        if (score.done, score.planned) == (self.cases_done, self.cases_planned):
            return score
        return score.model_copy(update={"done": self.cases_done, "planned": self.cases_planned})

    def results_summary(self) -> str:
        """e.g. "12 accepted · 3 wrong_answer · 55 pending" ("not run" once the run is over)."""
        return w.results_summary(
            [row.verdict for row in self.cases.values()], over=self.finished is not None
        )

    # --- the reducer ------------------------------------------------------------------

    def apply(self, ev: Event) -> None:  # noqa: C901 - one branch per event kind
        self.last_ts = ev.ts
        match ev:
            case AgentOutput():
                self._output(ev.stream, ev.text)
            case RunStarted():
                self.started = ev
                self.mode = ev.responder
                if ev.agent.startswith(MODEL_AGENT_PREFIX):
                    self.steps = 0  # counted by its calls until it stops (see `usage`)
                self.head_rev += 1
                self._metric_events.append(ev)
                self._line("run", w.run_line(ev), style="strong")
            case PhaseChanged():
                self._agent_clock(ev)
                self.phase, self.phase_detail = ev.phase, ev.detail
                self.phase_t0 = ev.ts
                self.head_rev += 1
                if not (ev.phase == Phase.SCORE and self._score_headed):
                    self._line("phase", w.phase_line(ev), style="strong")
                self._status(w.phase_status(ev))
            case Progress():
                self._line("progress", ev.message, prefix=w.PROGRESS_PREFIX, style="muted")
                self._status([(printable(ev.message, limit=w.STATUS_LIMIT), "muted")])
            case AgentStreamed():
                self._output(STREAMED, ev.text)
            case AgentSaid() if ev.streamed:
                self._end_output()  # shown already, as it streamed in
                self._claim_events[ev.kind] = ev
            case AgentSaid():
                self._line("said", ev.text, prefix=w.SAID_PREFIX)
                self._claim_events[ev.kind] = ev
            case AgentThought():
                self._line("thought", ev.text, prefix=w.THOUGHT_PREFIX, style="muted")
            case AgentToolUsed():
                self._line("tool", w.tool_line(ev), style="warn" if ev.ok is False else "")
            case AgentWrote():
                self._line("wrote", w.wrote_line(ev))
            case AgentCommand():
                self._line("command", ev.command, prefix=w.COMMAND_PREFIX, style="strong")
            case AgentCommandDone():
                self._line("done", w.done_line(ev), style="warn" if ev.aftermath() else "muted")
            case ModelCallMade():
                if ev.role is ModelRole.AGENT:  # only the agent's calls count against it
                    self.model.add(ev)
                self.calls.append(ev)
                if self.steps is not None and self.agent_t1 is None:
                    self.steps = max(self.steps, self.model.calls)
                self.head_rev += 1
                bad = ev.call_kind != "ok" or ev.infra_failures
                self._line("model", w.model_call_line(ev), style="warn" if bad else "muted")
            case PackageServed():
                self.packages.append(ev)
                self._line("package", w.package_line(ev), style="muted")
            case PackageRefused():
                self._line("package", w.package_refused_line(ev), style="warn")
            case AgentPaused() | AgentResumed():
                self._paused(ev)
            case AgentStopped():
                self._end_pause(ev.ts)  # a limit or an error stopped it while paused
                self.steps = ev.steps
                if self.agent_t1 is None:
                    self.agent_t1 = ev.ts
                self.head_rev += 1
                ok = ev.reason is StopReason.SUBMITTED
                self._line("stopped", w.stopped_line(ev), style="muted" if ok else "warn")
            case QuestionAsked():
                self._asked(ev)
            case QuestionAnswered():
                self._answered(ev)
            case QuestionsRefused():
                self._refused(ev)
            case EventsDropped():
                self.dropped = ev
                self._metric_events.append(ev)
                self._line("dropped", w.dropped_line(ev), style="warn")
            case ResponderChanged():
                self.mode = ev.mode
                self.head_rev += 1
                self._redirect(ev.mode)
                self._line("switch", w.switch_line(ev))
                self._turn(Turn("switch", tuple(w.switch_head(ev))))
                if ev.mode == ResponderMode.ASSISTED and self.pending is not None:
                    self._draft(self.pending)  # the operator now gets the draft
            case AgentSubmitted():
                self._line("submitted", ev.message, prefix=w.SUBMITTED_PREFIX)
                self._claim_events[ev.kind] = ev
            case BuildChecked():
                self._claim_events[ev.kind] = ev
                self._line("build", w.build_line(ev), style="good" if ev.ok else "error")
                if not ev.ok:
                    for stream, body in ((Stream.STDOUT, ev.stdout), (Stream.STDERR, ev.stderr)):
                        if body:
                            self._output(stream, body)
                    self._end_output()
            case CasesPlanned():
                if self.planned_t0 is None:
                    self.planned_t0 = ev.ts
                self._line("planned", w.planned_line(ev))
                self.metric_specs = tuple(ev.metrics)
                for i, case_id in enumerate(ev.case_ids):
                    if case_id not in self.cases:
                        pattern = ev.patterns[i] if i < len(ev.patterns) else ""
                        split = ev.splits[i] if i < len(ev.splits) else ""
                        self.cases[case_id] = CaseRow(case_id, pattern, split)
                self.cases_rev += 1
            case CaseFinished():
                r = ev.result
                before = self.cases.get(r.case_id)
                if before is None or before.result is None:
                    self.cases_done += 1
                self.cases[r.case_id] = CaseRow(r.case_id, r.pattern, r.split, r)
                self.cases_rev += 1
                self._line("case", w.case_line(r), style="good" if r.passed else "error")
            case ScoreUpdated():
                self._score(ev.score)
                if ev.score.done == ev.score.planned:
                    # the run says its final score before its score phase (a failed build
                    # has none): the heading comes first all the same, once
                    if self.phase != Phase.SCORE and not self._score_headed:
                        self._line("phase", w.heading(Phase.SCORE), style="strong")
                    self._score_headed = True
                    first = self._claims(ev)
                    claims = self.claims.contradicted if self.claims is not None else 0
                    if not _only_review_added(self._final_written, ev.score):
                        # the review score alone is said by the diagnostics' lines
                        self._line("score", w.score_line(ev.score, claims=claims), style="strong")
                    self._final_written = ev.score
                    if first and self.claims is not None and self.claims.flags:
                        # only what the results contradict: the report lists every claim
                        self._line("claims", claims_line(self.claims), style="error-strong")
            case DiagnosticsMade():
                self.diagnostics = ev.diagnostics
                self.score_rev += 1
                for text in diagnostics_lines(ev.diagnostics):
                    self._line("diagnostics", text, style="muted")
            case RunFinished():
                self._finished(ev)

    # --- clarifications ---------------------------------------------------------------

    def _turn(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.turns_rev += 1

    def _asked(self, ev: QuestionAsked) -> None:
        self.asked += 1
        self._metric_events.append(ev)
        self._line("question", ev.text, prefix=w.question_prefix(ev), style="question")
        self._turn(
            Turn("question", tuple(w.question_head(ev)), ev.text, question_id=ev.question_id)
        )
        if ev.mode in w.OPERATOR_ANSWERS and ev.remaining_before > 0:
            self.pending = ev
            self._pending_at = len(self.turns) - 1
            self.head_rev += 1
            if ev.mode == AnsweredBy.ASSISTED:
                self._draft(ev)

    def _draft(self, ev: QuestionAsked) -> None:
        """What the operator is offered in assisted mode (once per question)."""
        if ev.question_id in self._drafted:
            return
        self._drafted.add(ev.question_id)
        head = tuple(w.draft_head(ev))
        self._turn(Turn("draft", head, ev.draft, "draft-body", w.DRAFT_LIMIT, ev.question_id))

    def _answered(self, ev: QuestionAnswered) -> None:
        self._metric_events.append(ev)
        self._line("answer", ev.text, prefix=w.answer_prefix(ev))
        self._turn(Turn("answer", tuple(w.answer_head(ev)), ev.text, question_id=ev.question_id))
        if self.pending is not None and self.pending.question_id == ev.question_id:
            self.pending = None
            self._pending_at = None
            self.head_rev += 1

    def _redirect(self, mode: ResponderMode) -> None:
        """The waiting question now waits for `mode`: its entry says so (it named the
        responder it was asked for)."""
        at, q = self._pending_at, self.pending
        if at is None or q is None:
            return
        self.turns[at] = replace(self.turns[at], head=tuple(w.question_head(q, mode)))
        self.turns_rev += 1

    def _refused(self, ev: QuestionsRefused) -> None:
        """Counted, not listed: one entry, kept up to date (the counts are cumulative)."""
        before = self.refused.count if self.refused is not None else 0
        self.asked += ev.count - before
        self.refused = ev
        self._metric_events.append(ev)
        self._line("refused", w.refused_line(ev), style="warn")
        turn = Turn("refused", tuple(w.refused_head(ev)), ev.sample, "sample")
        if self._refused_at is None:
            self._refused_at = len(self.turns)
            self._turn(turn)
        else:
            self.turns[self._refused_at] = turn
            self.turns_rev += 1

    # --- score, status, the end -------------------------------------------------------

    def _score(self, score: Score) -> None:
        self.score = score
        self.score_rev += 1

    def _claims(self, final: ScoreUpdated) -> bool:
        """The agent's claims read against the final score; whether it is the first time."""
        first = self.claims is None
        self.claims = claims_of([*self._claim_events.values(), final])
        self.score_rev += 1
        return first

    def _status(self, segs: list[w.Seg]) -> None:
        self.status = tuple(segs)
        self.status_rev += 1

    def _agent_clock(self, ev: PhaseChanged) -> None:
        if ev.phase == Phase.GENERATE and self.agent_t0 is None:
            self.agent_t0 = ev.ts
        elif ev.phase != Phase.GENERATE and self.agent_t0 is not None and self.agent_t1 is None:
            self.agent_t1 = ev.ts  # the generate phase is over, whatever the agent said
        if ev.phase != Phase.GENERATE:
            self._end_pause(ev.ts)  # the run lets a paused agent go when its phase ends

    def _paused(self, ev: AgentPaused | AgentResumed) -> None:
        """The operator paused or resumed the agent; a resume says how long it was paused
        (by the run's clock), else the events' timestamps do."""
        if isinstance(ev, AgentPaused):
            if not self.agent_paused:
                self.agent_paused, self.paused_since = True, ev.ts
            self._line("paused", w.paused_line(ev), style="warn-strong")
            self._status(w.paused_status(ev))
        else:
            self._end_pause(ev.ts, ev.paused_s)
            self._line("resumed", w.resumed_line(ev), style="muted")
            self._status(w.resumed_status(ev))
        self.head_rev += 1

    def _end_pause(self, ts: float, paused_s: float = 0.0) -> None:
        if self.agent_paused and self.paused_since is not None:
            self.paused_s += paused_s if paused_s > 0 else max(0.0, ts - self.paused_since)
            self.head_rev += 1
        self.agent_paused, self.paused_since = False, None

    def _finished(self, ev: RunFinished) -> None:
        self._end_pause(ev.ts)
        self.finished = ev
        if self.agent_t0 is not None and self.agent_t1 is None:
            self.agent_t1 = ev.ts
        self.pending = None
        self._pending_at = None
        self.head_rev += 1
        if ev.score is not None:
            self._score(ev.score)
        elif self.score is not None:  # cancelled or failed: no score, what was measured stays
            self.score_partial = True
            self.score_rev += 1
        unjudged = [row for row in self.cases.values() if row.result is None]
        for row in unjudged:  # the run is over: these will not be judged
            self.cases[row.case_id] = replace(row, not_run=True)
        if unjudged:
            self.cases_rev += 1
        self._line("finished", w.finished_line(ev), style=f"status:{ev.status}")
        if ev.report_path:
            self._line("report", w.report_line(ev.report_path), style="muted")
        summary = ""
        if self.started is not None:
            self.interaction = self.metrics()
            summary = w.metrics_line(self.interaction, has_records=self.has_records)
            segs = w.metrics_segments(self.interaction, has_records=self.has_records)
            self._turn(Turn("metrics", tuple(segs)))
        self._status(w.finished_status(ev, summary))

    # --- trace lines --------------------------------------------------------------------

    def _push(self, line: TraceLine) -> None:
        self.trace.append(line)
        self.trace_total += 1

    def _line(self, kind: str, text: str, *, prefix: str = "", style: str = "") -> None:
        """`text`, a line at a time, each after `prefix`; any unfinished output goes first."""
        self._end_output()
        head = printable(prefix)
        for part in text.replace("\r\n", "\n").split("\n"):
            self._push(TraceLine(kind, head + printable(part, limit=w.LINE_LIMIT), style))

    def _output(self, stream: Source, chunk: str) -> None:
        """A chunk of a command's output (or of the agent's streamed text); lines are
        completed across chunks."""
        data = self._partial.pop(stream, "") + chunk.replace("\r\n", "\n")
        *lines, rest = data.split("\n")
        for part in lines:
            self._partial_line(stream, part)
        if len(rest) > 4 * w.LINE_LIMIT:  # a newline-less flood: show what there is
            self._partial_line(stream, rest)
            rest = ""
        if rest:
            self._partial[stream] = rest

    def _partial_line(self, stream: Source, text: str) -> None:
        if stream == STREAMED:
            self._push(TraceLine("said", w.SAID_PREFIX + printable(text, limit=w.LINE_LIMIT)))
            return
        prefix = w.OUTPUT_PREFIX.get(stream, "  ")
        style = "warn" if stream == Stream.STDERR else ""
        self._push(TraceLine("output", prefix + printable(text, limit=w.LINE_LIMIT), style))

    def _end_output(self) -> None:
        """Unfinished output lines end when the command ends or anything else happens."""
        for stream, rest in list(self._partial.items()):
            self._partial_line(stream, rest)
        self._partial.clear()


def _only_review_added(before: Score | None, now: Score) -> bool:
    """`now` is `before` with its review score (made after the cases) and nothing else new."""
    if before is None or now.review is None:
        return False
    return before.model_copy(update={"review": None}) == now.model_copy(update={"review": None})
