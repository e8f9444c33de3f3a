"""Interaction metrics, computed from what was actually revealed (never self-reported).

Coverage counts task-specific records only (C…) that reached the agent verbatim or as the
model's checked restatement; generic records (ARCH…, HARNESS…, TC_…, and named records such
as ICAE's FULL_SCOPE: `matching.is_generic`, applied here too, so a run recorded with an older
rule is counted the same) and context pointers (CP…) are reported apart, so coverage can
never exceed 100 %. A record was *asked about*
when a question matched it, even if an operator then replaced the answer.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from icae_tui.domain.events import (
    Event,
    EventsDropped,
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    RunStarted,
)
from icae_tui.domain.states import AnsweredBy
from icae_tui.users.matching import is_generic

_ANSWER_KIND = QuestionAnswered.model_fields["kind"].default


class InteractionMetrics(BaseModel):
    budget: int = 0
    turns: int = 0  # questions answered within the budget
    over_budget: int = 0  # questions asked after it was spent, stored or only counted
    budget_usage: float = 0.0
    fallback_rate: float = 0.0
    coverage: float = 0.0  # of task-specific records, revealed at least once
    covered: list[str] = Field(default_factory=list)
    never_asked: list[str] = Field(default_factory=list)  # no question matched them
    generic_revealed: list[str] = Field(default_factory=list)
    pointers_revealed: list[str] = Field(default_factory=list)
    by_responder: dict[str, int] = Field(default_factory=dict)
    mean_latency_s: float = 0.0


def interaction_metrics(events: list[Event]) -> InteractionMetrics:
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    answers = [e for e in events if isinstance(e, QuestionAnswered)]
    recorded = list(started.task_records) if started else []
    task_records = [r for r in recorded if not is_generic(r)]
    generic = set(started.generic_records) if started else set()
    generic.update(r for r in recorded if is_generic(r))
    budget = started.budget if started else 0
    within = [a for a in answers if not a.over_budget]
    revealed: list[str] = []
    for a in within:
        for rid in a.record_ids:
            if rid not in revealed:
                revealed.append(rid)
    covered = [r for r in task_records if r in revealed]
    asked_about = set(revealed)
    for q in events:
        if isinstance(q, QuestionAsked) and q.mode != AnsweredBy.BUDGET:
            asked_about.update(q.draft_records)
    by_responder: dict[str, int] = {}
    for a in answers:
        by_responder[a.responder] = by_responder.get(a.responder, 0) + 1
    # Past the budget, questions are counted rather than stored (QuestionsRefused, cumulative),
    # and past the run's store bound so are over-budget answers (EventsDropped, cumulative).
    counted = max((e.count for e in events if isinstance(e, QuestionsRefused)), default=0)
    counted += max(
        (e.by_kind.get(_ANSWER_KIND, 0) for e in events if isinstance(e, EventsDropped)), default=0
    )
    if counted:
        by_responder["budget"] = by_responder.get("budget", 0) + counted
    return InteractionMetrics(
        budget=budget,
        turns=len(within),
        over_budget=len(answers) - len(within) + counted,
        budget_usage=round(len(within) / budget, 4) if budget else 0.0,
        fallback_rate=round(sum(a.fallback for a in within) / len(within), 4) if within else 0.0,
        coverage=round(len(covered) / len(task_records), 4) if task_records else 0.0,
        covered=covered,
        never_asked=[r for r in task_records if r not in asked_about],
        generic_revealed=[r for r in revealed if r in generic],
        pointers_revealed=[r for r in revealed if r.startswith("CP")],
        by_responder=by_responder,
        mean_latency_s=round(sum(a.latency_s for a in within) / len(within), 4) if within else 0.0,
    )
