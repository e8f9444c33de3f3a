"""Who owns a run's leftovers (icae_tui/util/owners.py) and what becomes of them after a crash: a run
whose owner died is interrupted at its last event (an old store gains the owner columns),
orphaned socket folders go and nothing else, the reaper's rules for containers (no Docker)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from icae_tui.domain.events import AgentSaid, RunFinished, RunStarted
from icae_tui.runs.socket_folders import reap_ask_folders
from icae_tui.sandbox.docker.reaper import is_dead
from icae_tui.users.ask_server import SOCKET_NAME


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _started_run(store, run_id: str, *, events: int = 2) -> float:
    store.create_run(run_id, "mini", "scripted:good", "L1", "simulated", 100.0)
    ts = 100.0
    for seq in range(1, events + 1):
        ev = RunStarted(task_id="mini", task_title="t", agent="a", level="L1",
                        responder="simulated", budget=3, prd="p") if seq == 1 else AgentSaid(text="hi")  # fmt: skip
        ts = 100.0 + seq
        ev.run_id, ev.seq, ev.ts = run_id, seq, ts
        store.append(ev)
    return ts


def _set_owner(store, run_id: str, pid: int | None, host: str | None) -> None:
    store.db.execute(
        "UPDATE runs SET owner_pid=?, owner_host=? WHERE run_id=?", (pid, host, run_id)
    )


def test_a_run_whose_owner_died_is_interrupted_at_its_last_event(store):
    last = _started_run(store, "dead", events=3)
    _set_owner(store, "dead", _dead_pid(), socket.gethostname())
    _started_run(store, "mine")  # owned by this (live) process
    _started_run(store, "remote")
    _set_owner(store, "remote", _dead_pid(), "another-host")  # cannot be checked from here
    _started_run(store, "legacy")
    _set_owner(store, "legacy", None, None)  # written before runs had owners

    assert sorted(store.mark_interrupted()) == ["dead", "legacy"]
    row = store.run("dead")
    assert row.status == "interrupted" and row.finished_at == last
    assert "ended without finishing" in row.error
    events = store.events("dead")
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert isinstance(events[-1], RunFinished) and events[-1].status == "interrupted"
    assert events[-1].ts == last
    assert store.run("mine").status == "running"
    assert store.run("remote").status == "running"
    assert store.mark_interrupted() == []  # once only


def test_an_old_store_gains_owner_columns(tmp_path):
    import sqlite3

    from icae_tui.store.database import RunStore

    path = tmp_path / "runs.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, agent TEXT NOT NULL,"
        " level TEXT NOT NULL, responder TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'running',"
        " started_at REAL NOT NULL, finished_at REAL, overall REAL, error TEXT NOT NULL DEFAULT '');"
        "INSERT INTO runs (run_id, task_id, agent, level, responder, started_at)"
        " VALUES ('old', 'mini', 'a', 'L1', 'simulated', 1.0);"
    )
    old.close()
    store = RunStore(path)
    try:
        assert store.mark_interrupted() == ["old"]
        store.create_run("new", "mini", "a", "L1", "simulated", 2.0)
        assert store.run("new").status == "running"
    finally:
        store.close()


def test_orphaned_ask_folders_go_and_nothing_else(tmp_path):
    dead, alive = _dead_pid(), os.getpid()

    def folder(name: str, *, listening: bool | None = None, extra: bool = False,
               socket_name: str = SOCKET_NAME):  # fmt: skip
        path = tmp_path / name
        path.mkdir()
        if listening is not None:
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(path / socket_name))
            if listening:
                s.listen()
                keep.append(s)
            else:
                s.close()  # the file stays; nobody answers
        if extra:
            (path / "notes.txt").write_text("not ours")
        return path

    keep: list[socket.socket] = []
    try:
        folder(f"icae-ask-{dead}-abc", listening=False)
        folder(f"icae-ask-{dead}-empty")
        folder(f"icae-ask-{alive}-live", listening=True)
        folder("icae-ask-legacy1", listening=False)
        folder("icae-ask-legacy2", listening=True)
        folder(f"icae-ask-{dead}-foreign", extra=True)
        folder(f"icae-model-{dead}-gw", listening=False, socket_name="model.sock")  # the gateway's
        folder(f"icae-pkg-{dead}-pg", listening=False, socket_name="packages.sock")  # packages'
        folder(f"icae-pkg-{alive}-live", listening=True, socket_name="packages.sock")
        (tmp_path / f"icae-ask-{dead}-file").write_text("a file, not a folder")
        removed = reap_ask_folders(tmp_path)
    finally:
        for s in keep:
            s.close()
    assert sorted(removed) == sorted(
        [
            f"icae-ask-{dead}-abc",
            f"icae-ask-{dead}-empty",
            "icae-ask-legacy1",
            f"icae-model-{dead}-gw",
            f"icae-pkg-{dead}-pg",
        ]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"icae-ask-{alive}-live", "icae-ask-legacy2", f"icae-ask-{dead}-foreign",
         f"icae-ask-{dead}-file", f"icae-pkg-{alive}-live"]
    )  # fmt: skip


def test_is_dead_rules():
    now = time.time()
    assert is_dead({"icae.expires": str(now - 1)}, now=now)
    assert not is_dead({"icae.expires": str(now + 60), "icae.owner-pid": str(os.getpid())}, now=now)
    assert is_dead({"icae.expires": str(now + 60), "icae.owner-pid": "999999999"}, now=now)
    assert not is_dead({"icae.owner-pid": "999999999", "icae.owner-host": "elsewhere"}, now=now)
