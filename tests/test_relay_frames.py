"""The channel relay's frames (icae_tui/sandbox/docker/relay.py, sandbox/assets/icae-relay):
read whole whatever the chunks of the exec stream, and the same layout on both sides."""

from __future__ import annotations

import re

from icae_tui.sandbox.docker import relay

FRAMES = [(0, relay.READY, b""), (1, relay.OPEN, b"\x00\x01"), (1, relay.DATA, b"x" * 70_000),
          (7, relay.CLOSE, b"")]  # fmt: skip


def _bytes() -> bytes:
    return b"".join(relay.HEADER.pack(c, k, len(p)) + p for c, k, p in FRAMES)


def test_frames_are_read_whole_across_any_chunks():
    data = _bytes()
    for size in (1, 5, 9, 10, 4096, len(data)):
        reader, got = relay.FrameReader(), []
        for at in range(0, len(data), size):
            got += reader.feed(data[at : at + size])
        assert got == FRAMES, size


def test_the_box_side_speaks_the_same_frames():
    script = relay.ASSET.read_text()
    assert 'HEADER = struct.Struct(">IBI")' in script
    assert re.search(r"READY, OPEN, DATA, CLOSE = 0, 1, 2, 3", script)
    assert (relay.READY, relay.OPEN, relay.DATA, relay.CLOSE) == (0, 1, 2, 3)
