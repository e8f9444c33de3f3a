"""The task browser's preview of the highlighted task: its description, the PRD of each level
(L1, L2, L3, ground — what an agent at that level is given) and the counts of its cases per
split and per pattern.

The whole preview scrolls as one (description, tabs, PRD), so a short terminal gives the PRD
every row once the description is scrolled past. The task list switches its tabs and scrolls it
with keys of its own (`[` / `]`, `J` / `K`), which the preview's border names — the scroll
keys while there is more than fits, with how far down it is.

Everything here is drawn from a `TaskCard` (icae_tui/catalog/search.py), which holds no case
content and no user-agent record: the preview cannot show a hidden case, only how many there
are. The language's version is the engine's runtime images' (their labels, read once by the
task list when the console was given a way to ask: `TaskPreview.runtimes`).
"""

from __future__ import annotations

import re

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static, Tab, Tabs

from icae_tui.catalog.search import TaskCard
from icae_tui.domain.runtimes import version_text
from icae_tui.domain.task import Level, Split
from icae_tui.ui.text import safe
from icae_tui.util.safe_text import printable

CASES_TAB = "cases"
TABS: tuple[str, ...] = (*(level.value for level in Level), CASES_TAB)
PRD_LIMIT = 200_000  # characters of a PRD drawn (a PRD is a few KiB; the rest is cut, marked)


def tab_id(tab: str) -> str:
    return f"preview-{tab}"


# What the preview says of the versions while the engine has not answered yet.
ASKING = "version: asking the engine…"


def task_detail_text(card: TaskCard, runtimes: dict[str, str] | None | bool = False) -> Text:
    """Title, summary, the facts of the task and its case counts (numbers only). `runtimes`:
    the engine's runtime versions by key (None: the engine did not answer; True: asked, no
    answer yet; False: not asked, no version shown)."""
    text = Text()
    text.append_text(safe(card.title, "bold"))
    text.append("  ")
    text.append_text(safe(card.id, "dim"))
    text.append("\n")
    if card.summary:
        text.append_text(safe(card.summary))
        text.append("\n")
    text.append_text(safe(card.language))
    if runtimes is True:
        text.append(f" ({ASKING})", style="dim")
    elif runtimes is not False:
        text.append(" ")
        text.append_text(safe(version_text(card.runtime, runtimes)))
    text.append(" · ", style="dim")
    text.append_text(safe(card.interface))
    text.append(" · solutions ", style="dim")
    text.append_text(safe(", ".join(card.solutions) or "none"))
    text.append("\n")
    text.append_text(safe(card.origin))
    text.append(" · ", style="dim")
    text.append_text(safe(card.capabilities, "dim"))
    text.append("\n")
    text.append(f"{card.cases} case{'s' if card.cases != 1 else ''}", style="bold")
    text.append(f" ({card.size.value}): ", style="dim")
    text.append(" · ".join(f"{card.by_split[s]} {s.value}" for s in Split))
    return text


def task_folder_text(card: TaskCard) -> Text:
    text = Text("folder ", style="dim")
    text.append_text(safe(card.root))
    return text


BLOCK_START = re.compile(r"\s*(#|[-*+>|]\s|\d+[.)]\s|[-*_=]{3,}\s*$)")
FENCES = ("```", "~~~")


def reflow(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph and list item, so the PRD wraps to the
    pane's width; headings, list items, quotes, tables, rules, fenced code and blank lines
    stay as written, and no word changes."""
    out: list[str] = []
    fenced = False
    joinable = False  # the last line is prose the next line may continue
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(FENCES):
            fenced = not fenced
            out.append(line)
            joinable = False
            continue
        if fenced or not stripped:
            out.append(line)
            joinable = False
            continue
        if joinable and not BLOCK_START.match(line):
            out[-1] = out[-1].rstrip() + " " + stripped
        else:
            out.append(line)
        joinable = not stripped.startswith(("#", "|")) and not line.endswith("  ")
    return "\n".join(out)


def prd_text(card: TaskCard, level: Level) -> Text:
    """The PRD of `level` as the agent gets it — its words, literally; hard-wrapped lines
    joined (`reflow`) and markdown headings in bold."""
    prd = card.prd[level]
    text = Text()
    text.append(f"{level.value} PRD", style="bold")
    budget = card.budgets[level]
    text.append(
        f"  ·  {card.prd_words(level):,} words  ·  {budget} question{'s' if budget != 1 else ''}",
        style="dim",
    )
    text.append("\n\n")
    if not prd.strip():
        text.append("(empty)", style="dim italic")
        return text
    body = Text(reflow(printable(prd, keep_newlines=True, limit=PRD_LIMIT)))
    offset = 0
    for line in body.plain.split("\n"):
        if line.lstrip().startswith("#"):
            body.stylize("bold", offset, offset + len(line))
        offset += len(line) + 1
    text.append_text(body)
    return text


def cases_table(card: TaskCard) -> Table:
    """Counts of the task's cases per pattern and split — numbers only."""
    table = Table(
        title=Text(f"{card.cases} cases by pattern", style="bold"),
        title_justify="left",
        box=None,
        padding=(0, 1),
        show_footer=True,
        expand=False,
    )
    totals = {s: card.by_split[s] for s in Split}
    table.add_column("pattern", footer=Text("total", style="bold"), no_wrap=True, max_width=40)
    for split in Split:
        table.add_column(split.value, footer=Text(str(totals[split]), style="bold"),
                         justify="right")  # fmt: skip
    table.add_column("all", footer=Text(str(card.cases), style="bold"), justify="right")
    for row in card.by_pattern:
        table.add_row(
            safe(row.pattern),
            *(count_text(n) for n in (row.public, row.hidden, row.enhanced)),
            Text(str(row.total)),
        )
    return table


def count_text(n: int) -> Text:
    return Text(str(n), style="" if n else "dim")


class PreviewBody(VerticalScroll):
    """The preview's scrolling part; says when its size or its content's changed (the
    border's hint follows)."""

    class Resized(Message):
        pass

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())


