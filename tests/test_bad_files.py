"""Bad files (issue 39, item 6). Each is one line naming the file, exit status 2, nothing
lost: a file nested too deep for the parsers (a batch spec, an agents file, a task's files,
a teachings line); a damaged `runs.db` (random bytes, or a real store cut short), which
`icae runs --move-damaged` moves aside whole; a task whose fields or files are huge; a
batch resumed by two processes at once; an endpoint URL that is no endpoint, and a warning
for a link-local or metadata one. No Docker: an engine reached by mistake is a dead socket.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from icae_tui.batch.plan import expand
from icae_tui.batch.spec import BatchSpec
from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.catalog.loader import load_catalog
from icae_tui.cli import main
from icae_tui.domain.events import Progress
from icae_tui.domain.task import NAME_CHARS, PRD_CHARS
from icae_tui.store.damage import StoreDamaged, damage, move_aside
from icae_tui.store.database import RunStore
from icae_tui.users.teachings import teachings_path
from icae_tui.util.documents import MAX_DEPTH, TooDeep, depth_within, load_json, load_toml
from icae_tui.util.endpoint_urls import url_problem, url_warning
from tests.conftest import FIXTURE_TASKS
from tests.task_copies import copy_mini

DEEP_TOML = "k = " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_JSON = "[" * 10_000 + "]" * 10_000  # a 20 KB line: far past the parsers' stacks
NESTED = f"nested more than {MAX_DEPTH} levels deep"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ICAE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user agents file
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def icae(*argv: str, tasks: Path = FIXTURE_TASKS) -> int:
    return main(["--tasks", str(tasks), *argv])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1 and err.strip(), err
    return err.rstrip("\n")


# --- nesting ----------------------------------------------------------------------------------


def test_documents_bound_their_nesting():
    assert load_toml("a = [[1]]") == {"a": [[1]]}
    assert load_json('{"a": [1]}') == {"a": [1]}
    within = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert depth_within(load_json(within))
    for text in (DEEP_JSON, "[" + within + "]"):  # the stack's limit, and ours
        with pytest.raises(TooDeep, match=NESTED):
            load_json(text)
    with pytest.raises(TooDeep, match=NESTED):
        load_toml(DEEP_TOML)
    assert not depth_within({"a": [{"b": 1}]}, limit=2) and depth_within({"a": [1]}, limit=2)


def test_a_deep_batch_spec_is_one_line(home, tmp_path, capsys):
    spec = tmp_path / "deep.toml"
    spec.write_text(DEEP_TOML.replace("k = ", "tasks = "))
    assert icae("batch", str(spec)) == 2
    assert one_error_line(capsys) == f"error: {spec}: invalid TOML: {NESTED}"


def test_a_deep_agents_file_is_one_line(home, tmp_path, capsys):
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.x]\nkind = "model"\nmodel = ' + DEEP_TOML[4:])
    assert icae("--agents", str(agents), "agents") == 2
    assert one_error_line(capsys) == f"{agents}: invalid TOML: {NESTED}"


def test_deep_task_files_are_task_errors(tmp_path):
    folder = copy_mini(tmp_path)
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + DEEP_TOML)
    [err] = load_catalog(folder.parent, index=False).errors
    assert str(err) == f"{folder / 'task.toml'}: invalid TOML: {NESTED}"
    other = copy_mini(tmp_path / "b")
    case = next((other / "cases" / "hidden").glob("*.json"))
    case.write_text('{"cases": [{"input": ' + DEEP_JSON + "}]}")
    [err] = load_catalog(other.parent, index=False).errors
    assert str(err) == f"{case}: invalid JSON: {NESTED}"


def test_a_deep_teachings_line_is_one_line(home, tmp_path, capsys):
    folder = copy_mini(tmp_path)
    teachings_path(folder).write_text(DEEP_JSON + "\n")
    # teach's own status for a malformed teachings file (icae_tui/cli/teach.py)
    assert icae("tasks", "teach", "mini", tasks=folder.parent) == 1
    assert one_error_line(capsys) == f"error: {teachings_path(folder)}: line 1: {NESTED}"


# --- a damaged store --------------------------------------------------------------------------


def _real_store(path: Path) -> None:
    """A store of three runs of 300 events each (many pages), closed (its WAL folded in)."""
    store = RunStore(path)
    for r in range(3):
        store.create_run(f"r{r}", "mini", "scripted:good", "L1", "simulated", 1.0 + r)
        for i in range(300):
            event = Progress(message="x" * 2000)
            event.run_id, event.seq, event.ts = f"r{r}", i + 1, 1.0 + i
            store.append(event)
        store.finish_run(f"r{r}", "completed", 5.0, 0.5)
    store.close()


def _damaged(home: Path, how: str) -> bytes:
    db = home / "runs.db"
    if how == "random":
        db.write_bytes(bytes(range(256)) * 16)
    else:  # a real store cut short: its first pages only
        _real_store(db)
        db.write_bytes(db.read_bytes()[: 5 * 4096])
    return db.read_bytes()


COMMANDS = [("runs",), ("runs", "show", "r1"), ("run", "--task", "mini"), ("reap",),
            ("batch", "--list"), ("batch", "--resume", "b1")]  # fmt: skip


@pytest.mark.parametrize("how", ["random", "truncated"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_damaged_store_is_named_and_left_alone(home, capsys, how, command):
    before = _damaged(home, how)
    assert icae(*command) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: {home / 'runs.db'} is damaged (")
    assert "icae runs --move-damaged" in line
    assert (home / "runs.db").read_bytes() == before
    # nothing else made or written but SQLite's own WAL files, with nothing in the log
    assert {p.name for p in home.iterdir()} <= {"runs.db", "runs.db-wal", "runs.db-shm", "runs"}
    wal = home / "runs.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


@pytest.mark.parametrize("how", ["random", "truncated"])
def test_move_damaged_keeps_the_file_and_starts_fresh(home, capsys, how):
    before = _damaged(home, how)
    assert icae("runs", "--move-damaged") == 0
    out, _ = capsys.readouterr()
    [moved] = [p for p in home.glob("runs.db.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert not list(home.glob("runs.db-*"))  # its WAL files went with it
    assert moved.read_bytes() == before and str(moved) in out
    assert not (home / "runs.db").exists()
    assert icae("runs") == 0  # a fresh store
    capsys.readouterr()
    assert icae("runs", "--move-damaged") == 2  # a sound store is never moved
    assert "is sound" in one_error_line(capsys)
    assert (home / "runs.db").exists()


def test_move_with_no_store_says_so(home, capsys):
    assert icae("runs", "--move-damaged") == 2
    assert "nothing to move" in one_error_line(capsys)


def test_damage_found_deep_in_a_store_names_it(home, capsys):
    db = home / "runs.db"
    _real_store(db)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2] + b"\xff" * (len(data) - len(data) // 2))
    store = RunStore(db)  # its first pages are sound: it opens and lists
    try:
        assert len(store.runs()) == 3
        with pytest.raises(StoreDamaged, match="runs.db is damaged"):
            store.events("r2")
    finally:
        store.close()
    assert damage(db) is not None
    assert icae("runs", "show", "r2") == 2
    assert one_error_line(capsys).startswith(f"error: {db} is damaged (")


def test_move_aside_takes_the_wal_files_and_never_overwrites(tmp_path):
    db = tmp_path / "runs.db"
    for name in ("runs.db", "runs.db-wal", "runs.db-shm"):
        (tmp_path / name).write_text(name)
    first = move_aside(db, now=0)
    db.write_text("again")
    second = move_aside(db, now=0)
    assert first != second and second.read_text() == "again"
    assert Path(f"{first}-wal").read_text() == "runs.db-wal"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [first.name, f"{first.name}-wal", f"{first.name}-shm", second.name]
    )


# --- huge task fields -------------------------------------------------------------------------


def test_a_huge_title_is_refused_naming_the_field(home, tmp_path, capsys):
    folder = copy_mini(tmp_path)
    toml = folder / "task.toml"
    title = "T" * (NAME_CHARS + 1)
    toml.write_text(toml.read_text().replace('title = "', f'title = "{title}', 1))
    assert icae("tasks", tasks=folder.parent) == 1
    out, err = capsys.readouterr()
    assert title not in out + err
    assert err == f"task error: {toml}: field 'title': String should have at most 200 characters\n"
    assert not (folder.parent / ".icae-index.json").exists() or title not in (
        folder.parent / ".icae-index.json"
    ).read_text()


def test_huge_task_files_are_refused_unread(tmp_path):
    folder = copy_mini(tmp_path)
    toml = folder / "task.toml"
    with toml.open("a") as f:
        f.truncate(5 * 1024 * 1024)
    prd = copy_mini(tmp_path / "b") / "prd" / "L2.md"
    prd.write_text("p" * (PRD_CHARS + 1))
    [err] = load_catalog(folder.parent, index=False).errors
    assert str(err) == f"{toml}: 5242880 bytes: a task.toml has at most 4194304"
    [err] = load_catalog(prd.parents[2], index=False).errors
    assert str(err) == f"{prd}: a PRD has at most {PRD_CHARS} characters"


def test_a_huge_record_is_refused_naming_the_field(tmp_path):
    folder = copy_mini(tmp_path)
    ua = folder / "user_agent" / "L1.json"
    text = ua.read_text()
    ua.write_text(text.replace('"fallback_response": "', '"fallback_response": "' + "f" * 70_000))
    [err] = load_catalog(folder.parent, index=False).errors
    assert str(err).startswith(f"{ua}: field 'oracle_data.fallback_response': String should")


# --- a batch resumed twice --------------------------------------------------------------------


def _stored_batch(home: Path) -> str:
    store = RunStore(home / "runs.db")
    spec = BatchSpec(tasks=["mini"], agents=["scripted:good"], tasks_dir=str(FIXTURE_TASKS))
    batches = BatchStore(store)
    batches.create("b1", spec, expand(spec, ["mini"]))
    batches.finish("b1", BatchStatus.INTERRUPTED)
    store.close()
    return "b1"


def test_one_process_claims_a_batch(home):
    batch_id = _stored_batch(home)
    first, second = RunStore(home / "runs.db"), RunStore(home / "runs.db")
    try:  # two resumes that both read the batch as interrupted, then claim it
        assert BatchStore(first).claim(batch_id) is None
        assert BatchStore(second).claim(batch_id) == os.getpid()  # the owner: alive
    finally:
        first.close()
        second.close()


def test_a_batch_being_run_is_not_resumed(home, capsys):
    batch_id = _stored_batch(home)
    store = RunStore(home / "runs.db")
    BatchStore(store).claim(batch_id)  # this (live) process runs it
    store.close()
    assert icae("batch", "--resume", batch_id) == 2
    assert one_error_line(capsys) == (
        f"error: batch b1 is being run by process {os.getpid()}: one process resumes a batch "
        "at a time"
    )


# --- endpoints --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "ok"),
    [("http://localhost:8000/v1", True), ("https://api.example.com/v1", True),
     ("file:///etc/passwd", False), ("ftp://host/v1", False), ("http://", False),
     ("http://a b/v1", False), ("http://host:99999/v1", False)],
)  # fmt: skip
def test_one_url_check(url, ok):
    assert (url_problem(url) is None) is ok


@pytest.mark.parametrize(
    ("url", "says"),
    [("http://169.254.169.254/latest", "metadata"), ("http://metadata.google.internal/", "metadata"),
     ("http://[fd00:ec2::254]/", "metadata"), ("http://[::ffff:169.254.169.254]/", "metadata"),
     ("http://169.254.10.1:8000/v1", "link-local"), ("http://[fe80::1]:8000/v1", "link-local"),
     ("http://localhost:8000/v1", None), ("http://10.0.0.5/v1", None)],
)  # fmt: skip
def test_link_local_and_metadata_hosts_are_warned(url, says):
    warning = url_warning(url)
    assert (warning is None) if says is None else (warning is not None and says in warning)


@pytest.mark.parametrize("role", ["user", "judge", "critic"])
def test_a_base_url_flag_that_is_no_endpoint_stores_nothing(home, capsys, role):
    assert icae("run", "--task", "mini", f"--{role}-model", "m",
                f"--{role}-base-url", "file:///etc/passwd") == 2  # fmt: skip
    assert one_error_line(capsys) == (
        f"error: --{role}-base-url 'file:///etc/passwd': must be an http:// or https:// URL "
        "with a host, e.g. http://localhost:8000/v1"
    )
    assert not (home / "runs.db").exists()


def test_rescore_checks_its_judge_url_too(home, capsys):
    assert icae("runs", "rescore", "r1", "--judge-model", "m",
                "--judge-base-url", "file:///etc/passwd") == 2  # fmt: skip
    assert "--judge-base-url 'file:///etc/passwd': must be an http" in one_error_line(capsys)


def test_metadata_endpoints_are_warned_wherever_they_come_from(home, tmp_path, capsys):
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.meta]\nkind = "model"\nmodel = "m"\n'
                      'base_url = "http://169.254.169.254/v1"\n'
                      '[models.near]\nmodel = "m"\nbase_url = "http://[fe80::1]:8000/v1"\n')  # fmt: skip
    # the critic's bad URL stops the run after the others were read: nothing runs
    assert icae("--agents", str(agents), "run", "--task", "mini", "--agent", "model:meta",
                "--user-endpoint", "near", "--judge-model", "m",
                "--judge-base-url", "http://169.254.169.254/v1",
                "--critic-model", "m", "--critic-base-url", "nope") == 2  # fmt: skip
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 4, err
    assert lines[0].startswith("warning: agent model:meta http://169.254.169.254/v1: ")
    assert lines[1].startswith("warning: --user-endpoint near http://[fe80::1]:8000/v1: ")
    assert "link-local" in lines[1]
    assert lines[2].startswith("warning: --judge-base-url http://169.254.169.254/v1: ")
    assert "metadata" in lines[2]
    assert lines[3].startswith("error: --critic-base-url 'nope': must be an http")
    assert not (home / "runs.db").exists()


def test_the_agents_file_refuses_what_the_flags_refuse(home, tmp_path, capsys):
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.x]\nkind = "model"\nmodel = "m"\nbase_url = "file:///etc/passwd"\n')
    assert icae("--agents", str(agents), "agents") == 0  # listed, with the entry's error
    _, err = capsys.readouterr()
    assert f"{agents}:4" in err and "must be an http:// or https:// URL with a host" in err


def test_sqlite_errors_that_are_not_damage_pass_through(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    try:
        with pytest.raises(sqlite3.OperationalError):
            store.db.execute("SELECT nope FROM runs")
    finally:
        store.close()
