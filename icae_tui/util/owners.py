"""Who owns a run's leftovers: a process on a host. Shared by the reaper and the store.

A thing is orphaned when its owner process, on this host, is gone. Another host's owner
cannot be checked from here, so its things are never called orphaned by this rule.
"""

from __future__ import annotations

import os
import socket


def this_host() -> str:
    return socket.gethostname()


def process_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def owner_gone(pid: int | None, host: str | None) -> bool:
    """True only when the owner is known to be dead: same host, and no such process."""
    if host is not None and host != this_host():
        return False
    if pid is None:
        return False
    return pid != os.getpid() and not process_alive(pid)
