"""Crash leftovers (the reaper's rules, the store, the socket folders), and options and agents
checked before anything runs (no Docker)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from icae_tui.agents.base import AgentError
from icae_tui.agents.scripted import ScriptedAgent
from icae_tui.catalog import load_catalog
from icae_tui.cli import main
from icae_tui.domain.events import AgentSaid, RunFinished, RunStarted
from icae_tui.run import Run, RunConfig
from icae_tui.sandbox.docker.reaper import is_dead
from icae_tui.socket_folders import reap_ask_folders
from icae_tui.users.ask_server import SOCKET_NAME
from tests.conftest import FIXTURE_TASKS


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

    from icae_tui.store import RunStore

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
        ]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"icae-ask-{alive}-live", "icae-ask-legacy2", f"icae-ask-{dead}-foreign",
         f"icae-ask-{dead}-file"]
    )  # fmt: skip


def test_is_dead_rules():
    now = time.time()
    assert is_dead({"icae.expires": str(now - 1)}, now=now)
    assert not is_dead({"icae.expires": str(now + 60), "icae.owner-pid": str(os.getpid())}, now=now)
    assert is_dead({"icae.expires": str(now + 60), "icae.owner-pid": "999999999"}, now=now)
    assert not is_dead({"icae.owner-pid": "999999999", "icae.owner-host": "elsewhere"}, now=now)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--concurrency", "-1", "--concurrency: must be at least 1, not -1"),
        ("--concurrency", "0", "--concurrency: must be at least 1, not 0"),
        ("--budget", "-3", "--budget: must be at least 0, not -3"),
        ("--concurrency", "many", "--concurrency: 'many' is not a number"),
    ],
)
def test_run_options_are_checked_before_anything_runs(capsys, tmp_path, option, value, message):
    argv = ["--tasks", str(FIXTURE_TASKS), "--home", str(tmp_path), "run", "--task", "mini",
            option, value]  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs.db").exists()  # nothing was started, nothing stored


def test_negative_pace_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--pace", "-1", "tasks"])
    assert "--pace: must be at least 0, not -1" in capsys.readouterr().err


def test_run_config_refuses_what_the_cli_would(fixture_catalog):
    task = fixture_catalog.tasks["mini"]
    for bad, word in (({"budget": -3}, "budget"), ({"concurrency": 0}, "concurrency"),
                      ({"pace_s": -1.0}, "pace"), ({"responder": "robot"}, "responder")):  # fmt: skip
        with pytest.raises(ValueError, match=word):
            RunConfig(task=task, **bad)


async def test_unknown_agent_and_missing_solution_fail_before_the_engine(
    fixture_catalog, store, monkeypatch, tmp_path
):
    # No engine here: a run that touched it would fail with an engine error instead.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    task = fixture_catalog.tasks["mini"]
    outcome = await Run(
        RunConfig(task=task, agent="scripted:nonexistent", pace_s=0), store
    ).execute()
    assert outcome.status == "failed"
    assert "nonexistent.yaml" in outcome.error and "good" in outcome.error
    outcome = await Run(RunConfig(task=task, agent="gpt:x", pace_s=0), store).execute()
    assert outcome.status == "failed" and "unknown kind" in outcome.error
    assert {r.status for r in store.runs()} == {"failed"}


@pytest.mark.parametrize(
    "name", ["../../x/solutions/good", "../good", "/etc/passwd", "good/../good", ".hidden", ""]
)
def test_solution_names_stay_inside_the_task_folder(tmp_path, name):
    tasks = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS / "mini", tasks / "mini")
    outside = tmp_path / "x" / "solutions"
    outside.mkdir(parents=True)
    shutil.copy(tasks / "mini" / "solutions" / "good.yaml", outside / "good.yaml")
    task = load_catalog(tasks).tasks["mini"]
    with pytest.raises(AgentError, match="no such solution"):
        ScriptedAgent.for_task(task, name)
    assert ScriptedAgent.for_task(task, "good").name == "scripted:good"


def test_a_solution_link_out_of_the_folder_is_refused(tmp_path):
    tasks = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS / "mini", tasks / "mini")
    elsewhere = tmp_path / "elsewhere.yaml"
    shutil.copy(tasks / "mini" / "solutions" / "good.yaml", elsewhere)
    (tasks / "mini" / "solutions" / "linked.yaml").symlink_to(elsewhere)
    catalog = load_catalog(tasks)
    assert "linked" not in catalog.tasks["mini"].solutions
    with pytest.raises(AgentError, match="no such solution"):
        ScriptedAgent.for_task(catalog.tasks["mini"], "linked")


def test_solutions_that_do_not_parse_are_errors_not_choices(tmp_path, capsys):
    tasks = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS / "mini", tasks / "mini")
    (tasks / "mini" / "solutions" / "mangled.yaml").write_text("steps: [unclosed\n")
    (tasks / "mini" / "solutions" / "empty.yaml").write_text("description: no steps\n")
    catalog = load_catalog(tasks)
    task = catalog.tasks["mini"]  # the task itself still loads
    assert task.solutions == ["broken", "good", "partial"]
    messages = sorted(str(e) for e in catalog.errors)
    assert len(messages) == 2
    assert messages[0].endswith("field 'steps': Field required") and "empty.yaml" in messages[0]
    assert "mangled.yaml: invalid YAML" in messages[1]
    assert main(["--tasks", str(tasks), "tasks"]) == 0
    out, err = capsys.readouterr()
    assert "solutions broken, good, partial" in out and "mangled" not in out
    assert "mangled.yaml: invalid YAML" in err
