"""Host-side reads of container layers, on folders made here (no engine).

The layers are the agent's: every link in them is planted. A lookup in the image layers
follows overlayfs (whiteouts, opaque directories, a non-directory hides what is below it)
and never a link; a lookup inside a container's root never leaves it; hashing is capped.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import sys
from pathlib import Path

import pytest

from icae_tui.sandbox.docker import hostview
from icae_tui.sandbox.docker.hostview import HASH_CAP, HostView, open_in_root, walk_tree
from icae_tui.sandbox.docker.keepalive import is_static_elf
from icae_tui.sandbox.docker.sidefx import layer_diff

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="whiteouts and trusted xattrs need root")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _view(*lowers: Path) -> HostView:
    """Image layers top first, as overlay2's LowerDir lists them."""
    return HostView(
        container_id="test", upper=lowers[0], lowers=lowers, shm=None,
        pids_current=None, pids_events=None, oom_control=None,
    )  # fmt: skip


def _written(path: str, data: bytes) -> dict[str, tuple[str, int, int, str, str]]:
    """The writable layer after a case wrote `data` at `path`."""
    return {path: ("file", 0o644, len(data), _sha(data), "")}


def _kind(view: HostView, path: str, data: bytes = b"S\n") -> str | None:
    diff = layer_diff(view, {}, _written(path, data))
    return diff[path][0] if path in diff else None


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    """A host file the planted links point at."""
    secret = tmp_path / "host" / "secret"
    secret.parent.mkdir()
    secret.write_bytes(b"S\n")
    return secret


@pytest.mark.parametrize("target", ["/", "../" * 20 + ".."], ids=["absolute", "relative"])
def test_a_link_in_the_image_is_never_followed_on_the_host(tmp_path, host_file, target):
    layer = tmp_path / "layer"
    (layer / "opt").mkdir(parents=True)
    os.symlink(target, layer / "opt" / "hostroot")
    view = _view(layer)
    path = f"/opt/hostroot{host_file}"  # the case replaced the link by a directory
    # The same content as the host file: still a change, and an addition — the image has
    # no such path (in the container the link led elsewhere in the container).
    assert _kind(view, path) == "added"
    assert _kind(view, path, b"other\n") == "added"
    assert not view.in_lower(path)
    assert view.lower_entry("/opt/hostroot") == ("link", 0o777, 0, "", target)


@root_only
def test_a_whiteout_hides_the_layers_below(tmp_path):
    top, below = tmp_path / "top", tmp_path / "below"
    (top / "opt").mkdir(parents=True)
    (below / "opt").mkdir(parents=True)
    (below / "opt" / "f").write_bytes(b"old\n")
    os.mknod(top / "opt" / "f", stat.S_IFCHR | 0o600, os.makedev(0, 0))
    view = _view(top, below)
    assert _kind(view, "/opt/f") == "added"
    assert not view.in_lower("/opt/f")


@root_only
def test_an_opaque_directory_hides_the_directories_below(tmp_path):
    top, below = tmp_path / "top", tmp_path / "below"
    (top / "opt" / "d").mkdir(parents=True)
    (top / "opt" / "m").mkdir(parents=True)
    for d in ("d", "m"):
        (below / "opt" / d).mkdir(parents=True)
        (below / "opt" / d / "f").write_bytes(b"S\n")
    os.setxattr(top / "opt" / "d", "trusted.overlay.opaque", b"y")
    view = _view(top, below)
    assert _kind(view, "/opt/d/f", b"new\n") == "added"
    assert _kind(view, "/opt/m/f", b"new\n") == "modified"  # merged: the file shows through
    assert _kind(view, "/opt/m/f") is None  # same content and mode: no change


def test_a_file_hides_a_directory_below_it(tmp_path):
    top, below = tmp_path / "top", tmp_path / "below"
    (top / "opt").mkdir(parents=True)
    (top / "opt" / "x").write_bytes(b"a file\n")
    (below / "opt" / "x").mkdir(parents=True)
    (below / "opt" / "x" / "y").write_bytes(b"S\n")
    assert _kind(_view(top, below), "/opt/x/y") == "added"


def test_a_big_file_is_hashed_up_to_the_cap(tmp_path):
    big = tmp_path / "tree" / "big"
    big.parent.mkdir()
    size = HASH_CAP + 80 * 1024 * 1024
    with open(big, "wb") as f:
        f.write(b"head")
        f.truncate(size)  # sparse: no disk
    entry = walk_tree(big.parent, "/")["/big"]
    prefix = b"head" + bytes(HASH_CAP - 4)
    assert entry == ("file", 0o644, size, f"{_sha(prefix)}:first{HASH_CAP}of{size}", "")


def test_past_the_walk_budget_files_are_named_by_size(tmp_path, monkeypatch):
    monkeypatch.setattr(hostview, "WALK_HASH_BUDGET", 10)
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(b"1234")
    digests = [e[3] for _, e in sorted(walk_tree(tmp_path, "/").items())]
    assert digests == [_sha(b"1234"), _sha(b"1234"), "unhashed:4"]


def test_a_walk_lists_links_and_never_enters_them(tmp_path, host_file):
    (tmp_path / "tree").mkdir()
    os.symlink("/", tmp_path / "tree" / "abs")
    os.symlink(str(host_file.parent), tmp_path / "tree" / "dir")
    tree = walk_tree(tmp_path / "tree", "/w")
    assert tree == {
        "/w/abs": ("link", 0o777, 0, "", "/"),
        "/w/dir": ("link", 0o777, 0, "", str(host_file.parent)),
    }


def test_a_lookup_in_a_container_root_never_leaves_it(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    inner = root / str(outside).lstrip("/")  # the same path, inside the root
    inner.mkdir(parents=True)
    os.symlink(str(outside), root / "abs")  # absolute: to the root's copy, not the host's
    os.symlink("../" * 20 + str(outside).lstrip("/"), root / "rel")
    os.symlink("abs", root / "chain")
    rfd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    try:
        for name in ("abs", "rel", "chain", "abs/../outside"):
            fd = open_in_root(rfd, name)
            try:
                st = os.fstat(fd)
                assert (st.st_dev, st.st_ino) == (inner.stat().st_dev, inner.stat().st_ino), name
            finally:
                os.close(fd)
        os.symlink("loop", root / "loop")
        with pytest.raises(OSError):
            open_in_root(rfd, "loop")
    finally:
        os.close(rfd)


def _elf(tmp_path: Path, segment_types: list[int]) -> str:
    """A 64-bit little-endian ELF header with one program header per segment type."""
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", head, 32, 64)  # e_phoff
    struct.pack_into("<HH", head, 54, 56, len(segment_types))  # e_phentsize, e_phnum
    table = b"".join(struct.pack("<I", t) + bytes(52) for t in segment_types)
    path = tmp_path / f"elf-{'-'.join(map(str, segment_types))}"
    path.write_bytes(bytes(head) + table)
    return str(path)


def test_only_static_binaries_can_be_the_keepalive(tmp_path):
    PT_LOAD, PT_INTERP = 1, 3
    assert is_static_elf(_elf(tmp_path, [PT_LOAD, PT_LOAD]))
    assert not is_static_elf(_elf(tmp_path, [PT_LOAD, PT_INTERP, PT_LOAD]))  # needs a loader
    assert not is_static_elf(sys.executable)  # the image's loader would run it
    assert not is_static_elf(__file__)
