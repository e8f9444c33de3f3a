"""The recorded runs shipped with the sample tasks load, replay to their recorded outcome
through the same view the console uses, and a broken recording is a located error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icae_tui.catalog import recordings
from icae_tui.display.view import RunView
from icae_tui.domain.events import AgentOutput, RunFinished
from icae_tui.domain.states import Stream

TASKS = Path(__file__).resolve().parent.parent / "tasks"


def test_each_sample_task_ships_a_recording_that_replays_to_its_end(tmp_path):
    found = recordings.bundled({p.name: p for p in TASKS.iterdir() if p.is_dir()})
    assert {r.task_id for r in found} >= {"semver", "tidy", "wordfreq"}
    for rec in found:
        events = recordings.load(rec.path)
        view = RunView.from_events(events)
        assert isinstance(events[-1], RunFinished) and events[-1].status == "completed"
        assert view.score is not None and view.cases
        assert view.started is not None and view.started.task_id == rec.task_id
        # nothing of the file lost: every field it holds comes back with its value (fields
        # added to the event types since it was recorded come back too, at their defaults)
        again = recordings.dump(events).splitlines()
        stored = rec.path.read_text().splitlines()
        assert len(again) == len(stored)
        for line, back in zip(stored, again, strict=True):
            assert _within(json.loads(line), json.loads(back)), line[:200]
        copy = tmp_path / rec.path.name
        copy.write_text(recordings.dump(events))
        assert recordings.load(copy) == events


def _within(stored: object, back: object) -> bool:
    """Whether `back` holds everything `stored` does (objects may have more keys)."""
    if isinstance(stored, dict) and isinstance(back, dict):
        return all(k in back and _within(v, back[k]) for k, v in stored.items())
    if isinstance(stored, list) and isinstance(back, list):
        return len(stored) == len(back) and all(map(_within, stored, back))
    return stored == back


def test_a_broken_recording_names_file_and_line(tmp_path):
    good = recordings.load(next((TASKS / "semver" / "recordings").glob("*.jsonl")))
    path = tmp_path / "r.jsonl"
    path.write_text(recordings.dump(good[:2]) + '{"kind": "nonsense"}\n')
    with pytest.raises(recordings.RecordingError, match=r"r\.jsonl:3: not a run event"):
        recordings.load(path)


def test_a_line_separator_in_an_event_is_no_line_break(tmp_path):
    """JSON keeps U+2028 raw: a reader that splits lines as str.splitlines() does would cut
    the event in two."""
    events = recordings.load(next((TASKS / "semver" / "recordings").glob("*.jsonl")))
    said = AgentOutput(run_id=events[0].run_id, seq=999, stream=Stream.STDOUT,
                       text="real\u2028injected\u2029end")  # fmt: skip
    path = tmp_path / "r.jsonl"
    path.write_text(recordings.dump([*events[:2], said]))
    assert recordings.load(path)[-1] == said
