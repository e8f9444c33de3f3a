"""The host's content-addressed package cache: every body the gateway served, by SHA-256.

`blobs/<sha[:2]>/<sha>` holds the bytes, written once (to a temporary file, then renamed);
`refs/<h[:2]>/<h>.json` maps a request key (ecosystem, kind, path) to the blob that answered
it last. Artifacts never change upstream, so their ref is kept; metadata refs are replaced
by each live fetch, and a run's own manifest (the keys and blobs it was served) pins them
for a later `--packages cache` run of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path

from icae_tui.store.database import default_home

CACHE_ENV = "ICAE_PACKAGE_CACHE"


def default_cache_dir() -> Path:
    if given := os.environ.get(CACHE_ENV):
        return Path(given)
    return default_home() / "packages"


class TooLarge(Exception):
    """A body past the size bound: nothing was kept."""


@dataclass(frozen=True)
class Ref:
    key: str
    sha256: str
    size: int
    content_type: str = "application/octet-stream"
    # a metadata document's file base when fetched (its file URLs are under it): a later
    # run in cache mode maps them to its own paths, whatever registries it is configured with
    origin: str = ""


class PackageCache:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_cache_dir()

    def blob_path(self, sha256: str) -> Path:
        return self.root / "blobs" / sha256[:2] / sha256

    def _ref_path(self, key: str) -> Path:
        h = hashlib.sha256(key.encode()).hexdigest()
        return self.root / "refs" / h[:2] / f"{h}.json"

    def ref(self, key: str) -> Ref | None:
        """The ref of `key`, when its blob is still here whole (by size)."""
        try:
            data = json.loads(self._ref_path(key).read_text(encoding="utf-8"))
            ref = Ref(**data)
        except (OSError, ValueError, TypeError):
            return None
        return ref if ref.key == key and self.has_blob(ref.sha256, ref.size) else None

    def has_blob(self, sha256: str, size: int) -> bool:
        try:
            return self.blob_path(sha256).stat().st_size == size
        except OSError:
            return False

    def put_ref(self, ref: Ref) -> None:
        path = self._ref_path(ref.key)
        _atomic_write(path, json.dumps(asdict(ref)).encode())

    def put_bytes(self, key: str, body: bytes, content_type: str, origin: str = "") -> Ref:
        sha = hashlib.sha256(body).hexdigest()
        if not self.has_blob(sha, len(body)):
            _atomic_write(self.blob_path(sha), body)
        ref = Ref(key, sha, len(body), content_type, origin)
        self.put_ref(ref)
        return ref

    async def put_stream(
        self, key: str, chunks: AsyncIterator[bytes], content_type: str, *, max_bytes: int
    ) -> Ref:
        """Write a streamed body to its blob (hashing as it comes); TooLarge past max_bytes."""
        tmp_dir = self.root / "tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        h, size = hashlib.sha256(), 0
        fd, tmp = tempfile.mkstemp(dir=tmp_dir)
        try:
            with os.fdopen(fd, "wb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > max_bytes:
                        raise TooLarge(f"more than {max_bytes} bytes")
                    h.update(chunk)
                    out.write(chunk)
            sha = h.hexdigest()
            final = self.blob_path(sha)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        ref = Ref(key, sha, size, content_type)
        self.put_ref(ref)
        return ref


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
