"""What the proof of reuse reads beyond names and contents, on this host (no engine).

A process's `settings_of` changes with each thing another process of its uid can change of
it (limits, nice, policy, affinity, OOM score); a walk's `Meta` changes when times or
xattrs do, even when a change is undone; a layer's walk has its root in it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from icae_tui.sandbox.docker.hostview import Meta, settings_of, walk_states, walk_tree


@pytest.fixture
def child() -> Iterator[int]:
    """A process of ours that waits on its stdin, killed at the end."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _set_oom(pid: int) -> None:
    Path(f"/proc/{pid}/oom_score_adj").write_text("777")


def _narrow(pid: int) -> None:
    cpus = os.sched_getaffinity(pid)
    if len(cpus) < 2:
        pytest.skip("one CPU: affinity cannot be narrowed")
    os.sched_setaffinity(pid, {min(cpus)})


CHANGES: dict[str, Callable[[int], None]] = {
    "rlimit": lambda pid: resource.prlimit(
        pid, resource.RLIMIT_CPU, (4242, resource.prlimit(pid, resource.RLIMIT_CPU)[1])
    ),
    "nice": lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 7),
    "policy": lambda pid: os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0)),
    "affinity": _narrow,
    "oom": _set_oom,
}


@pytest.mark.parametrize("what", list(CHANGES))
def test_a_change_to_a_process_changes_its_settings(child: int, what: str) -> None:
    before = settings_of(child)
    assert before is not None and settings_of(child) == before  # stable while untouched
    CHANGES[what](child)
    assert settings_of(child) != before


def test_a_gone_process_has_no_settings(child: int) -> None:
    os.kill(child, 9)
    os.waitpid(child, 0)
    assert settings_of(child) is None


def _meta(root: Path) -> dict[str, Meta]:
    meta: dict[str, Meta] = {}
    walk_states(root, "/x", include_root=True, meta=meta)
    return meta


CLOCK_REALTIME_COARSE = 5  # Linux's; Python's time module does not name it


def _past(path: Path) -> None:
    """Until the kernel's coarse clock, which stamps times where they are not fine-grained,
    has passed `path`'s ctime: a change then has a ctime of its own (a condition, not a
    sleep: the clock ticks every few milliseconds)."""
    ctime = os.stat(path).st_ctime_ns
    while time.clock_gettime_ns(CLOCK_REALTIME_COARSE) <= ctime:
        pass


def test_times_undone_and_xattrs_change_the_meta(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("f")
    base = _meta(tmp_path)
    assert set(base) == {"/x", "/x/f"} and _meta(tmp_path) == base
    st = os.stat(tmp_path / "f")
    _past(tmp_path / "f")
    os.utime(tmp_path / "f", ns=(st.st_atime_ns, st.st_mtime_ns))  # set to what it was
    assert _meta(tmp_path)["/x/f"] != base["/x/f"]  # its ctime says it was touched
    base = _meta(tmp_path)
    _past(tmp_path)
    (tmp_path / "g").write_text("g")
    (tmp_path / "g").unlink()  # a file made and removed leaves its folder's times
    assert _meta(tmp_path)["/x"] != base["/x"]
    try:
        os.setxattr(tmp_path, "user.mark", b"mark")
    except OSError:
        pytest.skip("no user xattrs on this file system")
    base = _meta(tmp_path)
    os.setxattr(tmp_path, "user.mark", b"other")
    assert _meta(tmp_path)["/x"][2] != base["/x"][2]


def test_a_layer_walk_has_its_root(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    assert walk_tree(tmp_path, "/", include_root=True)["/"][:2] == ("dir", 0o755)
    tmp_path.chmod(0o700)
    assert walk_tree(tmp_path, "/", include_root=True)["/"][:2] == ("dir", 0o700)
    assert "/" not in walk_tree(tmp_path, "/")
