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
import socket
import time

import aiodocker

from icae_tui.sandbox.base import ReapReport
from icae_tui.sandbox.docker.engine import LABEL_TOOL, TOOL_NAME
from icae_tui.util.owners import process_alive

LABEL_OWNER_PID = "icae.owner-pid"
LABEL_OWNER_HOST = "icae.owner-host"
LABEL_EXPIRES = "icae.expires"


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
