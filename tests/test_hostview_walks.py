"""Walks with no depth limit, bounded by what they record; names compared as the bytes they are.

On folders made here (no engine). A case can nest directories as deep as it likes and name
files with any bytes: a walk must see a file 150 levels down, hold few descriptors however
deep it goes, say so when it stops early, and two different names must never be stored,
digested or compared as the same text.
"""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from icae_tui.sandbox.docker import hostview
from icae_tui.sandbox.docker.hostview import HostView, open_in_root, walk_tree
from icae_tui.sandbox.effects import to_file_changes

RAW = b"bad\xff"  # a name that is not UTF-8
LITERAL = b"bad\\xff"  # the seven characters b, a, d, \, x, f, f


def _chain(root: Path, depth: int, *, leaf: bytes = b"f") -> None:
    """`depth` nested directories `d` under `root`, a file `leaf` in the deepest. Made one
    level at a time: the whole path is longer than a path may be."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
        os.close(os.open(leaf, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def _unchain(root: Path) -> None:
    """Undo `_chain` a level at a time from the top (pytest's cleanup would recurse)."""
    while (root / "d" / "d").is_dir():
        os.rename(root / "d" / "d", root / "dd")
        os.rmdir(root / "d")
        os.rename(root / "dd", root / "d")


@contextmanager
def _few_descriptors(spare: int = 24) -> Iterator[None]:
    """At most `spare` descriptors more than are open now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + spare, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_file_150_levels_down_is_seen(tmp_path):
    _chain(tmp_path, 150)
    tree = walk_tree(tmp_path, "/w")
    deep = "/w" + "/d" * 150 + "/f"
    assert tree[deep] == ("file", 0o644, 0, hostview.hashlib.sha256(b"").hexdigest(), "")
    assert len(tree) == 151
    assert not [p for p in tree if "<" in p]  # not cut


def test_a_deep_walk_holds_few_descriptors(tmp_path):
    _chain(tmp_path, 2000)
    try:
        with _few_descriptors():
            tree = walk_tree(tmp_path, "")
    finally:
        _unchain(tmp_path)
    assert "/d" * 2000 + "/f" in tree
    assert len(tree) == 2001


def _wide_tree(root: Path) -> None:
    for name in ("a", "b"):
        (root / name).write_text(name)
    (root / "c").mkdir()
    for i in range(10):
        (root / "c" / f"f{i}").write_text("x")
    (root / "z").mkdir()


def test_past_the_entry_bound_the_walk_says_it_was_cut(tmp_path, monkeypatch):
    _wide_tree(tmp_path)
    monkeypatch.setattr(hostview, "MAX_ENTRIES", 6)
    tree = walk_tree(tmp_path, "/w")
    # The root's four names fit, c's ten do not: the walk stops when it lists c (depth first,
    # in name order, so before it enters z), the same way each time.
    assert sorted(tree) == ["/w/<walk cut at 3 entries>", "/w/a", "/w/b", "/w/c"]
    assert tree["/w/<walk cut at 3 entries>"] == ("other", 0, 0, "walk cut at 3 entries", "")
    assert walk_tree(tmp_path, "/w") == tree
    monkeypatch.setattr(hostview, "MAX_ENTRIES", 14)
    assert not [p for p in walk_tree(tmp_path, "/w") if "<" in p]  # everything fits


def test_past_the_path_bound_the_walk_says_it_was_cut(tmp_path, monkeypatch):
    _chain(tmp_path, 40)
    # "/d" * k has 2k characters: the first 20 levels take 2 + 4 + … + 40 = 420
    monkeypatch.setattr(hostview, "MAX_PATH_CHARS", 420)
    tree = walk_tree(tmp_path, "")
    assert max(len(p) for p in tree if "<" not in p) == 40
    assert tree["/<walk cut at 20 entries>"][3] == "walk cut at 20 entries"
    assert walk_tree(tmp_path, "") == tree


def test_a_directory_moved_while_walked_cuts_the_walk(tmp_path, monkeypatch):
    """Going back up through `..` lands where the directory is now: if that is not the
    directory it was entered from, the walk stops there and says so."""
    (tmp_path / "p" / "q" / "r").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    listed = hostview._Walk._list

    def list_then_move(self, dfd, base):  # noqa: ANN001, ANN202
        todo = listed(self, dfd, base)
        if base == "/w/p/q":
            os.rename(tmp_path / "p" / "q", tmp_path / "elsewhere" / "q")
        return todo

    monkeypatch.setattr(hostview._Walk, "_list", list_then_move)
    open_before = len(os.listdir("/proc/self/fd"))
    tree = walk_tree(tmp_path, "/w")
    assert tree["/w/<walk cut: a directory moved>"][3] == "walk cut: a directory moved"
    assert "/w/p/q/r" in tree
    assert len(os.listdir("/proc/self/fd")) == open_before  # nothing left open


def _create(folder: Path, name: bytes, *, link: bool = False) -> None:
    folder.mkdir(exist_ok=True)
    path = os.fsencode(folder) + b"/" + name
    if link:
        os.symlink(name, os.fsencode(folder) + b"/link")
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _changes(folder: Path, ignore: tuple[str, ...] = ()):  # noqa: ANN202
    """The folder's entries as a case's additions in the work directory /data."""
    diff = {p: ("added", e) for p, e in walk_tree(folder, "/data").items()}
    return to_file_changes(diff, workdir="/data", ignore=ignore)


def test_a_raw_byte_and_its_escape_written_out_are_different_names(tmp_path):
    _create(tmp_path / "raw", RAW)
    _create(tmp_path / "literal", LITERAL)
    raw, literal = _changes(tmp_path / "raw"), _changes(tmp_path / "literal")
    assert [c.path for c in raw] == ["bad\\xff"]
    assert [c.path for c in literal] == ["bad\\\\xff"]
    assert raw.sha256 != literal.sha256
    # ignore globs match the raw name: `*` spans the byte, a glob's `\` is a real one
    assert list(_changes(tmp_path / "raw", ("/data/bad*",))) == []
    assert list(_changes(tmp_path / "literal", ("/data/bad\\*",))) == []
    assert list(_changes(tmp_path / "raw", ("/data/bad\\*",))) == list(raw)


def test_link_targets_are_told_apart_the_same_way(tmp_path):
    _create(tmp_path / "raw", RAW, link=True)
    _create(tmp_path / "literal", LITERAL, link=True)
    raw, literal = _changes(tmp_path / "raw"), _changes(tmp_path / "literal")
    assert [(c.path, c.target) for c in raw] == [("link", "bad\\xff")]
    assert [(c.path, c.target) for c in literal] == [("link", "bad\\\\xff")]
    assert raw.sha256 != literal.sha256


def _unescape(text: str) -> bytes:
    """The inverse of the stored form: `\\\\` is a backslash, `\\xNN` a byte, `\\uNNNN` a
    character."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode()
            i += 1
        elif text[i + 1] == "\\":
            out += b"\\"
            i += 2
        elif text[i + 1] == "u":
            out += chr(int(text[i + 2 : i + 6], 16)).encode()
            i += 6
        else:
            assert text[i + 1] == "x", text
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
    return bytes(out)


NAMES = [
    b"back\\slash", b"\\", b"end\\", b"\\\\xff\xfe", b"caf\xc3\xa9\\x\xc3", LITERAL,
    b"new\nline", b"tab\t\x7f", b"\xc2\x85", b"sep\xe2\x80\xa8", b"\\x0a",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_a_stored_name_gives_back_its_bytes(tmp_path, name):
    _create(tmp_path / "f", name)
    (change,) = _changes(tmp_path / "f")
    assert _unescape(change.path) == name
    assert change.path.isprintable()  # one line, nothing a terminal acts on


def test_different_names_are_stored_differently(tmp_path):
    names = (*NAMES, RAW, b"\x85")  # the byte 0x85, and U+0085 (in NAMES) as UTF-8
    for name in names:
        _create(tmp_path / "all", name)
    paths = [c.path for c in _changes(tmp_path / "all")]
    assert len(set(paths)) == len(names)


def test_a_lookup_in_a_deep_image_holds_few_descriptors(tmp_path):
    top, below = tmp_path / "top", tmp_path / "below"
    for layer in (top, below):
        layer.mkdir()
        _chain(layer, 300, leaf=b"f" if layer is below else b"g")
    view = HostView(
        container_id="test", upper=top, lowers=(top, below), shm=None,
        pids_current=None, pids_events=None, oom_control=None,
    )  # fmt: skip
    with _few_descriptors():
        assert view.lower_entry("/d" * 300 + "/f") is not None  # merged from the layer below
        assert view.in_lower("/d" * 300 + "/g")


def test_a_lookup_through_links_too_deep_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    _chain(root, hostview.MAX_LOOKUP_DEPTH + 1)
    os.symlink("d/" * (hostview.MAX_LOOKUP_DEPTH + 1), root / "deep")
    rfd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as err:
            os.close(open_in_root(rfd, "deep"))
        assert err.value.errno == errno.ENAMETOOLONG
        os.close(open_in_root(rfd, "d/" * hostview.MAX_LOOKUP_DEPTH))
    finally:
        os.close(rfd)
