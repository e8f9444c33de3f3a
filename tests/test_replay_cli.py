"""`icae replay RUN_ID|PATH --headless`: a recording or a stored run printed line by line, at
its pace (the waits go through an injected sleep here: no clock), the same lines the run
printed; what cannot be replayed is one clear error."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from icae_tui import cli
from icae_tui.catalog import recordings
from icae_tui.display.plain import PlainPrinter, replay_headless
from icae_tui.display.replay import PacedReplay
from icae_tui.store.database import RunStore
from tests.polling import Sleeps

TASKS = Path(__file__).resolve().parent.parent / "tasks"
RECORDING = TASKS / "semver" / "recordings" / "good-L1.jsonl"


def printed_at_once(events) -> str:
    out = io.StringIO()
    printer = PlainPrinter(out)
    for ev in events:
        printer(ev)
    printer.summary()
    return out.getvalue()


def replay(*args: str, home: Path) -> int:
    return cli.main(["--tasks", str(TASKS), "--home", str(home), "replay", *args])


def test_a_recording_is_printed_line_by_line_as_the_run_printed_it(tmp_path, capsys):
    events = recordings.load(RECORDING)
    for what in ("semver/good-L1", str(RECORDING)):  # by TASK/NAME, or by its path
        assert replay(what, "--headless", "--speed", "0", home=tmp_path) == 0
        out = capsys.readouterr().out
        assert out == printed_at_once(events)
        assert out.splitlines()[0].startswith(f"run {events[0].run_id} · task semver")
        assert "agent submitted" in out


def test_the_lines_come_at_the_recordings_pace():
    events = recordings.load(RECORDING)
    out, sleep = io.StringIO(), Sleeps(digits=6)
    asyncio.run(replay_headless(events, speed=2.0, out=out, sleep=sleep))
    assert out.getvalue() == printed_at_once(events)
    gaps = [b.ts - a.ts for a, b in zip(events, events[1:], strict=False)]
    assert sleep.waits == [round(min(g, 2.0) / 2.0, 6) for g in gaps if g > 0]
    assert PacedReplay(events).duration_s > 20 and sum(sleep.waits) < 12  # twice as fast


def test_a_stored_run_replays_by_its_id(tmp_path, capsys):
    events = recordings.load(RECORDING)
    store = RunStore(tmp_path / "runs.db")
    store.create_run(events[0].run_id, "semver", "scripted:good", "L1", "simulated", events[0].ts)
    for ev in events:
        store.append(ev)
    store.close()
    assert replay(events[0].run_id, "--headless", "--speed", "0", home=tmp_path) == 0
    assert capsys.readouterr().out == printed_at_once(events)


def test_what_cannot_be_replayed_is_one_clear_error(tmp_path, capsys):
    assert replay("nothing-like-it", "--headless", home=tmp_path) == 2
    assert "no stored run or recording 'nothing-like-it'" in capsys.readouterr().err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(RECORDING.read_text().splitlines()[0] + "\n{not json\n")
    assert replay(str(broken), "--headless", home=tmp_path) == 2
    assert "broken.jsonl:2: not a run event" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert replay(str(empty), "--headless", home=tmp_path) == 2
    assert "no events to replay" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_replay():
    class Closing(io.StringIO):
        def write(self, text: str) -> int:
            if self.tell() > 200:
                raise BrokenPipeError
            return super().write(text)

    sleep = Sleeps(digits=6)
    events = recordings.load(RECORDING)
    printer = asyncio.run(replay_headless(events, out=Closing(), sleep=sleep))
    assert printer.closed and len(sleep.waits) < 10  # it did not sit through the rest
