"""A batch as a grid, for the console's batch screen: one row per task (× level × responder
when the batch has more than one of them), one column per agent, and in each cell what that
pairing's repeats came to — pending `·`, running `▶ 1/2` (repeats done of all; `?` when one
waits on the operator), done `✔ 78.7%` (the mean overall, `×2` for repeats), failed `✘ kind`
(results/report.py's outcome kinds: a completed run whose build failed is `delivery`).

Pure: the screen tells it each item's news (`set`) and redraws the cell it names."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from icae_tui.batch.plan import BatchItem, ItemProgress, ItemState
from icae_tui.batch.report import OutcomeKind, outcome_kind
from icae_tui.domain.events import Event
from icae_tui.domain.states import AnsweredBy
from icae_tui.results.summary import summarize
from icae_tui.util.safe_text import printable

Pairing = tuple[str, str, str, str]  # task, agent, level, responder (BatchItem.pairing)
PENDING, RUNNING, DONE, FAILED, WAITING = "·", "▶", "✔", "✘", "?"
KIND_WORD = {OutcomeKind.INFRASTRUCTURE: "infra"}  # the cell is narrow
RESULTS = frozenset({ItemState.DONE, ItemState.FAILED, ItemState.GAVE_UP})


@dataclass(frozen=True)
class ItemNews:
    """What one item came to: its progress, its outcome's kind and its overall (a completed,
    measured run's; None else)."""

    progress: ItemProgress
    kind: OutcomeKind
    overall: float | None = None


def news_of(progress: ItemProgress, events: list[Event]) -> ItemNews:
    """An item's news from its latest run's events (none: not started)."""
    kind = outcome_kind(progress, events)
    overall = None
    if progress.state is ItemState.DONE and events:
        score = summarize(progress.run_id or "", events).score
        overall = score.overall if score is not None and score.measured else None
    return ItemNews(progress, kind, overall)


OPERATOR = frozenset({AnsweredBy.HUMAN, AnsweredBy.ASSISTED})  # questions the operator answers


class BatchGrid:
    def __init__(self, items: list[BatchItem]) -> None:
        self.items = {it.key: it for it in items}
        self.levels = len({it.level for it in items}) > 1
        self.responders = len({it.responder for it in items}) > 1
        self.agents: list[str] = list(dict.fromkeys(it.agent for it in items))
        self.rows: dict[str, BatchItem] = {}  # row key → its first item (for its label)
        self.members: dict[Pairing, list[str]] = {}  # a pairing's item keys, by repeat
        for it in items:
            self.rows.setdefault(self.row_of(it), it)
            self.members.setdefault(it.pairing, []).append(it.key)
        self.news: dict[str, ItemNews] = {}
        self.waiting: dict[str, set[int]] = {}  # item key → questions waiting on the operator

    def row_of(self, item: BatchItem) -> str:
        return self.row_for(item.pairing)

    def row_for(self, pairing: Pairing) -> str:
        task, _, level, responder = pairing
        parts = [task]
        if self.levels:
            parts.append(level)
        if self.responders:
            parts.append(responder)
        return "|".join(parts)

    def label(self, row: str) -> str:
        it = self.rows[row]
        parts = [printable(it.task_id, limit=60)]
        if self.levels:
            parts.append(it.level)
        if self.responders:
            parts.append(it.responder)
        return " · ".join(parts)

    def pairing_at(self, row: str, agent: str) -> Pairing | None:
        it = self.rows.get(row)
        if it is None:
            return None
        pairing = (it.task_id, agent, it.level, it.responder)
        return pairing if pairing in self.members else None

    def set(self, key: str, news: ItemNews) -> Pairing:
        """An item's news; the pairing whose cell changed."""
        self.news[key] = news
        if news.progress.state is not ItemState.RUNNING:
            self.waiting.pop(key, None)
        return self.items[key].pairing

    def asked(self, key: str, question_id: int, waits: bool) -> Pairing:
        """A question of item `key`'s run waits on the operator (`waits`), or no longer."""
        ids = self.waiting.setdefault(key, set())
        if waits:
            ids.add(question_id)
        else:
            ids.discard(question_id)
        return self.items[key].pairing

    def text(self, pairing: Pairing) -> str:
        keys = self.members[pairing]
        news = [self.news.get(k) for k in keys]
        states = [n.progress.state if n is not None else ItemState.PENDING for n in news]
        done = sum(s in RESULTS for s in states)
        total = len(keys)
        if ItemState.RUNNING in states:
            asks = any(self.waiting.get(k) for k in keys)
            return f"{RUNNING} {done}/{total}" + (f" {WAITING}" if asks else "")
        if done < total:
            return PENDING if done == 0 else f"{PENDING} {done}/{total}"
        failed = [n.kind for n in news if n is not None and n.kind is not OutcomeKind.SCORED]
        if failed:
            kind = failed[0]
            count = f" {len(failed)}/{total}" if total > 1 else ""
            return f"{FAILED} {KIND_WORD.get(kind, str(kind))}{count}"
        overalls = [n.overall for n in news if n is not None and n.overall is not None]
        figure = f"{100 * mean(overalls):.1f}%" if overalls else "—"
        return f"{DONE} {figure}" + (f" ×{total}" if total > 1 else "")
