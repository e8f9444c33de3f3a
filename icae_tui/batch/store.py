"""A batch in the store, beside its runs (the same SQLite file, the same connection):

- `batches`: one row a batch — its spec (JSON), its state, the process that owns it;
- `batch_items`: its plan, fixed when it is created (a resumed batch never re-expands its
  globs against a catalog that has changed since): one row per task × agent × level ×
  responder × repeat, in order;
- `batch_attempts`: each run started for an item (its attempts), with the run's id — the
  run's own row and events are in `runs` and `events` like any run's.

Resuming reads what each item's attempts came to (plan.py says what is done).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from enum import StrEnum

from icae_tui.batch.plan import Attempt, BatchItem
from icae_tui.batch.spec import BatchSpec
from icae_tui.store.database import RunStore
from icae_tui.util.owners import owner_gone, this_host

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running',
    created_at REAL NOT NULL,
    finished_at REAL,
    owner_pid INTEGER,
    owner_host TEXT
);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    position INTEGER NOT NULL,
    item_key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    level TEXT NOT NULL,
    responder TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    PRIMARY KEY (batch_id, item_key)
);
CREATE TABLE IF NOT EXISTS batch_attempts (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    item_key TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    engine TEXT,
    PRIMARY KEY (batch_id, item_key, attempt)
);
"""


class BatchStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"  # every item has a result (or used up its attempts)
    CANCELLED = "cancelled"  # stopped by the operator: `--resume` goes on
    INTERRUPTED = "interrupted"  # its owner died (kill -9, a crash): `--resume` goes on
    STALLED = "stalled"  # every engine of its pool stopped answering: `--resume` goes on


@dataclass(frozen=True)
class BatchRow:
    batch_id: str
    spec: BatchSpec
    status: BatchStatus
    created_at: float
    finished_at: float | None
    owner_pid: int | None = None  # the process that created or last resumed it


class BatchStore:
    def __init__(self, store: RunStore) -> None:
        self.runs = store
        self.db = store.db
        self.db.executescript(SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(batch_attempts)")}
        if "engine" not in columns:  # a store made before engine pools
            self.db.execute("ALTER TABLE batch_attempts ADD COLUMN engine TEXT")

    def create(self, batch_id: str, spec: BatchSpec, items: list[BatchItem]) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO batches (batch_id, spec, created_at, owner_pid, owner_host)"
                " VALUES (?, ?, ?, ?, ?)",
                (batch_id, spec.model_dump_json(), time.time(), os.getpid(), this_host()),
            )
            self.db.executemany(
                "INSERT INTO batch_items (batch_id, position, item_key, task_id, agent, level,"
                " responder, repeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(batch_id, i, it.key, it.task_id, it.agent, it.level, it.responder, it.repeat)
                 for i, it in enumerate(items)],
            )  # fmt: skip

    def claim(self, batch_id: str) -> int | None:
        """This process owns the batch now (`--resume`): running again. One process at a
        time: the update takes only a batch no live process runs (SQLite runs one write at
        a time), so of two resumes at once one gets it; the other gets the owner's pid."""
        self.mark_interrupted()  # a dead owner's batch is free
        taken = self.db.execute(
            "UPDATE batches SET status=?, finished_at=NULL, owner_pid=?, owner_host=?"
            " WHERE batch_id=? AND status!=?",
            (BatchStatus.RUNNING, os.getpid(), this_host(), batch_id, BatchStatus.RUNNING),
        ).rowcount
        if taken:
            return None
        row = self.db.execute(
            "SELECT owner_pid FROM batches WHERE batch_id=?", (batch_id,)
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else -1

    def finish(self, batch_id: str, status: BatchStatus) -> None:
        self.db.execute(
            "UPDATE batches SET status=?, finished_at=? WHERE batch_id=?",
            (status, time.time(), batch_id),
        )

    def add_attempt(
        self, batch_id: str, item_key: str, attempt: int, run_id: str, engine: str | None = None
    ) -> None:
        self.db.execute(
            "INSERT INTO batch_attempts (batch_id, item_key, attempt, run_id, engine)"
            " VALUES (?, ?, ?, ?, ?)",
            (batch_id, item_key, attempt, run_id, engine),
        )

    def engines_of(self, batch_id: str) -> dict[str, str | None]:
        """Each attempt's run id → the engine it ran on."""
        rows = self.db.execute(
            "SELECT run_id, engine FROM batch_attempts WHERE batch_id=?", (batch_id,)
        ).fetchall()
        return dict(rows)

    def batch(self, batch_id: str) -> BatchRow | None:
        self.mark_interrupted()
        row = self.db.execute(
            "SELECT batch_id, spec, status, created_at, finished_at, owner_pid FROM batches"
            " WHERE batch_id=?",
            (batch_id,),
        ).fetchone()
        if row is None:
            return None
        spec = BatchSpec.model_validate(json.loads(row[1]))
        return BatchRow(row[0], spec, BatchStatus(row[2]), row[3], row[4], row[5])

    def batches(self, limit: int = 50) -> list[BatchRow]:
        self.mark_interrupted()
        ids = self.db.execute(
            "SELECT batch_id FROM batches ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
        ).fetchall()
        return [row for (batch_id,) in ids if (row := self.batch(batch_id)) is not None]

    def items(self, batch_id: str) -> list[BatchItem]:
        rows = self.db.execute(
            "SELECT task_id, agent, level, responder, repeat FROM batch_items"
            " WHERE batch_id=? ORDER BY position",
            (batch_id,),
        ).fetchall()
        return [BatchItem(*row) for row in rows]

    def attempts(self, batch_id: str) -> dict[str, list[Attempt]]:
        """Each item's attempts, in order, with its run's row."""
        self.runs.mark_interrupted()  # a dead owner's runs are interrupted, not running
        rows = self.db.execute(
            "SELECT item_key, attempt, run_id FROM batch_attempts WHERE batch_id=?"
            " ORDER BY item_key, attempt",
            (batch_id,),
        ).fetchall()
        out: dict[str, list[Attempt]] = {}
        for key, attempt, run_id in rows:
            out.setdefault(key, []).append(Attempt(key, attempt, self.runs.run(run_id)))
        return out

    def attempts_of(self, batch_id: str, item_key: str) -> list[Attempt]:
        rows = self.db.execute(
            "SELECT attempt, run_id FROM batch_attempts WHERE batch_id=? AND item_key=?"
            " ORDER BY attempt",
            (batch_id, item_key),
        ).fetchall()
        return [Attempt(item_key, attempt, self.runs.run(run_id)) for attempt, run_id in rows]

    def mark_interrupted(self) -> list[str]:
        """Batches `running` whose owner process died are `interrupted`."""
        rows = self.db.execute(
            "SELECT batch_id, owner_pid, owner_host FROM batches WHERE status=?",
            (BatchStatus.RUNNING,),
        ).fetchall()
        closed = [b for b, pid, host in rows if owner_gone(pid, host)]
        for batch_id in closed:
            self.finish(batch_id, BatchStatus.INTERRUPTED)
        return closed
