"""Screenshots of the console, compared with the accepted ones in __snapshots__/.

Stable by construction: a fixed terminal size, animations off, the task's folder shown as a
fixed path, history's dates from fixed timestamps in UTC, and the finished run replayed from
a fixed event list (its clock comes from the events' timestamps).
After an intended change of the console: `pytest tests/ui/test_snapshots.py --snapshot-update`,
then look at the new SVGs before committing them.
"""

from __future__ import annotations

import time

import pytest

from icae_tui.catalog import Catalog
from icae_tui.store import RunStore
from icae_tui.ui.app import IcaeApp

from .helpers import RECORDED_ID, RECORDED_T0, recorded_run, stamp, started

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
    assert snap_compare(console(catalog, history), press=["h", "enter"], terminal_size=SIZE)


def test_case_detail(snap_compare, catalog, history, utc):
    keys = ["h", "enter", "r", "down", "enter"]  # the results, the second case, its details
    assert snap_compare(console(catalog, history), press=keys, terminal_size=SIZE)
