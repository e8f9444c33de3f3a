"""Typed run events. Every event carries run id, sequence number and timestamp.

The orchestrator publishes them; displays (console, headless printer) and the store consume
them. `parse_event` turns a stored JSON payload back into the right class.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from icae_tui.domain.agent import Limits
from icae_tui.domain.diagnostics import Diagnostics
from icae_tui.domain.results import LADDER_METRICS, CaseResult, MetricSpec, Score
from icae_tui.domain.states import (
    AnsweredBy,
    FailureKind,
    ModelRole,
    PackageSource,
    Phase,
    ResponderMode,
    RunStatus,
    StopReason,
    Stream,
)
from icae_tui.domain.task import Ecosystem, Reference


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str = ""
    seq: int = 0
    ts: float = Field(default_factory=time.time)


class RunStarted(Event):
    kind: Literal["run_started"] = "run_started"
    task_id: str
    task_title: str
    agent: str
    level: str
    responder: ResponderMode
    budget: int
    prd: str
    # ids only (never content): what the level's records are, for interaction metrics
    task_records: list[str] = Field(default_factory=list)
    generic_records: list[str] = Field(default_factory=list)
    limits: Limits = Limits()  # the agent's: what the header counts its usage against


class PhaseChanged(Event):
    """prepare → generate → freeze → build → evaluate → score."""

    kind: Literal["phase"] = "phase"
    phase: Phase
    detail: str = ""


class Progress(Event):
    """Free-form progress (image builds, container work) for status lines."""

    kind: Literal["progress"] = "progress"
    message: str


class AgentSaid(Event):
    kind: Literal["agent_said"] = "agent_said"
    text: str
    streamed: bool = False  # its text came before as AgentStreamed pieces


class AgentStreamed(Event):
    """A piece of the agent's reply as the model streams it (coalesced to lines or a few
    dozen characters); the whole reply follows as AgentSaid(streamed=True)."""

    kind: Literal["agent_streamed"] = "agent_streamed"
    text: str


class AgentThought(Event):
    """Reasoning the agent showed (Codex `reasoning` items, Claude `thinking` blocks)."""

    kind: Literal["agent_thought"] = "agent_thought"
    text: str


class AgentToolUsed(Event):
    """A tool of the agent's own other than a shell command or a file write (Claude's Read,
    Grep, TodoWrite…; Codex's MCP calls, web searches, to-do lists…). `detail` is a short
    printable summary of its input; `ok` is None when the agent did not say how it went."""

    kind: Literal["agent_tool"] = "agent_tool"
    tool: str
    detail: str = ""
    ok: bool | None = None


class AgentWrote(Event):
    kind: Literal["agent_wrote"] = "agent_wrote"
    path: str
    size: int


class AgentCommand(Event):
    kind: Literal["agent_command"] = "agent_command"
    command: str


class AgentOutput(Event):
    """A chunk of a command's output, decoded with replacement; displays must escape it."""

    kind: Literal["agent_output"] = "agent_output"
    stream: Stream
    text: str


class AgentCommandDone(Event):
    kind: Literal["agent_command_done"] = "agent_command_done"
    command: str
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    pids_capped: bool = False  # a fork failed at the container's pids limit (a fork bomb?)
    left_running: int = 0  # processes the command left running when it returned
    killed_left: bool = False  # at the pids limit: those were killed, so the next step can start

    def aftermath(self) -> str:
        """What displays show after the exit code: limits hit, processes left running."""
        notes = ["timed out"] if self.timed_out else []
        if self.pids_capped:
            notes.append("hit the process limit (fork bomb?)")
        if self.left_running:
            killed = ", killed" if self.killed_left else ""
            notes.append(f"left {self.left_running} process(es) running{killed}")
        return " · ".join(notes)


class ModelCallMade(Event):
    """One model call through the run's gateway, for the agent or another role (bodies are
    kept apart, in the run's model_calls.jsonl). kind: ok, agent_error, infra, limit,
    replay_divergence. Only the agent's calls count against the agent's limits."""

    kind: Literal["model_call"] = "model_call"
    role: ModelRole = ModelRole.AGENT
    index: int
    call_kind: str
    model: str = ""
    status: int = 0
    attempts: int = 0
    infra_failures: int = (
        0  # upstream attempts that failed (429/5xx, no connection): not the agent's fault
    )
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    finish_reason: str | None = None
    tool_calls: list[str] = Field(default_factory=list)
    error: str | None = None
    stop_reason: str | None = None


class PackageServed(Event):
    """One artifact (a wheel, an sdist, an npm tarball) the run's package gateway served to
    the agent's box; its bytes are in the host's content-addressed cache under `sha256`."""

    kind: Literal["package"] = "package"
    ecosystem: Ecosystem
    name: str
    version: str = ""
    filename: str
    size: int
    sha256: str
    source: PackageSource
    total_bytes: int = 0  # the run's artifacts so far, this one included


class PackageRefused(Event):
    """A registry request the package gateway would not answer: a name the task does not
    allow, the run's byte budget spent, a miss in cache mode, the registry unreachable."""

    kind: Literal["package_refused"] = "package_refused"
    ecosystem: Ecosystem | None = None
    name: str = ""
    path: str
    status: int
    reason: str


class AgentPaused(Event):
    """The operator paused the agent (a CLI agent's container is frozen; a host-driven
    agent waits before its next step)."""

    kind: Literal["agent_paused"] = "agent_paused"
    by: str = "operator"


