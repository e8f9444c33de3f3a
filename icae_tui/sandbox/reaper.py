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
from dataclasses import dataclass, field

import aiodocker

from icae_tui.sandbox.engine import LABEL_TOOL, TOOL_NAME

LABEL_OWNER_PID = "icae.owner-pid"
LABEL_OWNER_HOST = "icae.owner-host"
LABEL_EXPIRES = "icae.expires"


@dataclass
class ReapReport:
    containers: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    kept: int = 0


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    return pid != str(os.getpid()) and not _pid_alive(int(pid))


async def reap(docker: aiodocker.Docker, *, everything_dead: bool = True) -> ReapReport:
    report = ReapReport()
    filters = json.dumps({"label": [f"{LABEL_TOOL}={TOOL_NAME}"]})
    for c in await docker.containers.list(all=True, filters=filters):
        labels = c._container.get("Labels") or {}  # noqa: SLF001 - list() gives the summary here
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
