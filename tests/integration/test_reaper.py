"""After kill -9 of a run, the next start removes what it left — and nothing of another owner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from icae_tui.sandbox.base import Role
from icae_tui.sandbox.docker.containers import create_container
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.images import BASE_IMAGE
from icae_tui.sandbox.docker.reaper import reap
from tests.conftest import FIXTURE_TASKS, ROOT
from tests.polling import eventually

pytestmark = pytest.mark.docker


async def _containers(docker, *labels: str) -> list:
    return await docker.containers.list(all=True, filters=json.dumps({"label": list(labels)}))


async def _gone(docker, label: str) -> bool:
    return await _containers(docker, label) == []


async def _agent_container_of(docker, proc: subprocess.Popen) -> list:
    """Wait (without blocking the loop) until the run in `proc` has its agent's container
    (not merely a container: an image build's comes first when an image is missing)."""

    async def probe() -> list:
        assert proc.poll() is None, f"the run exited ({proc.returncode}) before its container"
        return await _containers(docker, f"icae.owner-pid={proc.pid}", f"icae.role={Role.AGENT}")

    return await eventually(probe, what="the run to start its agent container", timeout=120,
                            interval=0.2)  # fmt: skip


async def test_kill_9_mid_run_then_reap(tmp_path):
    docker = await connect()
    # Another owner's container (a live process: us) and an unlabelled one must survive.
    foreign = await create_container(docker, BASE_IMAGE, run_id="someone-else", role="test")
    plain = await docker.containers.create_or_replace(
        name=f"icae-reaper-unlabelled-{os.getpid()}",
        config={"Image": BASE_IMAGE, "Cmd": ["sleep", "600"]},
    )
    await plain.start()
    cmd = [sys.executable, "-m", "icae_tui", "--tasks", str(FIXTURE_TASKS), "--home", str(tmp_path),
           "--pace", "2", "run", "--task", "mini", "--agent", "scripted:good"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        label = f"icae.owner-pid={proc.pid}"
        await _agent_container_of(docker, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert await _containers(docker, label), (
            "a killed run's container is still there before reaping"
        )
        report = await reap(docker)

        async def swept_and_gone() -> bool:
            # Every start of a run sweeps too: a run of another test worker may have taken (or
            # be taking) the dead run's container first; and a create the killed run had in
            # flight may land after a sweep. Gone it must be after sweeping, whoever removed it.
            await reap(docker)
            return await _gone(docker, label)

        await eventually(swept_and_gone, what="the dead run's container to go", timeout=60,
                         interval=0.5)  # fmt: skip
        assert report.kept >= 1  # the foreign container at least: its owner (we) is alive
        assert [c.id for c in await _containers(docker, "icae.run=someone-else")] == [foreign.id]
        await plain.show()  # still there: not ours
    finally:
        if proc.poll() is None:
            proc.kill()
        await foreign.remove()
        await plain.delete(force=True)
        await docker.close()


async def test_ctrl_c_removes_what_the_run_created(tmp_path):
    from icae_tui.store.database import RunStore

    docker = await connect()
    cmd = [sys.executable, "-m", "icae_tui", "--tasks", str(FIXTURE_TASKS), "--home", str(tmp_path),
           "--pace", "2", "run", "--task", "mini", "--agent", "scripted:good"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        label = f"icae.owner-pid={proc.pid}"
        await _agent_container_of(docker, proc)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (out, err)
        assert "Traceback" not in err
        assert await _containers(docker, label) == []
        [row] = RunStore(tmp_path / "runs.db").runs()
        assert row.status == "cancelled"
    finally:
        if proc.poll() is None:
            proc.kill()
        await docker.close()


def _start_headless(home) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "icae_tui", "--tasks", str(FIXTURE_TASKS), "--home", str(home),
           "--pace", "2", "run", "--task", "mini", "--agent", "scripted:good"]  # fmt: skip
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _kill_9_in_agent_phase(docker, home) -> int:
    """Start a headless run, kill -9 it once its agent container (and so its clarification
    socket folder) exists; the pid of the dead owner."""
    proc = _start_headless(home)
    try:
        await _agent_container_of(docker, proc)
        assert list(Path(tempfile.gettempdir()).glob(f"icae-ask-{proc.pid}-*"))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return proc.pid


async def test_kill_9_run_is_interrupted_by_reap_and_by_the_next_start(tmp_path, fixture_catalog):
    from icae_tui.runs.config import RunConfig
    from icae_tui.runs.run import Run
    from icae_tui.store.database import RunStore

    docker = await connect()
    try:
        first = await _kill_9_in_agent_phase(docker, tmp_path)
        store = RunStore(tmp_path / "runs.db")
        [row] = store.runs()
        assert row.status == "running"  # what `icae runs` showed forever before
        out = subprocess.run(
            [sys.executable, "-m", "icae_tui", "--home", str(tmp_path), "reap"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "marked 1 run(s) interrupted" in out.stdout
        [row] = store.runs()
        assert row.status == "interrupted" and row.finished_at is not None
        assert store.events(row.run_id)[-1].status == "interrupted"
        assert not list(Path(tempfile.gettempdir()).glob(f"icae-ask-{first}-*"))

        second = await _kill_9_in_agent_phase(docker, tmp_path)
        # The next start in this store closes it, even a start that then fails at once.
        task = fixture_catalog.tasks["mini"]
        await Run(RunConfig(task=task, agent="scripted:nonexistent"), store).execute()
        statuses = {r.run_id: r.status for r in store.runs()}
        assert sorted(statuses.values()) == ["failed", "interrupted", "interrupted"]
        assert not list(Path(tempfile.gettempdir()).glob(f"icae-ask-{second}-*"))
        store.close()
        await reap(docker)  # the killed runs' containers
    finally:
        await docker.close()
