"""A Ray cluster on this machine: a head and more nodes, each a `ray start --block` in a
process group of its own (so one node can be killed, raylet, workers and all, as a machine
lost), each started with its own environment and ports of its own — so each offers its own Docker engine
(`DOCKER_HOST`) — and declaring the resource `icae_engine`. Torn down by killing the groups:
never `ray stop`, which would stop every Ray on the machine."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

RAY = Path(sys.executable).parent / "ray"
START_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RayNode:
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """The node goes, at once: SIGKILL to its whole process group."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


@dataclass
class RayCluster:
    address: str
    folder: Path
    nodes: list[RayNode] = field(default_factory=list)

    def add(self, env: Mapping[str, str], *, head: bool = False, slots: int = 1) -> RayNode:
        where = [f"--port={self.address.rsplit(':', 1)[1]}", "--head",
                 f"--temp-dir={self.folder / 't'}", "--include-dashboard=false"] if head \
            else [f"--address={self.address}"]  # fmt: skip
        log = self.folder / f"node{len(self.nodes)}.log"
        proc = subprocess.Popen(
            [str(RAY), "start", *where, "--block", "--num-cpus=1", "--disable-usage-stats",
             # a port Ray would otherwise take fixed (52365): another cluster of the tests
             # (another worker's, another run's) may be up on this machine
             f"--dashboard-agent-listen-port={_free_port()}",
             f"--resources={json.dumps({'icae_engine': slots})}",
             "--object-store-memory=100000000"],
            env={**os.environ, **env}, stdout=log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        node = RayNode(proc, log)
        self.nodes.append(node)
        return node


def alive_offers(address: str) -> int:
    """How many live nodes declare icae_engine (asked of the cluster with `ray status`)."""
    done = subprocess.run([str(RAY), "status", f"--address={address}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        return 0
    active = done.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
    return sum(1 for line in active.splitlines() if "node_" in line)


def wait_for_nodes(cluster: RayCluster, count: int) -> None:
    deadline = time.monotonic() + START_S
    while alive_offers(cluster.address) < count:
        dead = [n for n in cluster.nodes if n.process.poll() is not None]
        if dead or time.monotonic() > deadline:
            logs = "\n".join(n.log.read_text(errors="replace")[-1500:] for n in cluster.nodes)
            raise RuntimeError(f"the Ray cluster did not come up with {count} nodes:\n{logs}")
        time.sleep(0.5)


@contextlib.contextmanager
def ray_cluster(engines: list[Mapping[str, str]]) -> Iterator[RayCluster]:
    """A head with the first environment, a node with each next one; up when every node
    is listed active."""
    # /tmp: Unix socket paths must be short; the pid: tests/isolation.py finds it if left behind
    folder = Path(tempfile.mkdtemp(prefix=f"icae-ray-{os.getpid()}-", dir="/tmp"))
    cluster = RayCluster(f"127.0.0.1:{_free_port()}", folder)
    try:
        cluster.add(engines[0], head=True)
        wait_for_nodes(cluster, 1)
        for env in engines[1:]:
            cluster.add(env)
        wait_for_nodes(cluster, len(engines))
        yield cluster
    finally:
        for node in reversed(cluster.nodes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.process.pid, signal.SIGTERM)
        for node in cluster.nodes:
            try:
                node.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node.kill()
                node.process.wait()
        shutil.rmtree(folder, ignore_errors=True)