def keys_hint(tab_keys: str, scroll_keys: str, y: float, max_y: float) -> str:
    """The border's hint: the keys of the tabs, and while the preview has more than fits the
    keys that scroll it and how far down it is (`[ ] tabs · J K scroll · 40%`)."""
    parts = [f"{tab_keys} tabs"] if tab_keys else []
    if max_y > 0:
        where = "top" if y <= 0 else "end" if y >= max_y else f"{round(100 * y / max_y)}%"
        parts.append(f"{scroll_keys} scroll · {where}" if scroll_keys else where)
    return " · ".join(parts)


class TaskPreview(Vertical):
    """Description, then tabs: the PRD of each level and the case counts — one scroll."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.card: TaskCard | None = None
        self.tab = Level.L1.value
        self.shown: tuple[str, str] | None = None  # (task id, tab) drawn in the body
        self.display = False  # until there is a task to preview
        self.border_title = "Preview"
        self.tab_keys = ""  # the task list's keys that switch the tabs ("[ ]")
        self.scroll_keys = ""  # the task list's keys that scroll the preview ("J K")
        # the engine's runtime versions (task_detail_text's `runtimes`): not asked by default
        self.runtimes: dict[str, str] | None | bool = False

    def compose(self) -> ComposeResult:
        with PreviewBody(id="preview-body"):
            yield Static(id="task-detail")
            yield Static(id="task-folder")
            yield Tabs(*(Tab(tab, id=tab_id(tab)) for tab in TABS), id="preview-tabs")
            yield Static(id="preview-text")

    def on_mount(self) -> None:
        self.watch(self.body, "scroll_y", lambda: self.update_hint(), init=False)

    @property
    def body(self) -> PreviewBody:
        return self.query_one("#preview-body", PreviewBody)

    def show(self, card: TaskCard | None) -> None:
        """Preview `card` (None: nothing to preview), on the tab chosen last, from its top."""
        if card is self.card:
            return
        self.card = card
        self.display = card is not None
        if card is None:
            self.shown = None
            return
        self.query_one("#task-detail", Static).update(task_detail_text(card, self.runtimes))
        self.query_one("#task-folder", Static).update(task_folder_text(card))
        self.draw()
        self.body.scroll_home(animate=False, immediate=True)

    def show_runtimes(self, runtimes: dict[str, str] | None | bool) -> None:
        """The engine's answer (or that it is being asked): the facts line drawn again."""
        self.runtimes = runtimes
        if self.card is not None:
            self.query_one("#task-detail", Static).update(task_detail_text(self.card, runtimes))

    def switch(self, step: int) -> None:
        """The next (1) or previous (-1) tab, drawn at once (keys pressed in a row each
        count; the tab bar follows)."""
        self.tab = TABS[(TABS.index(self.tab) + step) % len(TABS)]
        self.query_one(Tabs).active = tab_id(self.tab)
        self.draw()

    def scroll_page(self, step: int) -> None:
        """A page down (1) or up (-1), the last line of one the first of the next."""
        body = self.body
        page = max(1, body.scrollable_content_region.height - 1)
        body.scroll_to(y=body.scroll_y + step * page, animate=False, immediate=True)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        tab = (event.tab.id or "").removeprefix("preview-")
        if tab in TABS and tab != self.tab:
            self.tab = tab
            self.draw()

    def on_preview_body_resized(self, event: PreviewBody.Resized) -> None:
        event.stop()
        self.update_hint()

    def draw(self) -> None:
        """The tab's content. Scrolled past the tab bar, the preview starts the new tab at
        its top (the tab bar the first line)."""
        card = self.card
        if card is None or self.shown == (card.id, self.tab):
            return
        body = self.query_one("#preview-text", Static)
        if self.tab == CASES_TAB:
            body.update(cases_table(card))
            self.border_title = "Preview · cases"
        else:
            body.update(prd_text(card, Level(self.tab)))
            self.border_title = f"Preview · {self.tab} PRD"
        tabs = self.query_one(Tabs)
        if self.shown is not None and self.body.scroll_y > tabs.virtual_region.y:
            self.body.scroll_to(y=tabs.virtual_region.y, animate=False, immediate=True)
        self.shown = (card.id, self.tab)

    def update_hint(self) -> None:
        body = self.body
        self.border_subtitle = keys_hint(
            self.tab_keys, self.scroll_keys, body.scroll_y, body.max_scroll_y
        )