class AgentResumed(Event):
    kind: Literal["agent_resumed"] = "agent_resumed"
    paused_s: float = 0.0  # not counted against the agent's time limit


class AgentStopped(Event):
    """Why the agent's phase ended: it submitted, or a limit or an error stopped it."""

    kind: Literal["agent_stopped"] = "agent_stopped"
    reason: StopReason
    detail: str = ""
    steps: int = 0


class QuestionAsked(Event):
    """`mode` says who is expected to answer; `draft` is the simulated user's answer, shown
    to the operator in assisted mode (and kept for audit in every mode)."""

    kind: Literal["question"] = "question"
    question_id: int
    text: str
    remaining_before: int
    mode: AnsweredBy = AnsweredBy.SIMULATED
    via: str = "agent"  # agent (host-driven) or socket (icae-ask / ICAE wire shape)
    draft: str = ""
    draft_records: list[str] = Field(default_factory=list)
    draft_fallback: bool = False


class QuestionAnswered(Event):
    kind: Literal["answer"] = "answer"
    question_id: int
    text: str
    record_ids: list[str] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)
    fallback: bool = False
    over_budget: bool = False
    responder: AnsweredBy = AnsweredBy.SIMULATED
    edited: bool = False  # assisted: the operator changed the draft before sending
    model: str = ""  # model mode: which model chose or rephrased
    runner_up: str = ""  # the best record not chosen, with its score in `scores`
    remaining: int = 0
    latency_s: float = 0.0


class QuestionsRefused(Event):
    """Questions past the budget after the first, counted instead of stored one by one (each
    got the budget-spent reply). Cumulative since the budget was spent: the latest holds the
    totals; `final` once the channel closed."""

    kind: Literal["questions_refused"] = "questions_refused"
    count: int
    chars: int  # of the questions, as received (each clipped to the channel's maximum)
    first_id: int
    last_id: int
    sample: str = ""  # the beginning of the first refused question
    final: bool = False


class EventsDropped(Event):
    """The run's store bound was reached: low-value events (agent trace, progress, refused
    questions) are counted from then on, neither stored nor shown. Cumulative: one is stored
    at the first drop, the last (`final`) just before RunFinished holds the run's totals."""

    kind: Literal["events_dropped"] = "events_dropped"
    count: int
    payload_bytes: int  # their JSON size
    by_kind: dict[str, int] = Field(default_factory=dict)
    max_events: int  # the bound that was reached
    max_bytes: int
    final: bool = False


class ResponderChanged(Event):
    kind: Literal["responder"] = "responder"
    mode: ResponderMode
    by: str = "operator"


class AgentSubmitted(Event):
    kind: Literal["agent_submitted"] = "agent_submitted"
    message: str


class BuildChecked(Event):
    kind: Literal["build"] = "build"
    ok: bool
    exit_code: int | None
    reason: str
    stdout: str = ""
    stderr: str = ""


class CasesPlanned(Event):
    """The cases in planned order, with what displays group them by, so no display needs
    the task. `patterns` and `splits` run beside `case_ids` (empty in runs stored before).
    `metrics`: every case metric the run's scorers give, in order, so a stored run shows its
    columns without the scorers that made them (runs stored before had the ladder's).
    `reference`: what the cases are judged against, the oracle or their stored expected
    outputs; left out of the stored event when it is the oracle (as in runs stored before)."""

    kind: Literal["cases_planned"] = "cases_planned"
    case_ids: list[str]
    patterns: list[str] = Field(default_factory=list)
    splits: list[str] = Field(default_factory=list)
    metrics: list[MetricSpec] = Field(default_factory=lambda: list(LADDER_METRICS))
    reference: Reference = Field(
        default=Reference.ORACLE, exclude_if=lambda ref: ref is Reference.ORACLE
    )


class CaseFinished(Event):
    kind: Literal["case"] = "case"
    result: CaseResult


class ScoreUpdated(Event):
    kind: Literal["score"] = "score"
    score: Score


class DiagnosticsMade(Event):
    """Diagnostics beyond tests (structure, API signature, task rules, the critic, the review
    score), made once after the cases: a stored run shows them without re-running."""

    kind: Literal["diagnostics"] = "diagnostics"
    diagnostics: Diagnostics


class RunFinished(Event):
    kind: Literal["run_finished"] = "run_finished"
    status: RunStatus
    score: Score | None = None
    error: str = ""
    failure: FailureKind | None = None  # a failed run's: what kind of failure (None: not failed)
    report_path: str = ""


AnyEvent = Annotated[
    RunStarted
    | PhaseChanged
    | Progress
    | AgentSaid
    | AgentStreamed
    | AgentThought
    | AgentToolUsed
    | AgentWrote
    | AgentCommand
    | AgentOutput
    | AgentCommandDone
    | ModelCallMade
    | PackageServed
    | PackageRefused
    | AgentPaused
    | AgentResumed
    | AgentStopped
    | QuestionAsked
    | QuestionAnswered
    | QuestionsRefused
    | EventsDropped
    | ResponderChanged
    | AgentSubmitted
    | BuildChecked
    | CasesPlanned
    | CaseFinished
    | ScoreUpdated
    | DiagnosticsMade
    | RunFinished,
    Field(discriminator="kind"),
]

_adapter: TypeAdapter[Any] = TypeAdapter(AnyEvent)


def parse_event(payload: str | bytes) -> Event:
    event: Event = _adapter.validate_json(payload)
    return event
