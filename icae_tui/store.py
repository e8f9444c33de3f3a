"""SQLite store of runs and their events. Each event is written as it happens."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from icae_tui.domain.events import Event, parse_event

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
    error TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


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


class RunStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_home() / "runs.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    @property
    def artifacts_dir(self) -> Path:
        return self.path.parent / "runs"

    def create_run(
        self, run_id: str, task_id: str, agent: str, level: str, responder: str, started_at: float
    ) -> None:
        self.db.execute(
            "INSERT INTO runs (run_id, task_id, agent, level, responder, started_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, task_id, agent, level, responder, started_at),
        )

    def append(self, event: Event) -> None:
        kind = getattr(event, "kind", type(event).__name__)
        self.db.execute(
            "INSERT INTO events (run_id, seq, ts, kind, payload) VALUES (?, ?, ?, ?, ?)",
            (event.run_id, event.seq, event.ts, kind, event.model_dump_json()),
        )

    def finish_run(
        self, run_id: str, status: str, finished_at: float, overall: float | None, error: str = ""
    ) -> None:
        self.db.execute(
            "UPDATE runs SET status=?, finished_at=?, overall=?, error=? WHERE run_id=?",
            (status, finished_at, overall, error, run_id),
        )

    def runs(self, limit: int = 200) -> list[RunRow]:
        rows = self.db.execute(
            "SELECT run_id, task_id, agent, level, responder, status, started_at, finished_at,"
            " overall, error FROM runs ORDER BY started_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [RunRow(*row) for row in rows]

    def events(self, run_id: str) -> list[Event]:
        rows = self.db.execute(
            "SELECT payload FROM events WHERE run_id=? ORDER BY seq", (run_id,)
        ).fetchall()
        return [parse_event(payload) for (payload,) in rows]

    def event_counts(self, run_id: str) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT kind, COUNT(*) FROM events WHERE run_id=? GROUP BY kind", (run_id,)
        ).fetchall()
        return dict(rows)

    def close(self) -> None:
        self.db.close()
