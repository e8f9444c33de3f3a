"""A batch on a Ray cluster of two nodes on this machine, each offering its own engine: the
head's node this machine's dockerd, the second node a second dockerd reached over TCP. Two
runs of the fixture task, answered by a human at the head (responder human): one run goes to
each node. The second node is killed (its whole process group) while its run waits for an
answer; that run ends failed for infrastructure, and is redone on the first node. Every
event of every run is in the head's store, numbered without a gap; a display attached at the
head saw one run live; nothing of the batch is left on either engine."""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from icae_tui.batch.plan import ItemState, expand
from icae_tui.batch.runner import BatchRunner, ItemStarted
from icae_tui.batch.spec import BatchSpec
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.catalog.loader import load_catalog
from icae_tui.display.sources import AttachedSource
from icae_tui.domain.events import Event, QuestionAnswered, QuestionAsked, RunFinished, RunStarted
from icae_tui.domain.states import AnsweredBy, FailureKind, ResponderMode, RunStatus
from icae_tui.store.database import RunStore
from tests.conftest import FIXTURE_TASKS
from tests.integration.ray_nodes import RayCluster, ray_cluster
from tests.integration.second_engine import SecondEngine, second_engine

pytestmark = pytest.mark.docker

if os.environ.get("ICAE_REQUIRE_RAY") != "1":
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install .[ray])")


@pytest.fixture
def engine2() -> Iterator[SecondEngine]:
    with second_engine() as engine:
        yield engine


@pytest.fixture
def cluster(engine2: SecondEngine) -> Iterator[RayCluster]:
    with ray_cluster([{}, {"DOCKER_HOST": engine2.url}]) as running:
        yield running


def _labelled(engine: list[str], label: str) -> list[str]:
    done = subprocess.run([*engine, "ps", "-aq", "--filter", f"label={label}"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.split()


async def test_a_batch_spreads_over_two_nodes_and_a_lost_nodes_run_finishes_on_the_other(
    cluster: RayCluster, engine2: SecondEngine, tmp_path, monkeypatch
):
    from icae_tui.cluster import ray_pool

    config = tmp_path / "config"  # the second engine as an entry: to sweep it at the end
    (config / "icae-tui").mkdir(parents=True)
    (config / "icae-tui" / "engines.toml").write_text(
        f'[engines.two]\nbackend = "docker"\nhost = "{engine2.url}"\n'
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))

    ray_pool.connect(cluster.address)
    try:
        await _batch_on(cluster, engine2, tmp_path)
    finally:
        import ray  # the extra's: the session ray_pool.connect joined

        ray.shutdown()


async def _batch_on(cluster: RayCluster, engine2: SecondEngine, tmp_path) -> None:
    from icae_tui.cluster.ray_pool import NodePlacement, open_nodes
    from icae_tui.sandbox.registry import open_sandbox

    spec = BatchSpec(tasks=["mini"], agents=["scripted:good"], repeats=2,
                     responders=[ResponderMode.HUMAN], ray=cluster.address)  # fmt: skip
    tasks = {"mini": load_catalog(FIXTURE_TASKS).tasks["mini"]}
    items = expand(spec, ["mini"])
    store = RunStore(tmp_path / "runs.db")
    batches = BatchStore(store)
    batches.create("b-ray", spec, items)
    runner = BatchRunner("b-ray", spec, items, tasks, batches, cores=2)
    nodes: list[NodePlacement] = []

    async def find() -> list[NodePlacement]:
        nodes.extend(await open_nodes(say=runner.say))
        return nodes

    runner.find_placements = find  # type: ignore[assignment]
    killed = asyncio.Event()
    on_second: list[str] = []
    seen_live: list[Event] = []

    def second_name() -> str:
        (name,) = [n.name for n in nodes if n.info["docker_host"] == engine2.url]
        return name

    def watch(update: object) -> None:
        if not isinstance(update, ItemStarted):
            return
        run = update.run
        there = run.node.name  # type: ignore[attr-defined]
        if there == second_name():
            on_second.append(run.run_id)
        if not seen_live and there != second_name():  # the head's console, attached
            AttachedSource(run).connect(seen_live.append)

        def operator(ev: Event) -> None:
            if not isinstance(ev, QuestionAsked):
                return
            if there == second_name():  # it waits for this answer: lose the node instead
                cluster.nodes[1].kill()
                killed.set()
                return
            assert run.answer(ev.question_id, "Whatever the spec says; keep it simple.")

        run.subscribe(operator)

    runner.subscribe(watch)
    status = await runner.execute()

    assert killed.is_set() and len(on_second) == 1
    assert status is BatchStatus.COMPLETED
    assert {p.state for p in runner.progress.values()} == {ItemState.DONE}
    assert runner.down == {second_name()}
    engines = batches.engines_of("b-ray")
    first_node = next(n.name for n in nodes if n.name != second_name())
    assert sorted(engines.values()) == sorted([first_node] * 2 + [second_name()])
    lost = store.run(on_second[0])
    assert lost is not None and lost.status == RunStatus.FAILED
    assert lost.failure == FailureKind.INFRASTRUCTURE and "lost" in lost.error
    for run_id, where in engines.items():
        events = store.events(run_id)
        assert [ev.seq for ev in events] == list(range(1, len(events) + 1))
        assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
        assert any(isinstance(ev, QuestionAsked) for ev in events)
        if where == first_node:  # answered from the head, across the cluster
            answers = [ev for ev in events if isinstance(ev, QuestionAnswered)]
            assert answers and {a.responder for a in answers} == {AnsweredBy.HUMAN}
            assert events[-1].status is RunStatus.COMPLETED
            assert events[-1].score is not None and events[-1].score.overall == 1.0
            assert (store.artifacts_dir / run_id / "report.json").is_file()
    live_run = seen_live[0].run_id
    assert [ev.seq for ev in seen_live] == [ev.seq for ev in store.events(live_run)]

    # nothing of the batch left: on the second engine once its sweep took what the killed
    # node's worker left (their owner is dead), on the first at once
    sandbox = await open_sandbox("two")
    try:
        await sandbox.sweep()
    finally:
        await sandbox.close()
    for run_id in engines:
        for engine in (["docker"], ["docker", "-H", f"unix://{engine2.socket}"]):
            assert _labelled(engine, f"icae.run={run_id}") == []
    # the killed worker's scratch folder too, once a worker of this machine closed
    assert not list(Path(tempfile.gettempdir()).glob("icae-node-*"))
    store.close()
