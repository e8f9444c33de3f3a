"""Screenshots of the console, compared with the accepted ones in __snapshots__/.

Stable by construction: a fixed terminal size, animations off, the task's folder shown as a
fixed path, history's dates from fixed timestamps in UTC, and the finished run replayed from
a fixed event list (its clock comes from the events' timestamps), moved to its end at once
(End) rather than played at its pace.
After an intended change of the console: `pytest tests/ui/test_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them.
"""

from __future__ import annotations

import time

import pytest

from icae_tui.catalog import Catalog
from icae_tui.gateway import dump_calls
from icae_tui.run import MODEL_CALLS_FILE
from icae_tui.store import RunStore
from icae_tui.ui.app import IcaeApp
from icae_tui.ui.screens.model_calls import ModelCallsScreen

from .helpers import (
    MODEL_RUN_ID,
    RECORDED_ID,
    RECORDED_T0,
    model_recording,
    model_run,
    recorded_run,
    stamp,
    started,
    until,
)

SIZE = (160, 45)
SNAPSHOT_TASKS_ROOT = "tasks/mini"  # instead of this checkout's absolute path


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def catalog(fixture_catalog) -> Catalog:
    mini = fixture_catalog.tasks["mini"].model_copy(update={"root": SNAPSHOT_TASKS_ROOT})
    return Catalog(tasks={"mini": mini})


@pytest.fixture
def history(store: RunStore) -> RunStore:
    """Two stored runs: the recorded one (completed) and an older failed one."""
    events = recorded_run()
    store.create_run(RECORDED_ID, "mini", "scripted:good", "L1", "simulated", RECORDED_T0)
    for ev in events:
        store.append(ev)
    store.finish_run(RECORDED_ID, "completed", events[-1].ts, 0.5)
    older = "20231231-230000-0ld0ld"
    store.create_run(older, "mini", "scripted:broken", "L2", "human", RECORDED_T0 - 3600)
    for ev in stamp([started("human")], older, RECORDED_T0 - 3600):
        store.append(ev)
    store.finish_run(older, "failed", RECORDED_T0 - 3500, None, "Docker engine lost mid-run")
    return store


@pytest.fixture
def model_history(store: RunStore) -> RunStore:
    """One stored run of a model agent, with its limits and its recorded calls."""
    events = model_run()
    store.create_run(MODEL_RUN_ID, "mini", "model:local", "L1", "simulated", events[0].ts)
    for ev in events:
        store.append(ev)
    store.finish_run(MODEL_RUN_ID, "completed", events[-1].ts, 1.0)
    folder = store.artifacts_dir / MODEL_RUN_ID
    folder.mkdir(parents=True)
    (folder / MODEL_CALLS_FILE).write_text(dump_calls(model_recording()))
    return store


def console(catalog: Catalog, store: RunStore) -> IcaeApp:
    app = IcaeApp(catalog=catalog, store=store)
    app.animation_level = "none"
    return app


def test_task_list(snap_compare, catalog, store):
    assert snap_compare(console(catalog, store), terminal_size=SIZE)


def test_run_setup(snap_compare, catalog, store):
    assert snap_compare(console(catalog, store), press=["enter"], terminal_size=SIZE)


def test_history(snap_compare, catalog, history, utc):
    assert snap_compare(console(catalog, history), press=["h"], terminal_size=SIZE)


def test_finished_run_replayed(snap_compare, catalog, history, utc):
    """End: the replay's final state at once (the replay bar says so)."""
    keys = ["h", "enter", "end"]
    assert snap_compare(console(catalog, history), press=keys, terminal_size=SIZE)


def test_case_detail(snap_compare, catalog, history, utc):
    keys = ["h", "enter", "end", "r", "down", "enter"]  # the results, the second case, its details
    assert snap_compare(console(catalog, history), press=keys, terminal_size=SIZE)


def test_model_run_replayed(snap_compare, catalog, model_history, utc):
    """The header's second line: steps, time, calls, tokens (≥80 %) and cost (reached)."""
    keys = ["h", "enter", "end"]
    assert snap_compare(console(catalog, model_history), press=keys, terminal_size=SIZE)


def test_model_calls(snap_compare, catalog, model_history, utc):
    """The calls of the model run, the second expanded: new messages, reply, body."""

    async def expanded(pilot) -> None:
        await pilot.press("h", "enter", "end", "l", "down", "enter")
        app = pilot.app
        await until(pilot, lambda: isinstance(app.screen, ModelCallsScreen)
                    and "reply (finish: stop)" in app.screen.detail_text)  # fmt: skip

    assert snap_compare(console(catalog, model_history), run_before=expanded, terminal_size=SIZE)
