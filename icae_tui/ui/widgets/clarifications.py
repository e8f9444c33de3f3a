"""The clarification pane: each question and its answer, with who answered and from what."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from icae_tui.domain.events import QuestionAnswered, QuestionAsked
from icae_tui.ui.text import safe

TEXT_LIMIT = 4000


def answer_source(ev: QuestionAnswered) -> str:
    """Which records the answer came from, or why it came from none."""
    if ev.over_budget:
        return "budget"
    if ev.record_ids:
        return ", ".join(ev.record_ids)
    if ev.fallback:
        return "fallback"
    return "typed" if ev.responder == "human" else "—"


class ClarificationPane(VerticalScroll):
    """A scrolling list of question/answer turns."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.asked = 0
        self.answered = 0
        self.budget: int | None = None
        self.turns: list[tuple[str, str]] = []  # (kind, plain text) for tests and copy
        self._empty: Static | None = None

    def on_mount(self) -> None:
        self._empty = Static(Text("No questions yet.", style="dim italic"), classes="empty")
        self.mount(self._empty)
        self._retitle()

    def set_budget(self, budget: int) -> None:
        self.budget = budget
        self._retitle()

    def _retitle(self) -> None:
        budget = f"/{self.budget}" if self.budget is not None else ""
        self.border_title = f"Clarifications · {self.asked}{budget} asked"

    def _add(self, kind: str, content: Text) -> None:
        if self._empty is not None:
            self._empty.remove()
            self._empty = None
        self.turns.append((kind, content.plain))
        self.mount(Static(content, classes=f"turn {kind}"))
        self.scroll_end(animate=False)

    def question(self, ev: QuestionAsked) -> None:
        self.asked += 1
        self._retitle()
        head = Text()
        head.append(f"Q{ev.question_id}", style="bold magenta")
        head.append(f"  agent · {ev.remaining_before} left\n", style="dim")
        head.append_text(safe(ev.text, limit=TEXT_LIMIT, lines=True))
        self._add("question", head)

    def answer(self, ev: QuestionAnswered) -> None:
        self.answered += 1
        head = Text()
        head.append(f"A{ev.question_id}", style="bold")
        who = {"simulated": "simulated user", "human": "operator", "budget": "not answered"}.get(
            ev.responder, ev.responder
        )
        head.append(f"  {who} · ", style="dim")
        source = answer_source(ev)
        style = "yellow" if source in ("fallback", "budget") else "cyan"
        head.append_text(safe(source, style))
        if ev.latency_s and ev.responder == "human":
            head.append(f" · {ev.latency_s:.1f}s", style="dim")
        head.append("\n")
        head.append_text(safe(ev.text, limit=TEXT_LIMIT, lines=True))
        self._add("answer", head)
