"""How much one run may store, and what gives way first.

Every event is stored before displays see it, so whatever an agent or a delivery can make a
run emit, it can make the store (and report.json) hold. Three caps bound a run's store:

- per case and side, at most `sidefx.CHANGES_CAP` file changes (and `CHANGES_JSON_CAP` bytes
  of them) are kept; the true count and a digest of all of them are recorded, and the
  comparison uses the digest, so nothing is lost for the verdict;
- past the question budget the first question is stored as a turn, the next ones are only
  counted (`QuestionsRefused`, emitted at 1, 10, 100, … refused and when the channel closes);
- per run, once MAX_RUN_EVENTS events or MAX_RUN_BYTES bytes are stored, low-value events
  (`droppable`: the agent's trace, progress lines, questions past the budget) are counted
  into `EventsDropped` (one at the first drop, the totals just before RunFinished), neither
  stored nor shown. Events that decide or explain the result are always kept.

The bound. A stored event costs its JSON payload plus about 100 bytes of row and index in
SQLite (EVENT_OVERHEAD_BYTES, measured and rounded up). Low-value events are admitted only
while the run's total stays within MAX_RUN_BYTES, so one run's events take at most

    MAX_RUN_BYTES                                   64 MiB
  + cases × CASE_BOUND_BYTES                        CaseFinished + ScoreUpdated, see below
  + (budget + 1) turns                              questions ≤ MAX_QUESTION_CHARS; answers
                                                    are the task's records or the operator's
  + (log10(refused) + 2) QuestionsRefused and 2 EventsDropped, under 1 KiB each
  + the run's frame: RunStarted (the task's title and PRD: at most NAME_CHARS and
    PRD_CHARS characters, domain/task.py), BuildChecked (≤ 2 × 4,000 characters),
    phases, CasesPlanned, AgentSubmitted (the agent's final message), RunFinished

CASE_BOUND_BYTES = 2 sides × (4 streams × DISPLAY_CAP characters × 6 bytes + 2 ×
CHANGES_JSON_CAP: the kept changes and their share of the reason) + 16 KiB ≈ 3.3 MiB: 6 bytes
is the worst a character costs in JSON (a control character as \\u00XX); plain text costs 1,
so a real case stays well under 0.5 MiB (a /tmp flood case: ~0.1 MiB). report.json
holds no trace events: it is the case and turn terms with JSON indentation (at most about
twice as large), whatever the agent did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icae_tui.domain.events import (
    AgentCommand,
    AgentCommandDone,
    AgentOutput,
    AgentSaid,
    AgentStreamed,
    AgentThought,
    AgentToolUsed,
    AgentWrote,
    Event,
    EventsDropped,
    Progress,
    QuestionAnswered,
    QuestionAsked,
)
from icae_tui.domain.states import AnsweredBy
from icae_tui.sandbox.base import DISPLAY_CAP
from icae_tui.sandbox.effects import CHANGES_JSON_CAP

# 200k events are ~20 times a long real run (a model agent's trace of a few thousand
# commands); 64 MiB holds that trace in full, at 256 KiB of output per command.
MAX_RUN_EVENTS = 200_000
MAX_RUN_BYTES = 64 * 1024 * 1024
EVENT_OVERHEAD_BYTES = 128  # SQLite row and primary-key index per event (measured: ~97)
JSON_CHAR_MAX_BYTES = 6  # a control character escaped as \u00XX
CASE_BOUND_BYTES = (
    2 * (4 * DISPLAY_CAP * JSON_CHAR_MAX_BYTES + 2 * CHANGES_JSON_CAP) + 16 * 1024
)  # one case's CaseFinished + ScoreUpdated, worst case

_TRACE = (
    AgentOutput, AgentSaid, AgentStreamed, AgentThought, AgentToolUsed, AgentWrote, AgentCommand,
    AgentCommandDone, Progress,
)  # fmt: skip


def droppable(event: Event) -> bool:
    """Low-value events: stored only while the run is within its bound. Everything else
    (phases, plan, build, cases, scores, answered questions, summaries, the end) is kept."""
    if isinstance(event, _TRACE):
        return True
    if isinstance(event, QuestionAsked):
        return event.mode == AnsweredBy.BUDGET
    if isinstance(event, QuestionAnswered):
        return event.over_budget
    return False


def _kind(event: Event) -> str:
    return str(getattr(event, "kind", type(event).__name__))


@dataclass
class RunBound:
    """One run's account of stored and dropped events. Once one low-value event is dropped,
    all later ones are too: the stored trace is a prefix, never a sample with holes."""

    max_events: int = field(default_factory=lambda: MAX_RUN_EVENTS)
    max_bytes: int = field(default_factory=lambda: MAX_RUN_BYTES)
    events: int = 0
    stored_bytes: int = 0  # payloads plus EVENT_OVERHEAD_BYTES each
    dropped: int = 0
    dropped_bytes: int = 0  # their payloads
    dropped_by_kind: dict[str, int] = field(default_factory=dict)

    def admit(self, event: Event, size: int) -> bool:
        """Account for an event of `size` payload bytes; False: count it, do not store it."""
        cost = size + EVENT_OVERHEAD_BYTES
        over = self.events >= self.max_events or self.stored_bytes + cost > self.max_bytes
        if droppable(event) and (self.dropped or over):
            self.dropped += 1
            self.dropped_bytes += size
            kind = _kind(event)
            self.dropped_by_kind[kind] = self.dropped_by_kind.get(kind, 0) + 1
            return False
        self.events += 1
        self.stored_bytes += cost
        return True

    def summary(self, *, final: bool = False) -> EventsDropped:
        return EventsDropped(
            count=self.dropped,
            payload_bytes=self.dropped_bytes,
            by_kind=dict(sorted(self.dropped_by_kind.items())),
            max_events=self.max_events,
            max_bytes=self.max_bytes,
            final=final,
        )
