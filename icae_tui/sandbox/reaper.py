"""Remove what crashed or expired runs left behind — and only that.

A container or image is ours when it carries `icae.tool=icae-tui` (never judged by name).
It is dead when its owner process (same host) is gone, or expired when `icae.expires` has
passed. Anything of a live owner, or of another host whose owner we cannot check, is kept
until it expires.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiodocker

from icae_tui.gateway import server as model_gateway
from icae_tui.owners import owner_gone, process_alive
from icae_tui.sandbox.engine import LABEL_TOOL, TOOL_NAME
from icae_tui.users import ask_server

# Per-run socket folders in the temp directory: `<prefix><owner pid>-…`, holding one socket.
SOCKET_FOLDERS = (
    (ask_server.FOLDER_PREFIX, ask_server.SOCKET_NAME),
    (model_gateway.FOLDER_PREFIX, model_gateway.SOCKET_NAME),
)

LABEL_OWNER_PID = "icae.owner-pid"
LABEL_OWNER_HOST = "icae.owner-host"
LABEL_EXPIRES = "icae.expires"


@dataclass
class ReapReport:
    containers: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    kept: int = 0


def is_dead(labels: dict[str, str], *, now: float | None = None) -> bool:
    now = time.time() if now is None else now
    with contextlib.suppress(ValueError):
        if float(labels.get(LABEL_EXPIRES, "inf")) < now:
            return True
    if labels.get(LABEL_OWNER_HOST, socket.gethostname()) != socket.gethostname():
        return False  # another machine's process: only its expiry can tell
    pid = labels.get(LABEL_OWNER_PID)
    if pid is None or not pid.isdigit():
        return False
    return pid != str(os.getpid()) and not process_alive(int(pid))


async def reap(docker: aiodocker.Docker, *, everything_dead: bool = True) -> ReapReport:
    report = ReapReport()
    filters = json.dumps({"label": [f"{LABEL_TOOL}={TOOL_NAME}"]})
    for c in await docker.containers.list(all=True, filters=filters):
        labels = c["Labels"] or {}  # the summary list() gives; we filtered on a label
        if everything_dead and is_dead(labels):
            with contextlib.suppress(aiodocker.DockerError):
                await c.delete(force=True, v=True)
                report.containers.append(c.id[:12])
        else:
            report.kept += 1
    # Only per-run images (deliveries) carry an owner; task images are a cache and stay.
    for image in await docker.images.list(filters={"label": ["icae.role=delivery"]}):
        labels = image.get("Labels") or {}
        if labels.get(LABEL_TOOL) == TOOL_NAME and is_dead(labels):
            with contextlib.suppress(aiodocker.DockerError):
                await docker.images.delete(image["Id"], force=True)
                report.images.append(image["Id"][7:19])
    return report


def _socket_answers(path: Path) -> bool:
    """Whether a server still listens on the Unix socket (a folder of a live run)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def reap_ask_folders(tmp: Path | None = None) -> list[str]:
    """Remove the socket folders (clarification channel, model gateway) that dead runs
    left in the temp directory.

    `icae-ask-<pid>-…`: removed when that pid is gone on this host. Folders from before the
    pid was in the name: removed when nothing listens on their socket. Only our own folders
    (a directory, owned by us, holding nothing but the socket) are ever touched.
    """
    tmp = tmp or Path(tempfile.gettempdir())
    removed = []
    for prefix, socket_name in SOCKET_FOLDERS:
        removed += _reap_folders(tmp, prefix, socket_name)
    return removed


def _reap_folders(tmp: Path, prefix: str, socket_name: str) -> list[str]:
    removed = []
    for folder in tmp.glob(prefix + "*"):
        try:
            st = os.lstat(folder)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        try:
            contents = os.listdir(folder)
        except OSError:
            continue
        if set(contents) - {socket_name}:
            continue  # not a folder of ours as we make them: leave it
        owner, sep, _ = folder.name[len(prefix) :].partition("-")
        if sep and owner.isdigit():
            orphaned = owner_gone(int(owner), None)
        else:
            orphaned = not _socket_answers(folder / socket_name)
        if orphaned:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


async def remove_run_containers(docker: aiodocker.Docker, run_id: str) -> list[str]:
    """Every container labelled with this run, whatever its state: the run's last word on
    cleanup, after its own removals, so a race with a cancel cannot leave one behind."""
    filters = json.dumps({"label": [f"{LABEL_TOOL}={TOOL_NAME}", f"icae.run={run_id}"]})
    removed = []
    for c in await docker.containers.list(all=True, filters=filters):
        with contextlib.suppress(aiodocker.DockerError):
            await c.delete(force=True, v=True)
            removed.append(c.id[:12])
    return removed
