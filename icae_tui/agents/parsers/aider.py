"""`aider`: Aider's chat history (`--chat-history-file chat.md`), appended while it runs.

Markdown, written by aider/io.py: `# aider chat started at …` opens a session, `#### ` lines
are the user's messages (the task: skipped), `> ` lines aider's own output (`> Tokens: …`,
`> Applied edit to hello.txt`, warnings, errors, declined shell commands; a multi-line one
continues unprefixed on the next lines), and the model's reply is written whole, unprefixed,
after a blank line (the agent itself: the README's Agents section).

Events: the reply → AgentSaid, once the next marker line shows it is complete (aider always
follows a reply with its token report); `Applied edit to X` → AgentWrote(X, 0); token
reports are skipped (the gateway counts usage); other `> ` lines → AgentOutput, one per run
of them. Only complete lines are read; stdout is not parsed (it repeats the file).
A reply line that itself starts with `> ` or `####` is misread as aider's or the user's:
the markdown cannot tell them apart.
"""

from __future__ import annotations

import re
from enum import Enum

from icae_tui.agents.parsers.base import AgentEnd, exited
from icae_tui.agents.parsers.plain import output_line
from icae_tui.agents.parsers.shapes import MAX_PATH_CHARS, MAX_TEXT_CHARS, clip, first_line
from icae_tui.domain.events import AgentSaid, AgentWrote, Event
from icae_tui.domain.states import StopReason
from icae_tui.util.safe_text import decode

CHAT_HISTORY = "chat.md"
_APPLIED = re.compile(r"Applied edit to (.+)")
# aider's own lines that say the model API failed (litellm errors, its retry notice)
_API_TROUBLE = re.compile(r"litellm\.|APIConnectionError|RateLimitError|ServiceUnavailable"
                          r"|InternalServerError|Retrying in [\d.]+ seconds")  # fmt: skip


class _Line(Enum):
    OTHER = "other"  # start, session header, user message
    BLANK = "blank"
    QUOTE = "quote"  # aider's own output
    REPLY = "reply"


class AiderChatHistory:
    files: tuple[str, ...] = (CHAT_HISTORY,)

    def __init__(self) -> None:
        self._offset = 0  # bytes read: up to the last complete line
        self._previous = _Line.OTHER
        self._reply: list[str] = []  # the reply being read
        self._reply_chars = 0
        self._quote: list[str] = []  # aider's lines not yet shown
        self._last_reply = ""
        self._replies = 0
        self._api_trouble = ""

    def line(self, text: str) -> list[Event]:
        return []

    def file(self, name: str, content: bytes) -> list[Event]:
        if name != CHAT_HISTORY:
            return []
        if len(content) < self._offset:  # replaced by a new file: read it from the start
            self._offset = 0
        end = content.rfind(b"\n", self._offset) + 1
        if end <= self._offset:
            return []
        text, self._offset = decode(content[self._offset : end]), end
        events: list[Event] = []
        for line in text.split("\n")[:-1]:
            events += self._line(line.rstrip("\r"))
        return events + self._show_quote()

    def end(self, exit_code: int | None) -> AgentEnd:
        last = self._joined_reply() or self._last_reply  # a reply no marker followed yet
        replied = self._replies > 0 or bool(last)
        if exit_code == 0 and replied:
            return AgentEnd(True, clip(last), None, exited("aider", exit_code))
        trouble = f": {first_line(self._api_trouble)}" if self._api_trouble else ""
        reason = StopReason.INFRA_ERROR if self._api_trouble else StopReason.AGENT_ERROR
        if exit_code == 0:
            return AgentEnd(
                False, "", reason, f"aider exited with code 0 but got no reply{trouble}"
            )
        return AgentEnd(False, clip(last), reason, f"{exited('aider', exit_code)}{trouble}")

    # --- lines ------------------------------------------------------------------------

    def _line(self, line: str) -> list[Event]:
        if line.startswith(">"):
            events = self._end_reply()
            self._previous = _Line.QUOTE
            return events + self._aider_says(line[1:].strip())
        if not line.strip():
            if self._reply:
                self._add_reply("")
            if self._previous is not _Line.REPLY:
                self._previous = _Line.BLANK
            return []
        if line.startswith(("# aider chat started at", "####")):
            self._previous = _Line.OTHER
            return self._show_quote() + self._end_reply()
        if self._previous is _Line.QUOTE:  # a multi-line message of aider's continues
            return self._aider_says(line.strip())
        events = self._show_quote()  # aider's lines before the reply come first
        self._previous = _Line.REPLY
        self._add_reply(line.rstrip())
        return events

    def _aider_says(self, text: str) -> list[Event]:
        if text.startswith("Tokens:"):
            return []
        if _API_TROUBLE.search(text):
            self._api_trouble = text
        if m := _APPLIED.fullmatch(text):
            return self._show_quote() + [AgentWrote(path=clip(m.group(1), MAX_PATH_CHARS), size=0)]
        if text:
            self._quote.append(text)
        return []

    def _add_reply(self, line: str) -> None:
        if self._reply_chars <= MAX_TEXT_CHARS:  # beyond, clip() cuts it anyway
            self._reply.append(line)
            self._reply_chars += len(line) + 1

    def _joined_reply(self) -> str:
        return "\n".join(self._reply).strip()

    def _end_reply(self) -> list[Event]:
        text = self._joined_reply()
        self._reply, self._reply_chars = [], 0
        if not text:
            return []
        self._last_reply, self._replies = clip(text), self._replies + 1
        self._api_trouble = ""  # the model answered: earlier API trouble was overcome
        return [AgentSaid(text=self._last_reply)]

    def _show_quote(self) -> list[Event]:
        lines, self._quote = self._quote, []
        return [output_line("\n".join(lines))] if lines else []
