"""A batch on a Ray cluster (`icae batch SPEC --ray ADDRESS`; the optional extra
`pip install 'icae-tui[ray]'`).

A node offers its Docker engine by declaring the custom resource `icae_engine` — how many
runs it takes at once — and, when that engine is not the default one, `ICAE_ENGINE` (a
backend or an engines-file entry) or `DOCKER_HOST` in the environment it was started with:

    ray start --head --port 6379 --resources '{"icae_engine": 2}'
    DOCKER_HOST=tcp://10.0.0.7:2375 ray start --address HEAD:6379 --resources '{"icae_engine": 1}'

The head (the process running `icae batch`) puts one actor on each such node (cluster/
node.py), pinned to it and holding its `icae_engine` slots; each node is a placement of the
batch's pool (batch/placement.py) with as many runs at once. The tasks and agents files
travel to the nodes; events come back as they are stored (cluster/mirror.py). A node that
dies takes its actor with it: its runs end failed for infrastructure and are retried on
the others, and it takes no more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icae_tui.batch.placement import BatchRun, PlacementDown, Preparing, pairs_of
from icae_tui.batch.plan import BatchItem
from icae_tui.cluster.mirror import NodeHandle, NodeLost, NodeRun
from icae_tui.cluster.shipping import pack
from icae_tui.errors import IcaeError
from icae_tui.runs.config import RunConfig
from icae_tui.store.database import RunStore

ENGINE_RESOURCE = "icae_engine"
ANSWER_PATIENCE_S = 60.0  # for a node's quick calls (describe, ping, commands)


class ClusterError(IcaeError):
    """The cluster cannot be used: Ray missing, no head at the address, no node offering an
    engine."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray: pip install 'icae-tui[ray]'") from None
    return ray


def _answers(address: str, timeout_s: float = 5.0) -> str:
    """Why nothing answers at HOST:PORT ("" when something listens; other forms unchecked).
    Ray's own client would retry a dead address for minutes."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return ""
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return ""
    except OSError as err:
        return err.strerror or str(err)


def connect(address: str) -> None:
    """Join the cluster at `address` as its driver (blocking: before the event loop)."""
    ray = _ray()
    if ray.is_initialized():
        return
    if why := _answers(address):
        raise ClusterError(f"no Ray cluster at {address}: {why}")
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING,
                 namespace="icae", configure_logging=False)  # fmt: skip
    except Exception as err:  # ConnectionError, or Ray's own on a bad address
        raise ClusterError(f"no Ray cluster at {address}: {err}") from None


async def call(ref: Any) -> Any:
    """Await a remote call; the node's loss (its actor or node dead, unreachable) is NodeLost.
    An exception raised by our own code on the node comes back as it is."""
    ray = _ray()
    try:
        return await ref
    except ray.exceptions.RayTaskError as err:
        raise err.as_instanceof_cause() from None
    except ray.exceptions.RayError as err:
        raise NodeLost(_first_line(err)) from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


@dataclass(frozen=True)
class NodeOffer:
    node_id: str
    address: str
    slots: int


def offers() -> list[NodeOffer]:
    """The live nodes declaring `icae_engine`, with their slots."""
    ray = _ray()
    found = []
    for node in ray.nodes():
        slots = int(node.get("Resources", {}).get(ENGINE_RESOURCE, 0))
        if node.get("Alive") and slots > 0:
            found.append(NodeOffer(node["NodeID"], node.get("NodeManagerAddress", ""), slots))
    return found


@dataclass
class NodePlacement:
    """One node of the cluster, as a placement of the batch's pool."""

    name: str
    runs: int
    node: NodeHandle
    cases_at_once: int | None = None  # the spec's; None: the node's cores shared
    info: dict[str, Any] = field(default_factory=dict)  # what the node said of itself

    async def prepare(self, queue: Iterable[BatchItem], ctx: Preparing) -> None:
        items = list(queue)
        wanted = sorted({item.task_id for item in items})
        tasks = {task_id: pack(Path(ctx.tasks[task_id].root)) for task_id in wanted}
        agent_files = [(p.name, p.read_bytes()) for p in ctx.agent_files]
        ref = self.node.actor.prepare.remote(ctx.batch_id, tasks, agent_files, pairs_of(items))
        try:
            answer = await self.node.call(ref)
        except NodeLost as err:
            raise PlacementDown(str(err)) from None
        for line in answer["said"]:
            ctx.tell(f"{self.name}: {line}")
        if answer["down"]:
            raise PlacementDown(answer["down"])

    async def check(self) -> None:
        try:
            await asyncio.wait_for(self.node.call(self.node.actor.ping.remote()), ANSWER_PATIENCE_S)
        except (NodeLost, TimeoutError, IcaeError) as err:
            raise PlacementDown(str(err) or "no answer") from None

    def run(self, config: RunConfig, store: RunStore) -> BatchRun:
        return NodeRun(config, store, self.node, cases_at_once=self.cases_at_once)

    async def close(self) -> None:
        """Its runs cancelled, its scratch folder gone, its actor (and slots) let go."""
        ray = _ray()
        with contextlib.suppress(NodeLost, TimeoutError):
            await asyncio.wait_for(self.node.call(self.node.actor.close.remote()), ANSWER_PATIENCE_S)
        ray.kill(self.node.actor, no_restart=True)


async def open_nodes(
    *, cases_at_once: int | None = None, say: Callable[[str], None] = lambda _: None
) -> list[NodePlacement]:
    """An actor on each node offering an engine, pinned there and holding its slots; each
    a placement. ClusterError when no node offers one."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from icae_tui.cluster.node import NodeWorker

    found = offers()
    if not found:
        raise ClusterError(f"no node of the cluster declares the resource {ENGINE_RESOURCE!r} "
                           "(ray start … --resources '{\"icae_engine\": 1}')")  # fmt: skip
    worker = ray.remote(NodeWorker)
    places: list[NodePlacement] = []
    for offer in found:
        actor = worker.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(offer.node_id, soft=False),
            resources={ENGINE_RESOURCE: offer.slots}, num_cpus=0, max_restarts=0,
            max_concurrency=1000,
        ).remote(offer.slots)  # fmt: skip
        name = f"ray:{offer.node_id[:8]}"
        handle = NodeHandle(name, actor, call)
        try:
            info = await asyncio.wait_for(call(actor.describe.remote()), ANSWER_PATIENCE_S * 2)
        except (NodeLost, TimeoutError) as err:
            say(f"{name} ({offer.address}) left out: {err or 'no answer'}")
            ray.kill(actor, no_restart=True)
            continue
        engine = info["engine"] + (f" ({info['docker_host']})" if info["docker_host"] else "")
        say(f"{name} on {info['host']} ({offer.address}): engine {engine}, {offer.slots} run(s) at once")
        places.append(NodePlacement(name, offer.slots, handle, cases_at_once, info))
    if not places:
        raise ClusterError("no node offering an engine answered")
    return places

