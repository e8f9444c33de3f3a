"""The per-run socket folders (clarification channel, model and package gateways) that dead runs left
in the temp directory: found by their prefix and owner pid, removed only when they are
ours and their owner is gone. Outside the sandbox: the sandbox knows nothing of the
channels a run puts in its boxes."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from icae_tui.gateway import server as model_gateway
from icae_tui.packages import server as package_gateway
from icae_tui.users import ask_server
from icae_tui.util.owners import owner_gone

# Per-run socket folders in the temp directory: `<prefix><owner pid>-…`, holding one socket.
SOCKET_FOLDERS = (
    (ask_server.FOLDER_PREFIX, ask_server.SOCKET_NAME),
    (model_gateway.FOLDER_PREFIX, model_gateway.SOCKET_NAME),
    (package_gateway.FOLDER_PREFIX, package_gateway.SOCKET_NAME),
)


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
