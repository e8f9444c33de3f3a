"""The console's fixtures. Console tests never see the user's own agents: the user's
agents.toml is looked for in an empty folder (run setup reads it, with the defaults and any
`--agents` file).

`app` is the console under test (tests.ui.helpers.Console, keeping what it notified), on no
task; a test or module marked `@pytest.mark.app(tasks=True, animations=False)` gets it on the
fixture tasks, or with nothing animated. The snapshots' fixtures (`catalog`, `history`,
`model_history`, `utc`, `size`) keep their pictures stable (see test_snapshots.py)."""

from __future__ import annotations

import inspect
import time

import pytest

from icae_tui.catalog.loader import Catalog
from icae_tui.gateway import dump_calls
from icae_tui.runs.run import MODEL_CALLS_FILE
from icae_tui.store.database import RunStore

from .helpers import (
    DETAIL_CASE,
    MODEL_RUN_ID,
    RECORDED_ID,
    RECORDED_T0,
    SIZES,
    Console,
    model_recording,
    model_run,
    press_settled,
    recorded_run,
    settled,
    stamp,
    started,
)

SNAPSHOT_TASKS_ROOT = "tasks/mini"  # the task's folder as snapshots show it (not this checkout's)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "app(tasks=False, animations=True): the `app` fixture's console on the fixture tasks "
        "(else on none), with or without animations",
    )


@pytest.fixture
def app(request: pytest.FixtureRequest, store: RunStore) -> Console:
    marker = request.node.get_closest_marker("app")
    options = {"tasks": False, "animations": True, **(marker.kwargs if marker else {})}
    catalog = request.getfixturevalue("fixture_catalog") if options["tasks"] else Catalog()
    return Console(catalog=catalog, store=store, animations=options["animations"])


@pytest.fixture
def mini_with_files(mini):
    """The mini task, its first hidden case (DETAIL_CASE) given fixtures (hostile too) and a
    prep line."""
    files = {"in/a.txt": "[red]alpha[/]\n\x1b[2Jbeta\n", "b.cfg": "k = v\n"}
    cases = [
        ref.model_copy(
            update={"case": ref.case.model_copy(update={"files": files, "prep": "mkdir -p out"})}
        )
        if ref.id == DETAIL_CASE
        else ref
        for ref in mini.cases
    ]
    return mini.model_copy(update={"cases": cases})


# --- the snapshots' fixtures ------------------------------------------------------------------


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def catalog(mini) -> Catalog:
    """The fixture task `mini`, its folder shown as a fixed path."""
    return Catalog(tasks={"mini": mini.model_copy(update={"root": SNAPSHOT_TASKS_ROOT})})


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


@pytest.fixture(params=SIZES)
def size(request) -> tuple[int, int]:
    """Each test at 80×24 and at 200×60 (its snapshots: name[80x24], name[200x60])."""
    return SIZES[request.param]


@pytest.fixture(autouse=True)
def no_user_agents(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))


@pytest.fixture
def snap_compare(snap_compare):
    """The plugin's snap_compare, the picture taken once the screen has settled (`settled`:
    every message handled, no layout or repaint pending, the run screen's view drawn) and with
    every cursor held still. The plugin waits for the process to look idle by its CPU time,
    which a loaded machine fakes (a starved process uses no CPU either): a snapshot taken then
    showed a screen half drawn. A blinking cursor drawn in one run and not the next made them
    flaky too."""

    def compare(app, press=(), terminal_size=(80, 24), run_before=None):
        async def steady(pilot) -> None:
            if run_before is not None:
                result = run_before(pilot)
                if inspect.isawaitable(result):
                    await result
            await press_settled(pilot, *press)
            await settled(pilot)
            # A blink tick queued before the blink stopped would still flip the cursor:
            # stop it, let such a tick pass, then set the cursor as the focus has it.
            blinking = [
                widget
                for screen in pilot.app.screen_stack
                for widget in screen.walk_children(with_self=True)
                if hasattr(widget, "cursor_blink")
            ]
            for widget in blinking:
                widget.cursor_blink = False
            await settled(pilot)
            for widget in blinking:
                widget._watch_cursor_blink(False)
                # TextArea's line cache keys a still cursor like a blinked-off one: a line
                # drawn in the off phase would be reused without its cursor.
                cache = getattr(widget, "_line_cache", None)
                if cache is not None:
                    cache.clear()
                widget.refresh()
            await settled(pilot)

        return snap_compare(app, terminal_size=terminal_size, run_before=steady)

    return compare
