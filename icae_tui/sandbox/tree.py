"""A box's folder as a bounded listing, read without running anything in the box.

`Box.read_tree` gives a `TreeRead`: every entry's relative path, type and size, and the first
`file_bytes` of the files the caller wants (`wanted(path)`), within bounds (entries, bytes
streamed, bytes kept): a hostile delivery with a million files or a huge one gets a listing
that says it was cut (`complete` False), never an exhausted host. Links are listed, never
followed.

`TarScanner` reads an engine's tar stream (the docker backend's archive of the folder)
chunk by chunk, keeping only what is asked; `walk_folder` reads a host folder (the
processes backend).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

EntryKind = Literal["file", "dir", "link", "other"]
BLOCK = 512
MAX_META = 64 * 1024  # a pax or GNU long-name record longer than this is no name of ours


@dataclass(frozen=True)
class TreeEntry:
    path: str  # relative to the folder read, "/"-separated
    kind: EntryKind
    size: int = 0
    head: bytes | None = None  # a wanted file's first bytes
    cut: bool = False  # the file is longer than what `head` holds


@dataclass
class TreeRead:
    entries: list[TreeEntry] = field(default_factory=list)
    complete: bool = True  # False: a bound (or a malformed stream) cut the listing
    why_cut: str = ""


@dataclass(frozen=True)
class TreeBounds:
    max_entries: int = 20_000
    max_stream_bytes: int = 512 * 1024**2  # of the engine's archive
    file_bytes: int = 256 * 1024  # kept of each wanted file
    kept_bytes: int = 16 * 1024**2  # kept of all of them
    timeout_s: float = 60.0


def _pax_records(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            break
        if length <= 0:
            break
        record = data[space + 1 : pos + length].rstrip(b"\n")
        key, _, value = record.partition(b"=")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


class TarScanner:
    """Feed it a tar stream in chunks (`feed`, False once it wants no more); `finish` gives
    the listing. Names are taken relative to the archive's top folder (the one read)."""

    def __init__(self, bounds: TreeBounds, wanted: Callable[[str], bool]) -> None:
        self.bounds = bounds
        self.wanted = wanted
        self.read = TreeRead()
        self._buf = bytearray()
        self._kept = 0
        self._ended = False
        # the member being read: its data left to take, kept so far, and what it is
        self._left = 0
        self._pad = 0
        self._member: tuple[str, EntryKind, int] | None = None
        self._head: bytearray | None = None
        self._meta: tuple[str, bytearray] | None = None  # a pax / long-name record's data
        self._pending: dict[str, str] = {}

    def cut(self, why: str) -> bool:
        self.read.complete = False
        self.read.why_cut = self.read.why_cut or why
        self._ended = True
        return False

    def feed(self, chunk: bytes) -> bool:
        if self._ended:
            return False
        self._buf += chunk
        while not self._ended:
            if self._left or self._pad:
                if not self._take_data():
                    return not self._ended
                continue
            if len(self._buf) < BLOCK:
                return True
            block = bytes(self._buf[:BLOCK])
            del self._buf[:BLOCK]
            if block == b"\0" * BLOCK:
                self._ended = True
                return False
            self._header(block)
        return False

    def _take_data(self) -> bool:
        """Consume the current member's data; False when the buffer ran dry."""
        if self._left:
            take = min(self._left, len(self._buf))
            if take == 0:
                return False
            data = bytes(self._buf[:take])
            del self._buf[:take]
            self._left -= take
            if self._meta is not None:
                self._meta[1].extend(data)
            elif self._head is not None:
                room = self.bounds.file_bytes - len(self._head)
                self._head += data[: max(0, room)]
            if self._left == 0:
                self._end_member()
        if self._pad:
            take = min(self._pad, len(self._buf))
            if take == 0:
                return False
            del self._buf[:take]
            self._pad -= take
        return True

    def _header(self, block: bytes) -> None:
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.TarError as err:
            self.cut(f"not a tar stream ({err})")
            return
        size = max(0, info.size)
        self._left, self._pad = size, (-size) % BLOCK
        if info.type in (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.XGLTYPE):
            if size > MAX_META:
                self.cut("an oversized tar record")
                return
            self._meta = (info.type.decode(), bytearray())
            if size == 0:
                self._end_member()
            return
        name = self._pending.pop("path", info.name)
        if "size" in self._pending:
            with contextlib.suppress(ValueError):
                size = int(self._pending.pop("size"))
            self._left, self._pad = size, (-size) % BLOCK
        self._pending.clear()
        rel = name.strip("/").partition("/")[2].rstrip("/")  # under the top folder
        kind: EntryKind = (
            "file" if info.isreg() else "dir" if info.isdir()
            else "link" if info.issym() or info.islnk() else "other"
        )  # fmt: skip
        if not rel:  # the top folder itself
            self._member = None
        elif len(self.read.entries) >= self.bounds.max_entries:
            self.cut(f"more than {self.bounds.max_entries} entries")
            return
        else:
            self._member = (rel, kind, size if kind == "file" else 0)
            keep = kind == "file" and self._kept < self.bounds.kept_bytes and self.wanted(rel)
            self._head = bytearray() if keep else None
        if self._left == 0:
            self._end_member()

    def _end_member(self) -> None:
        if self._meta is not None:
            kind, data = self._meta
            self._meta = None
            if kind == tarfile.XHDTYPE.decode():
                self._pending.update(_pax_records(bytes(data)))
            elif kind == tarfile.GNUTYPE_LONGNAME.decode():
                self._pending["path"] = bytes(data).rstrip(b"\0").decode("utf-8", "surrogateescape")
            return
        if self._member is None:
            return
        rel, kind, size = self._member
        head = bytes(self._head) if self._head is not None else None
        if head is not None:
            self._kept += len(head)
        self.read.entries.append(
            TreeEntry(rel, kind, size, head, cut=head is not None and len(head) < size)
        )
        self._member, self._head = None, None

    def finish(self) -> TreeRead:
        if not self._ended and (self._left or self._buf or self._member):
            self.cut("the archive ended early")
        return self.read


def walk_folder(root: Path, bounds: TreeBounds, wanted: Callable[[str], bool]) -> TreeRead:
    """A host folder as a `TreeRead`: links listed, never followed."""
    read = TreeRead()
    kept = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                found = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in found:
            if len(read.entries) >= bounds.max_entries:
                read.complete, read.why_cut = False, f"more than {bounds.max_entries} entries"
                return read
            rel = Path(entry.path).relative_to(root).as_posix()
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                read.entries.append(TreeEntry(rel, "link"))
            elif stat.S_ISDIR(st.st_mode):
                read.entries.append(TreeEntry(rel, "dir"))
                stack.append(Path(entry.path))
            elif stat.S_ISREG(st.st_mode):
                head = None
                if kept < bounds.kept_bytes and wanted(rel):
                    try:
                        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
                        with os.fdopen(fd, "rb") as handle:
                            head = handle.read(bounds.file_bytes)
                    except OSError:
                        head = None
                    kept += len(head or b"")
                cut = head is not None and len(head) < st.st_size
                read.entries.append(TreeEntry(rel, "file", st.st_size, head, cut))
            else:
                read.entries.append(TreeEntry(rel, "other"))
    return read
