"""The clarification pane: each question and its answer, with who answered and from what.

Besides questions and answers it shows the simulated user's draft (assisted mode), a small
line for each switch of responder, and, once the run is over, the interaction metrics.
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from icae_tui.domain.events import (
    QuestionAnswered,
    QuestionAsked,
    QuestionsRefused,
    ResponderChanged,
)
from icae_tui.ui.text import pct, safe
from icae_tui.users.metrics import InteractionMetrics

TEXT_LIMIT = 4000
DRAFT_LIMIT = 1500
MODE_STYLES = {"simulated": "bold", "human": "bold magenta", "assisted": "bold cyan"}


def answer_source(ev: QuestionAnswered) -> str:
    """Which records the answer came from, or why it came from none."""
    if ev.over_budget:
        return "budget"
    if ev.record_ids:
        return ", ".join(ev.record_ids)
    if ev.fallback:
        return "fallback"
    return "typed" if ev.responder in ("human", "assisted") else "—"


def answered_by(ev: QuestionAnswered) -> str:
    """Who answered: simulated, model (name), human, assisted (edited), budget."""
    if ev.responder == "model" and ev.model:
        return f"model {ev.model}"
    if ev.responder == "assisted" and ev.edited:
        return "assisted (edited)"
    return ev.responder


def draft_source(records: list[str]) -> str:
    return ", ".join(records) if records else "fallback"


def seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f}s"


def metrics_line(m: InteractionMetrics, *, has_records: bool = True) -> str:
    """The one-line summary for titles: turns/budget, coverage, fallback (whole percents)."""
    parts = [f"{m.turns}/{m.budget} turns"]
    if has_records:
        parts.append(f"coverage {100 * m.coverage:.0f}%")
    parts.append(f"fallback {100 * m.fallback_rate:.0f}%")
    return " · ".join(parts)


class ClarificationPane(VerticalScroll):
    """A scrolling list of question/answer turns."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.asked = 0
        self.answered = 0
        self.budget: int | None = None
        self.mode = ""
        self.summary = ""  # the metrics line once the run is over
        self.turns: list[tuple[str, str]] = []  # (kind, plain text) for tests and copy
        self._drafted: set[int] = set()
        self._empty: Static | None = None
        self._refused: Static | None = None  # one line for the questions refused uncounted
        self._refused_count = 0
        self._refused_at = 0  # its index in `turns`

    def on_mount(self) -> None:
        self._empty = Static(Text("No questions yet.", style="dim italic"), classes="empty")
        self.mount(self._empty)
        self._retitle()

    def set_budget(self, budget: int) -> None:
        self.budget = budget
        self._retitle()

    def set_mode(self, mode: str) -> None:
        self.mode = mode
        self._retitle()

    def _retitle(self) -> None:
        budget = f"/{self.budget}" if self.budget is not None else ""
        if self.summary:
            self.border_title = f"Clarifications · {self.summary}"
        else:
            mode = f" · responder {self.mode}" if self.mode else ""
            self.border_title = f"Clarifications · {self.asked}{budget} asked{mode}"

    def _add(self, kind: str, content: Text) -> Static:
        if self._empty is not None:
            self._empty.remove()
            self._empty = None
        self.turns.append((kind, content.plain))
        turn = Static(content, classes=f"turn {kind}")
        self.mount(turn)
        self.call_after_refresh(self.scroll_end, animate=False)  # once the turn has a size
        return turn

    def question(self, ev: QuestionAsked) -> None:
        self.asked += 1
        self._retitle()
        head = Text()
        head.append(f"Q{ev.question_id}", style="bold magenta")
        head.append(f"  {ev.via} · {ev.remaining_before} left", style="dim")
        if ev.mode in ("human", "assisted"):
            head.append(" · for ", style="dim")
            head.append(ev.mode, style=MODE_STYLES[ev.mode])
        head.append("\n")
        head.append_text(safe(ev.text, limit=TEXT_LIMIT, lines=True))
        self._add("question", head)

    def draft(self, ev: QuestionAsked, *, limit: int = DRAFT_LIMIT) -> None:
        """The simulated user's draft for a question the operator answers (once per question).
        Live, the whole draft is in the answer box, so the pane shows only its beginning."""
        if ev.question_id in self._drafted:
            return
        self._drafted.add(ev.question_id)
        head = Text()
        head.append(f"draft Q{ev.question_id}", style="bold cyan")
        head.append("  simulated · ", style="dim")
        source = draft_source(ev.draft_records)
        head.append_text(safe(source, "yellow" if source == "fallback" else "cyan"))
        head.append("\n")
        head.append_text(safe(ev.draft, "italic", limit=limit, lines=True))
        self._add("draft", head)

    def answer(self, ev: QuestionAnswered) -> None:
        self.answered += 1
        head = Text()
        head.append(f"A{ev.question_id}", style="bold")
        who = answered_by(ev)
        head.append("  ")
        head.append_text(safe(who, MODE_STYLES.get(ev.responder, "dim")))
        head.append(" · ", style="dim")
        source = answer_source(ev)
        style = "yellow" if source in ("fallback", "budget") else "cyan"
        head.append_text(safe(source, style))
        if not ev.over_budget:
            head.append(f" · {seconds(ev.latency_s)}", style="dim")
        head.append("\n")
        head.append_text(safe(ev.text, limit=TEXT_LIMIT, lines=True))
        self._add("answer", head)

    def refused(self, ev: QuestionsRefused) -> None:
        """Questions past the budget, counted rather than listed: one line, kept up to date."""
        self.asked += ev.count - self._refused_count
        self._refused_count = ev.count
        self._retitle()
        line = Text(f"+{ev.count} more past the budget", style="yellow")
        line.append(f"  Q{ev.first_id}–Q{ev.last_id} · {ev.chars} characters · refused,"
                    " counted, not listed\n", style="dim")  # fmt: skip
        line.append_text(safe(ev.sample, "dim italic", limit=TEXT_LIMIT, lines=True))
        if self._refused is None:
            self._refused_at = len(self.turns)
            self._refused = self._add("refused", line)
        else:
            self._refused.update(line)
            self.turns[self._refused_at] = ("refused", line.plain)

    def switched(self, ev: ResponderChanged) -> None:
        line = Text("⇄ responder → ", style="dim")
        line.append_text(safe(ev.mode, MODE_STYLES.get(ev.mode, "bold")))
        if ev.by and ev.by != "operator":
            line.append_text(safe(f" (by {ev.by})", "dim"))
        self._add("switch", line)

    def metrics(self, m: InteractionMetrics, *, has_records: bool = True) -> None:
        """The run is over: the interaction metrics in the title and as a last entry."""
        self.summary = metrics_line(m, has_records=has_records)
        self._retitle()
        text = Text()
        text.append("interaction", style="bold")
        text.append(f"  {m.turns}/{m.budget} turns", style="")
        if m.over_budget:
            text.append(f" (+{m.over_budget} over budget)", style="yellow")
        text.append(f" · fallback {pct(m.fallback_rate)}", style="")
        if m.turns:
            text.append(f" · mean latency {seconds(m.mean_latency_s)}", style="dim")
        if has_records:
            text.append(f"\ncoverage {pct(m.coverage)}", style="bold")
            if m.covered:
                text.append_text(safe(" · covered " + ", ".join(m.covered), "green"))
            if m.never_asked:
                text.append_text(safe(" · never asked " + ", ".join(m.never_asked), "yellow"))
        if m.generic_revealed:
            text.append("\n")
            text.append_text(safe("generic revealed " + ", ".join(m.generic_revealed), "dim"))
        if m.by_responder:
            by = ", ".join(f"{k} {v}" for k, v in sorted(m.by_responder.items()))
            text.append("\n")
            text.append_text(safe(f"by responder: {by}", "dim"))
        self._add("metrics", text)
