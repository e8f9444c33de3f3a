"""The agent trace: a `Log` fed in batches, with every line made printable first.

Writing one line per widget call is ruinous with chatty agents, so lines are queued and
written every ~80 ms by `flush()` (the run screen's timer calls it). Output chunks are split
into lines per stream; a partial line waits for its newline or for the command to finish.
"""

from __future__ import annotations

from textual.widgets import Log

from icae_tui.safe_text import printable

LINE_LIMIT = 4000  # characters of one line shown; the rest becomes a visible "[+N chars]"
MAX_LINES = 50_000
PREFIX = {"stdout": "  out│ ", "stderr": "  err│ "}


class TraceLog(Log):
    """A `Log` that never sees a raw control character or a line longer than LINE_LIMIT."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=MAX_LINES, highlight=False, **kwargs)  # type: ignore[arg-type]
        self._pending: list[str] = []
        self._partial: dict[str, str] = {}

    # --- queueing -------------------------------------------------------------------------

    def add(self, text: str, prefix: str = "") -> None:
        """Queue `text` (possibly several lines) to be written on the next flush."""
        self.end_output()
        for line in text.replace("\r\n", "\n").split("\n"):
            self._pending.append(prefix + printable(line, limit=LINE_LIMIT))

    def add_output(self, stream: str, chunk: str) -> None:
        """Queue a chunk of a command's output; lines are completed across chunks."""
        data = self._partial.pop(stream, "") + chunk.replace("\r\n", "\n")
        *lines, rest = data.split("\n")
        prefix = PREFIX.get(stream, "  ")
        for line in lines:
            self._pending.append(prefix + printable(line, limit=LINE_LIMIT))
        if len(rest) > 4 * LINE_LIMIT:  # a newline-less flood: show what we have
            self._pending.append(prefix + printable(rest, limit=LINE_LIMIT))
            rest = ""
        if rest:
            self._partial[stream] = rest

    def end_output(self) -> None:
        """Queue any unfinished output lines (the command ended or something else happened)."""
        for stream, rest in list(self._partial.items()):
            self._pending.append(PREFIX.get(stream, "  ") + printable(rest, limit=LINE_LIMIT))
        self._partial.clear()

    # --- writing --------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._pending)

    def flush(self) -> None:
        """Write the queued lines in one call."""
        if not self._pending:
            return
        lines, self._pending = self._pending, []
        self.write_lines(lines)
