"""A batch over a pool of two engines — this machine's and a second dockerd reached over TCP
(an engines-file entry) — each taking one run at a time, so each takes one of the four items
at once. The second engine is stopped while it builds its run: that run fails for
infrastructure, the engine is left out, and the run is retried on the first engine; every
item completes there, every run's events are stored."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from icae_tui.batch.plan import ItemState, expand
from icae_tui.batch.runner import BatchRunner, ItemStarted
from icae_tui.batch.spec import BatchSpec, EngineSlot
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.events import PhaseChanged, RunFinished
from icae_tui.domain.states import FailureKind, Phase, RunStatus
from icae_tui.store.database import RunStore
from tests.conftest import FIXTURE_TASKS
from tests.integration.second_engine import SecondEngine, second_engine

pytestmark = pytest.mark.docker


@pytest.fixture
def engine2() -> Iterator[SecondEngine]:
    with second_engine() as engine:
        yield engine


async def test_a_lost_engines_run_is_retried_on_the_other(engine2, tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "icae-tui").mkdir(parents=True)
    (config / "icae-tui" / "engines.toml").write_text(
        f'[engines.two]\nbackend = "docker"\nhost = "{engine2.url}"\n'
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    spec = BatchSpec(tasks=["mini"], agents=["scripted:good"], repeats=4,
                     engines=[EngineSlot(name="docker"), EngineSlot(name="two")])  # fmt: skip
    tasks = {"mini": load_catalog(FIXTURE_TASKS).tasks["mini"]}
    items = expand(spec, ["mini"])
    store = RunStore(tmp_path / "runs.db")
    batches = BatchStore(store)
    batches.create("b-pool", spec, items)
    runner = BatchRunner("b-pool", spec, items, tasks, batches, cores=2)
    on_two: list[str] = []
    stopped = asyncio.Event()

    def watch(update: object) -> None:
        if not isinstance(update, ItemStarted) or update.run.config.engine != "two":
            return
        on_two.append(update.run.run_id)
        if len(on_two) == 1:  # its first run: stop the engine once that run builds

            def building(ev: object) -> None:
                building_now = isinstance(ev, PhaseChanged) and ev.phase is Phase.GENERATE
                if building_now and not stopped.is_set():
                    stopped.set()
                    engine2.stop()

            update.run.subscribe(building)

    runner.subscribe(watch)
    status = await runner.execute()
    assert stopped.is_set() and len(on_two) == 1  # left out once it was lost
    assert status is BatchStatus.COMPLETED
    assert {p.state for p in runner.progress.values()} == {ItemState.DONE}
    assert runner.down == {"two"}
    engines = batches.engines_of("b-pool")
    cut = store.run(on_two[0])
    assert cut is not None and cut.status == RunStatus.FAILED
    assert cut.failure == FailureKind.INFRASTRUCTURE
    attempts = batches.attempts("b-pool")
    (retried,) = [key for key, tries in attempts.items() if len(tries) == 2]
    first, second = attempts[retried]
    assert first.run is not None and first.run.run_id == on_two[0]
    assert second.run is not None and engines[second.run.run_id] == "docker"
    assert second.run.status == RunStatus.COMPLETED
    assert sorted(engines.values()) == ["docker"] * 4 + ["two"]
    # every run's events are in the store, each ending with its RunFinished
    for run_id in engines:
        events = store.events(run_id)
        assert events and isinstance(events[-1], RunFinished)
    store.close()
