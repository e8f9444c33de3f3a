"""Folders between the head and its nodes, as tar bytes: a task's folder and the agents files
out to a node, a run's artifacts (agent logs, model calls) back to the head.

Only directories and regular files travel; what comes back is unpacked defensively (no
absolute or `..` names, no links or devices, bounded in size) — a node is trusted, but the
files a run left may have been written by the agent under test.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path, PurePosixPath

from icae_tui.errors import IcaeError

SHIP_LIMIT = 256 * 1024 * 1024  # bytes, either way


class ShippingError(IcaeError):
    """A folder that cannot travel (too big, or an archive that is not what we send)."""


def pack(folder: Path, *, skip: frozenset[str] = frozenset(), limit: int = SHIP_LIMIT) -> bytes:
    """`folder`'s directories and regular files (symbolic links and the rest left out; names
    in `skip` at its top too), as an uncompressed tar."""
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if rel.parts[0] in skip or path.is_symlink():
                continue
            if path.is_file():
                total += path.stat().st_size
                if total > limit:
                    raise ShippingError(f"{folder}: more than {limit} bytes to send")
                tar.add(path, arcname=rel.as_posix(), recursive=False)
            elif path.is_dir():
                tar.add(path, arcname=rel.as_posix(), recursive=False)
    return buffer.getvalue()


def _safe_name(name: str) -> PurePosixPath | None:
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or any(p in ("..", "") for p in path.parts):
        return None
    return path


def unpack(data: bytes, dest: Path, *, limit: int = SHIP_LIMIT) -> list[str]:
    """Write `data`'s directories and regular files under `dest`; what was left out (by name,
    said). A file that would exceed `limit` in total is refused."""
    if len(data) > limit + 1024 * 1024:
        raise ShippingError(f"an archive of {len(data)} bytes for {dest}: over the limit")
    dest.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    total = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            rel = _safe_name(member.name)
            if rel is None or not (member.isfile() or member.isdir()):
                skipped.append(member.name)
                continue
            target = dest.joinpath(*rel.parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            total += member.size
            if total > limit:
                raise ShippingError(f"{dest}: more than {limit} bytes unpacked")
            source = tar.extractfile(member)
            if source is None:
                skipped.append(member.name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with source, open(target, "wb") as out:
                while chunk := source.read(1024 * 1024):
                    out.write(chunk)
    return skipped
