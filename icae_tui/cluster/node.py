"""The work on a cluster node: a Ray actor, one per node that declares an engine, holding that
node's share of a batch. It runs each run it is given as a `Run` like any other, against the
node's own engine (`ICAE_ENGINE`, else the default backend — which follows `DOCKER_HOST`),
with a store of its own in a scratch folder; the head follows each run's events as they are
stored (`events`, a long poll), operates it (answers, responder, pause, cancel) and, when it
ended, takes its artifacts back (`finish`).

Plain Python: `ray.remote` makes the actor (cluster/ray_pool.py), so importing this module
needs no Ray. Every method is a coroutine on the actor's one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icae_tui.batch.placement import Preparing, get_ready
from icae_tui.catalog.loader import load_task
from icae_tui.cluster.shipping import pack, unpack
from icae_tui.domain.events import Event
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level, Task
from icae_tui.errors import IcaeError
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run, RunOutcome
from icae_tui.sandbox.registry import DEFAULT_ENGINE, open_sandbox
from icae_tui.store.database import RunStore
from icae_tui.util.owners import owner_gone

ENGINE_ENV = "ICAE_ENGINE"  # a node's engine: a backend or an engines-file entry
EVENTS_AT_ONCE = 500  # per answer to the head's poll
# the report and trajectory are written again on the head, from the events it stored
REMADE_ON_HEAD = frozenset({"report.json", "trajectory.json"})


FOLDER_PREFIX = "icae-node-"  # then the owning process's pid: a node lost leaves its folder


def reap_node_folders(tmp: Path | None = None) -> list[str]:
    """The scratch folders of node workers that are gone (killed with their node)."""
    removed = []
    for folder in (tmp or Path(tempfile.gettempdir())).glob(FOLDER_PREFIX + "*"):
        owner, sep, _ = folder.name[len(FOLDER_PREFIX) :].partition("-")
        try:
            st = os.lstat(folder)
        except OSError:
            continue
        ours = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
        if ours and sep and owner.isdigit() and owner_gone(int(owner), None):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


@dataclass
class _NodeRun:
    run: Run
    job: asyncio.Task[RunOutcome]
    payloads: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class NodeWorker:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.engine = os.environ.get(ENGINE_ENV) or DEFAULT_ENGINE
        reap_node_folders()
        self.home = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self.store = RunStore(self.home / "runs.db")
        self.tasks: dict[str, Task] = {}
        self.agent_files: tuple[Path, ...] = ()
        self.runs: dict[str, _NodeRun] = {}

    async def describe(self) -> dict[str, Any]:
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
            "engine": self.engine,
            "docker_host": os.environ.get("DOCKER_HOST", ""),
            "pid": os.getpid(),
            "cores": os.cpu_count() or 1,
        }

    async def ping(self) -> bool:
        sandbox = await open_sandbox(self.engine)
        try:
            await sandbox.ping()
        finally:
            await asyncio.shield(sandbox.close())
        return True

    # --- getting ready ------------------------------------------------------------------

    def _receive(self, tasks: dict[str, bytes], agent_files: list[tuple[str, bytes]]) -> None:
        for task_id, data in tasks.items():
            if task_id in self.tasks:
                continue
            root = self.home / "tasks" / task_id
            unpack(data, root)
            self.tasks[task_id] = load_task(root)
        folder = self.home / "agents"
        folder.mkdir(exist_ok=True)
        paths = []
        for i, (name, data) in enumerate(agent_files):
            path = folder / f"{i}-{Path(name).name}"
            path.write_bytes(data)
            paths.append(path)
        self.agent_files = tuple(paths)

    async def prepare(
        self,
        batch_id: str,
        tasks: dict[str, bytes],
        agent_files: list[tuple[str, bytes]],
        pairs: list[tuple[str, str]],
    ) -> dict[str, Any]:
        """The tasks and agents files, then one sweep and every image `pairs` need on this
        node's engine: what it said, and `down` (why) when the engine does not answer."""
        said: list[str] = []
        try:
            self._receive(tasks, agent_files)
            sandbox = await open_sandbox(self.engine)
        except (IcaeError, OSError) as err:
            return {"said": said, "down": str(err)}
        try:
            ctx = Preparing(batch_id, self.tasks, self.agent_files, said.append)
            await get_ready(sandbox, pairs, ctx, label=self.engine)
        finally:
            await asyncio.shield(sandbox.close())
        return {"said": said, "down": ""}

    # --- runs -----------------------------------------------------------------------------

    async def start(self, run_id: str, options: dict[str, Any]) -> None:
        task = self.tasks[options["task_id"]]
        cases = options.get("cases_at_once") or max(1, (os.cpu_count() or 1) // self.capacity)
        config = RunConfig(
            task=task, agent=options["agent"], level=Level(options["level"]),
            responder=ResponderMode(options["responder"]), budget=options.get("budget"),
            concurrency=cases, agent_files=self.agent_files, engine=self.engine, sweep=False,
        )  # fmt: skip
        run = Run(config, self.store, run_id=run_id)
        job = asyncio.get_running_loop().create_task(run.execute())
        entry = _NodeRun(run, job)

        def follow(event: Event) -> None:
            entry.payloads.append(event.model_dump_json())
            entry.changed.set()

        run.subscribe(follow)
        job.add_done_callback(lambda _: entry.changed.set())
        self.runs[run_id] = entry

    async def events(self, run_id: str, after: int, wait_s: float = 10.0) -> list[str]:
        """The run's events past the first `after` (JSON), once there are some — or none
        after `wait_s`, or when its work is over."""
        entry = self.runs[run_id]
        while len(entry.payloads) <= after and not entry.job.done():
            entry.changed.clear()
            try:
                await asyncio.wait_for(entry.changed.wait(), wait_s)
            except TimeoutError:
                return []
        return entry.payloads[after : after + EVENTS_AT_ONCE]

    async def finish(self, run_id: str) -> dict[str, Any]:
        """Once the run's work is over: its artifacts (a tar; the report is made again on
        the head) and what its final sweep removed. The run is forgotten here."""
        entry = self.runs[run_id]
        with contextlib.suppress(BaseException):
            await entry.job
        folder = self.store.artifacts_dir / run_id
        data = pack(folder, skip=REMADE_ON_HEAD) if folder.is_dir() else b""
        shutil.rmtree(folder, ignore_errors=True)
        del self.runs[run_id]
        return {"artifacts": data, "leftovers": list(entry.run.leftovers_removed)}

    async def answer(self, run_id: str, question_id: int, text: str) -> bool:
        entry = self.runs.get(run_id)
        return entry is not None and entry.run.answer(question_id, text)

    async def set_responder(self, run_id: str, mode: str) -> bool:
        entry = self.runs.get(run_id)
        return entry is not None and entry.run.set_responder(mode)

    async def pause(self, run_id: str) -> bool:
        entry = self.runs.get(run_id)
        return entry is not None and await entry.run.pause()

    async def resume(self, run_id: str) -> bool:
        entry = self.runs.get(run_id)
        return entry is not None and await entry.run.resume()

    async def cancel(self, run_id: str) -> bool:
        """Cancel the run: it stores itself cancelled and removes its boxes (its events say
        so, and the head follows them to the end)."""
        entry = self.runs.get(run_id)
        return entry is not None and entry.job.cancel()

    async def close(self) -> None:
        """The batch is over: any run still here is cancelled (its boxes removed), the
        scratch folder removed."""
        jobs = [e.job for e in self.runs.values() if not e.job.done()]
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        self.store.close()
        shutil.rmtree(self.home, ignore_errors=True)
        reap_node_folders()  # and those of workers killed with their node on this machine
