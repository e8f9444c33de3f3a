"""SQLite store of runs and their events. Each event is written as it happens."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from icae_tui.domain.events import Event, RunFinished, parse_event
from icae_tui.domain.states import RunStatus
from icae_tui.store.damage import GuardedConnection
from icae_tui.util.owners import owner_gone, this_host

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    level TEXT NOT NULL,
    responder TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running',
    started_at REAL NOT NULL,
    finished_at REAL,
    overall REAL,
    error TEXT NOT NULL DEFAULT '',
    owner_pid INTEGER,
    owner_host TEXT
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS events_responder ON events (run_id, seq) WHERE kind = 'responder';
"""


MODEL_CALLS_FILE = "model_calls.jsonl"  # a run's artifact, beside report.json: a line per model call


def default_home() -> Path:
    env = os.environ.get("ICAE_HOME")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "icae-tui"


@dataclass(frozen=True)
class RunRow:
    run_id: str
    task_id: str
    agent: str
    level: str
    responder: str
    status: str
    started_at: float
    finished_at: float | None
    overall: float | None
    error: str
    repeat_group: str | None = None  # `icae run --repeats N`: the group, and 1..N in it
    repeat_index: int | None = None
    failure: str | None = None  # a failed run's FailureKind


ROW_COLUMNS = (
    "run_id, task_id, agent, level, responder, status, started_at, finished_at, overall, error,"
    " repeat_group, repeat_index, failure"
)


@dataclass(frozen=True)
class StoreUsage:
    events: int
    payload_bytes: int  # the events' JSON; SQLite adds ~100 bytes of row and index to each


class RunStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_home() / "runs.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # damage found by any query (a truncated or overwritten file) is StoreDamaged
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                  factory=GuardedConnection)  # fmt: skip
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Stores made before runs had owners (or repeat groups) get the columns (rows keep
        NULL: unknown, or not a repeat)."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
        for name, kind in (
            ("owner_pid", "INTEGER"),
            ("owner_host", "TEXT"),
            ("repeat_group", "TEXT"),  # `icae run --repeats N`: the runs of one pairing
            ("repeat_index", "INTEGER"),  # 1..N within its group
            ("failure", "TEXT"),  # a failed run's FailureKind (a batch retries infrastructure)
        ):
            if name not in columns:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")

    @property
    def artifacts_dir(self) -> Path:
        return self.path.parent / "runs"

    def create_run(
        self, run_id: str, task_id: str, agent: str, level: str, responder: str, started_at: float
    ) -> None:
        self.db.execute(
            "INSERT INTO runs (run_id, task_id, agent, level, responder, started_at,"
            " owner_pid, owner_host) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, task_id, agent, level, responder, started_at, os.getpid(), this_host()),
        )

    def append(self, event: Event, payload: str | None = None) -> int:
        """Store one event (`payload`: its JSON, when the caller already made it); returns
        the payload's size in bytes."""
        kind = getattr(event, "kind", type(event).__name__)
        if payload is None:
            payload = event.model_dump_json()
        self.db.execute(
            "INSERT INTO events (run_id, seq, ts, kind, payload) VALUES (?, ?, ?, ?, ?)",
            (event.run_id, event.seq, event.ts, kind, payload),
        )
        return len(payload.encode())

    def usage(self, run_id: str) -> StoreUsage:
        """What a run's events take in the store: their number and payload bytes."""
        events, payload = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(payload AS BLOB))), 0) FROM events"
            " WHERE run_id=?",
            (run_id,),
        ).fetchone()
        return StoreUsage(events, payload)

    def set_repeat(self, run_id: str, group: str, index: int) -> None:
        """Tag a run as repeat `index` (from 1) of the repeat group `group`."""
        self.db.execute(
            "UPDATE runs SET repeat_group=?, repeat_index=? WHERE run_id=?",
            (group, index, run_id),
        )

    def repeat_of(self, run_id: str) -> tuple[str, int] | None:
        """The repeat group of a run and its index in it; None: not a repeat."""
        row = self.db.execute(
            "SELECT repeat_group, repeat_index FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        return None if row is None or row[0] is None else (row[0], row[1])

    def repeat_group(self, group: str) -> list[str]:
        """The run ids of a repeat group, in repeat order."""
        rows = self.db.execute(
            "SELECT run_id FROM runs WHERE repeat_group=? ORDER BY repeat_index, started_at",
            (group,),
        ).fetchall()
        return [run_id for (run_id,) in rows]

    def finish_run(
        self, run_id: str, status: str, finished_at: float, overall: float | None,
        error: str = "", failure: str | None = None,
    ) -> None:  # fmt: skip
        self.db.execute(
            "UPDATE runs SET status=?, finished_at=?, overall=?, error=?, failure=?"
            " WHERE run_id=?",
            (status, finished_at, overall, error, failure, run_id),
        )

    def add_finished_run(self, row: RunRow, events: Iterable[Event]) -> None:
        """Store a finished run made elsewhere (a re-scored copy, icae_tui/results/rescore.py): its
        row and its events together, or nothing. No process owns it."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO runs (run_id, task_id, agent, level, responder, status,"
                " started_at, finished_at, overall, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.run_id, row.task_id, row.agent, row.level, row.responder, row.status,
                 row.started_at, row.finished_at, row.overall, row.error),
            )  # fmt: skip
            for event in events:
                self.append(event)

    def mark_interrupted(self) -> list[str]:
        """Runs still `running` whose owner process died (kill -9, a crash, a power cut) are
        closed as `interrupted` at their last stored event, with a final event saying so, so
        history and replay end where the run really ended. Returns their ids.

        A row without an owner comes from a store written before owners were recorded: no
        process of this version can be running it, so it is closed too.
        """
        rows = self.db.execute(
            "SELECT run_id, started_at, owner_pid, owner_host FROM runs WHERE status='running'"
        ).fetchall()
        closed = []
        for run_id, started_at, pid, host in rows:
            if pid is not None and not owner_gone(pid, host):
                continue
            last_seq, last_ts = self.db.execute(
                "SELECT COALESCE(MAX(seq), 0), MAX(ts) FROM events WHERE run_id=?", (run_id,)
            ).fetchone()
            at = last_ts if last_ts is not None else started_at
            owner = f"process {pid} on {host}" if pid is not None else "an unknown process"
            error = f"interrupted: its owner ({owner}) ended without finishing the run"
            final = RunFinished(status=RunStatus.INTERRUPTED, error=error)
            final.run_id, final.seq, final.ts = run_id, last_seq + 1, at
            with self.db:  # the event and the row change together, or not at all
                self.db.execute("BEGIN")
                updated = self.db.execute(
                    "UPDATE runs SET status='interrupted', finished_at=?, error=?"
                    " WHERE run_id=? AND status='running'",
                    (at, error, run_id),
                ).rowcount
                if updated:
                    self.append(final)
            if updated:
                closed.append(run_id)
        return closed

    def run(self, run_id: str) -> RunRow | None:
        row = self.db.execute(
            f"SELECT {ROW_COLUMNS} FROM runs WHERE run_id=?",
            (run_id,),
        ).fetchone()
        return RunRow(*row) if row else None

    def runs(
        self,
        limit: int = 200,
        *,
        task: str | None = None,
        agent: str | None = None,
        status: str | None = None,
    ) -> list[RunRow]:
        """The newest `limit` runs (the later stored first at equal starts), only those of
        `task`, `agent` and `status` when given."""
        where, params = [], []
        for column, value in (("task_id", task), ("agent", agent), ("status", status)):
            if value is not None:
                where.append(f"{column}=?")
                params.append(value)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.execute(
            f"SELECT {ROW_COLUMNS} FROM runs{clause} ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [RunRow(*row) for row in rows]

    def events(self, run_id: str, limit: int = -1) -> list[Event]:
        """The run's events in order; its first `limit` only when given."""
        rows = self.db.execute(
            "SELECT payload FROM events WHERE run_id=? ORDER BY seq LIMIT ?", (run_id, limit)
        ).fetchall()
        return [parse_event(payload) for (payload,) in rows]

    def responders_used(self, run_ids: Iterable[str]) -> dict[str, list[str]]:
        """The responders each run switched to, in order (its first is the run's `responder`);
        runs that never switched are absent. Reads the switches only (an index holds them)."""
        ids = list(run_ids)
        used: dict[str, list[str]] = {}
        for i in range(0, len(ids), 500):  # SQLite bounds a statement's parameters
            chunk = ids[i : i + 500]
            rows = self.db.execute(
                "SELECT run_id, payload FROM events WHERE kind = 'responder' AND run_id IN"
                f" ({', '.join('?' * len(chunk))}) ORDER BY run_id, seq",
                chunk,
            )
            for run_id, payload in rows:
                used.setdefault(run_id, []).append(str(json.loads(payload).get("mode", "?")))
        return used

    def close(self) -> None:
        self.db.close()
