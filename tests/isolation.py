"""What a test session owns, so that it can run beside another (xdist workers, or another
checkout's run on the same engine) and be checked for leftovers at its end.

The session's controller (or its only process) makes a folder (ICAE_TEST_SESSION_DIR, inherited
by the xdist workers it starts); every test process writes its own pid there, and the pid of
each process it starts (`subprocess.Popen`, which asyncio's subprocesses use too). What the
icae code creates carries its owner's pid (the `icae.owner-pid` label, the `<prefix><pid>-`
temporary folders), the tool images of tests/integration/tool_images.py a `-t<pid>` tag: so
the end-of-session check (`leftovers`) looks only at what these processes made, never at
another run's objects on the same engine. Not seen: what a grandchild process made (a Ray
worker, say) unless it is removed with its run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SESSION_ENV = "ICAE_TEST_SESSION_DIR"
PIDS_FILE = "pids"
# Temporary folders named after their owner's pid: icae_tui's channel folders (gateway, ask,
# packages, cluster node) and the test helpers' second engines and Ray clusters.
FOLDER = re.compile(r"^icae-(?:ask|model|pkg|node|engine2|ray)-(\d+)-")
TOOL_IMAGE_TAG = re.compile(r"^icae-test-[^:]+:.*-t(\d+)$")

_before: dict[str, set[str]] = {}
_popen_init = subprocess.Popen.__init__


def is_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def session_dir() -> Path:
    return Path(os.environ[SESSION_ENV])


def _record(pid: int) -> None:
    with contextlib.suppress(OSError, KeyError), open(session_dir() / PIDS_FILE, "a") as f:
        f.write(f"{pid}\n")


def _recording_init(self: subprocess.Popen, *args: object, **kwargs: object) -> None:
    _popen_init(self, *args, **kwargs)  # type: ignore[arg-type]
    argv = args[0] if args else kwargs.get("args")
    # Python processes only (`icae`, helpers, Ray): what makes containers and folders. Not the
    # thousands of `docker`/`ip` calls, whose pids, reused later by another run's processes
    # (pid_max may be 32768), would make its objects look ours.
    if "python" in str(argv) or "icae" in str(argv) or "ray" in str(argv):
        _record(self.pid)


def start() -> None:
    """At conftest import: the session folder (made by the controller), this process's pid,
    and the recording of the processes it starts."""
    if not is_worker() or SESSION_ENV not in os.environ:
        os.environ[SESSION_ENV] = tempfile.mkdtemp(prefix="icae-test-session-")
    _record(os.getpid())
    if subprocess.Popen.__init__ is not _recording_init:
        subprocess.Popen.__init__ = _recording_init  # type: ignore[method-assign]


def finish() -> None:
    shutil.rmtree(session_dir(), ignore_errors=True)


def _pids() -> set[str]:
    try:
        return set((session_dir() / PIDS_FILE).read_text().split())
    except OSError:
        return set()


def _folders() -> dict[str, str]:
    """Temporary folders named after an owner pid: name → pid."""
    found = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(tempfile.gettempdir()):
            m = FOLDER.match(entry.name)
            if m:
                found[entry.name] = m.group(1)
    return found


async def _engine_objects() -> dict[str, dict[str, str]] | None:
    """The engine's labelled containers, images and volumes: kind → "what" → owner pid
    (None without an engine)."""
    import aiodocker

    host = socket.gethostname()
    try:
        docker = aiodocker.Docker()
    except Exception:
        return None
    out: dict[str, dict[str, str]] = {"container": {}, "image": {}, "volume": {}}

    def owner(labels: dict[str, str] | None) -> str | None:
        labels = labels or {}
        if labels.get("icae.owner-host", host) != host:
            return None
        return labels.get("icae.owner-pid")

    try:
        label = '{"label": ["icae.tool=icae-tui"]}'
        for c in await docker.containers.list(all=True, filters=label):
            pid = owner(c["Labels"])
            if pid:
                name = (c["Names"] or ["?"])[0].lstrip("/")
                run = (c["Labels"] or {}).get("icae.run", "?")
                out["container"][f"container {c.id[:12]} {name} (run {run})"] = pid
        for image in await docker.images.list(filters={"label": ["icae.tool=icae-tui"]}):
            tags = image.get("RepoTags") or []
            what = f"image {image['Id'][7:19]} {' '.join(tags)}".rstrip()
            pid = owner(image.get("Labels"))
            for tag in tags:
                m = TOOL_IMAGE_TAG.match(tag)
                pid = m.group(1) if m else pid
            if pid:
                out["image"][what] = pid
        volumes = (await docker.volumes.list()).get("Volumes") or []
        for v in volumes:
            pid = owner(v.get("Labels"))
            if pid and (v.get("Labels") or {}).get("icae.tool") == "icae-tui":
                out["volume"][f"volume {v['Name']}"] = pid
    except Exception:
        return None
    finally:
        await docker.close()
    return out


def _everything() -> dict[str, str]:
    """What → owner pid, of every kind."""
    found = {f"temporary folder {tempfile.gettempdir()}/{n}": pid for n, pid in _folders().items()}
    engine = asyncio.run(_engine_objects())
    for kind in (engine or {}).values():
        found.update(kind)
    return found


def snapshot() -> None:
    """At session start (controller): what is there already, whoever's (a recycled pid must
    not make another run's object ours)."""
    if is_worker():
        return
    _before["all"] = set(_everything())


def leftovers() -> list[str]:
    """What the session's processes created and is still there."""
    ours = _pids()
    before = _before.get("all", set())
    return sorted(w for w, pid in _everything().items() if pid in ours and w not in before)
