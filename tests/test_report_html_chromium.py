"""The HTML report opened in headless Chromium: its four charts are laid out with a size and
drawn (a screenshot shows the bars' colours). Chromium is Debian's `chromium` package
(scripts/env.sh installs it); without it the test skips, unless ICAE_REQUIRE_DOCKER=1 (the
test command and CI), when a missing browser fails as a missing engine does."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from icae_tui.catalog import recordings
from icae_tui.results.formats import svg
from icae_tui.results.report import render_report

ROOT = Path(__file__).resolve().parent.parent
# a real run with failures, so every chart has something to draw (tidy, scripted:partial)
RECORDING = ROOT / "tasks" / "tidy" / "recordings" / "partial-L1.jsonl"
# the window, in CSS pixels: the four charts come first, in the top 1900; screenshots at half
# scale keep the pure-Python PNG decoding below quick
WIDTH, HEIGHT, SCALE = 1100, 1900, 0.5


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    if os.environ.get("ICAE_REQUIRE_DOCKER") == "1":
        pytest.fail("chromium is required (ICAE_REQUIRE_DOCKER=1): apt-get install chromium")
    pytest.skip("no chromium (Debian package `chromium`; scripts/env.sh installs it)")


def _browse(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
         f"--window-size={WIDTH},{HEIGHT}", *args],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """A PNG's width, height and rows of RGB(A) bytes (8-bit, no interlace: what Chromium
    writes), decoded with the standard library."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            idat += data
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line) if bpp == 3 else bytes(b for j, b in enumerate(line) if j % 4 != 3))
        prev = line
    return width, height, rows


def _rgb(colour: str) -> bytes:
    return bytes.fromhex(colour.lstrip("#"))


def _count(rows: list[bytes], colour: str) -> int:
    """Pixels within a small distance of `colour` (antialiasing aside)."""
    want = _rgb(colour)
    n = 0
    for row in rows:
        for i in range(0, len(row), 3):
            if all(abs(row[i + k] - want[k]) <= 6 for k in range(3)):
                n += 1
    return n


MEASURE = """<script>
const out = [...document.querySelectorAll('svg.chart')].map(s => {
  const r = s.getBoundingClientRect();
  const bars = [...s.querySelectorAll('rect.bar')].map(b => b.getBoundingClientRect().width);
  return {title: s.querySelector('title').textContent, w: r.width, h: r.height, bars,
          marks: s.querySelectorAll('circle.asked, path.answered').length};
});
const pre = document.createElement('pre'); pre.id = 'sizes';
pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
</script>"""


def test_the_html_report_shows_its_charts_in_chromium(chromium, tmp_path):
    events = recordings.load(RECORDING)
    page = render_report(events, "html")
    assert isinstance(page, str) and "<script" not in page  # the page itself has none
    report = tmp_path / "report.html"
    report.write_text(page, encoding="utf-8")

    # laid out: the test's own copy measures each chart (the report has no script)
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _browse(chromium, tmp_path, "--dump-dom", probe.as_uri()).stdout
    found = re.search(r'<pre id="sizes">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    charts = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert [c["title"] for c in charts] == [
        "Pass rate per command pattern", "Pass rate per tier", "Verdict distribution",
        "Clarification timeline",
    ]  # fmt: skip
    assert all(c["w"] > 300 and c["h"] > 40 for c in charts), charts
    for chart in charts[:3]:
        assert chart["bars"] and max(chart["bars"]) > 10, chart  # at least one drawn bar
    assert charts[3]["marks"] > 0  # the questions asked and answered

    # drawn: a screenshot holds the bars' and tracks' colours
    shot = tmp_path / "report.png"  # kept with the test's files (pytest's tmp_path)
    _browse(chromium, tmp_path, f"--force-device-scale-factor={SCALE}", f"--screenshot={shot}",
            report.as_uri())  # fmt: skip
    width, height, rows = _pixels(shot.read_bytes())
    assert (width, height) == (int(WIDTH * SCALE), int(HEIGHT * SCALE))
    assert _count(rows, svg.PASS) > 1000  # green: passed shares
    assert _count(rows, svg.TRACK) > 1000  # the bars' tracks
    assert _count(rows, svg.VERDICT_COLOURS["wrong_answer"]) > 20  # the failures' share
    assert _count(rows, svg.INK) > 200  # the text, the timeline's marks and axis
