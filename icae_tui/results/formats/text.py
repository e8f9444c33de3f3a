"""Untrusted text (agent output, questions, answers, reasons quoting stdout) made safe for
each report format, and bounded: every format's escaping lives here, nowhere else.

`printable` (icae_tui/util/safe_text.py) first turns control characters — ANSI escapes, NULs,
carriage returns — into visible `\\xNN`; invalid UTF-8 was already U+FFFD when the run
decoded it. What XML 1.0 still forbids (lone surrogates, U+FFFE, U+FFFF) becomes visible
too, so the same text is valid in JUnit XML and in HTML's inline SVG.
"""

from __future__ import annotations

import html
import re

from icae_tui.util.safe_text import printable

LINE_LIMIT = 300  # characters of one untrusted field shown on one line (table cells, labels)
BLOCK_LIMIT = 4000  # characters of an untrusted block (a case's stdout in JUnit's system-out)

# Not XML 1.0 Chars (what printable leaves: it escapes C0/C1 controls, \u2028/9 already)
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")
# What can start or end markup inside a line (md() never lets untrusted text start one):
# escapes, code spans, emphasis, links and images, table pipes, strikethrough, math, e-mail
# autolinks. Backslashed: CommonMark shows each as itself.
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~$@])")
# GFM's extended autolinks (`www.`, `scheme://`) are broken by a backslash inside them
_MD_AUTOLINK = re.compile(r"(?i)\b(www)\.|://")


def _visible(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def clip(text: str, limit: int) -> str:
    """`text` cut at `limit` characters with a visible marker of what was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [+{len(text) - limit} chars]"


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """Untrusted text on one visible line: newlines shown as ⏎, controls as `\\xNN`,
    XML-forbidden characters as `\\uNNNN`, at most `limit` characters (then a marker)."""
    flat = text.replace("\r\n", "\n").replace("\n", " ⏎ ")
    return clip(_NOT_XML.sub(_visible, printable(flat)), limit)


def block(text: str, limit: int = BLOCK_LIMIT) -> str:
    """Untrusted text kept on its lines, controls and XML-forbidden characters visible,
    long lines and the whole bounded."""
    safe = _NOT_XML.sub(_visible, printable(text, keep_newlines=True))
    bounded = "\n".join(clip(line, LINE_LIMIT * 2) for line in safe.split("\n"))
    return clip(bounded, limit)


def md(text: str, limit: int = LINE_LIMIT) -> str:
    """Untrusted text as literal Markdown on one line, safe in a table cell and never at the
    start of a line (so headings, lists and quotes cannot begin): HTML's `&`, `<` and `>` as
    entities (no tag, no `<autolink>`), markup punctuation backslashed (no emphasis, link,
    image, code span, table pipe, math), bare URLs broken so they do not become links."""
    line = one_line(text, limit)
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    line = _MD_PUNCT.sub(r"\\\1", line)
    return _MD_AUTOLINK.sub(lambda m: f"{m[1]}\\." if m[1] else ":\\/\\/", line)


def md_code(text: str, limit: int = LINE_LIMIT) -> str:
    """A short untrusted identifier (a case id, a pattern) as Markdown inline code; the
    backticks it holds cannot close the span (the fence is longer than any run in it)."""
    line = one_line(text, limit).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def xml(text: str, limit: int = BLOCK_LIMIT) -> str:
    """Untrusted text that XML 1.0 accepts (the serialiser then escapes `&`, `<`, quotes)."""
    return block(text, limit)


def xml_line(text: str, limit: int = LINE_LIMIT) -> str:
    """Untrusted text for an XML attribute: one line, bounded."""
    return one_line(text, limit)


def h(text: str, limit: int = LINE_LIMIT) -> str:
    """Untrusted text as HTML (and SVG) character data or an attribute value: one line."""
    return html.escape(one_line(text, limit), quote=True)
