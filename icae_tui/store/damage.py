"""A store file SQLite cannot read (truncated, overwritten, not a database at all).

Every query on the store's connection goes through `GuardedConnection`, so damage found at
any point — opening it, or a page deep in its events — is one `StoreDamaged` naming the
file, for a command to print as one line. Nothing is changed on its account: the way out is
`icae runs --move-damaged`, which renames the file (and its WAL files) aside, so the next
command starts a fresh store and the damaged one is still there to be rescued."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from icae_tui.errors import IcaeError

# SQLite's result codes for a file that is not (or no longer) a sound database
DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
SIDE_FILES = ("-wal", "-shm")  # the WAL files that belong to a store in WAL mode
MOVE_FLAG = "icae runs --move-damaged"


class StoreDamaged(IcaeError):
    """The store file is damaged: SQLite cannot read it."""

    def __init__(self, path: Path, cause: str) -> None:
        super().__init__(
            f"{path} is damaged ({cause}); nothing was changed: `{MOVE_FLAG}` moves it "
            f"aside (to {path.name}.damaged-<time>) and the next command starts a fresh store"
        )
        self.path = path
        self.cause = cause


def is_damage(err: sqlite3.Error) -> bool:
    """Whether SQLite failed because the file is damaged (not locked, not full, not us)."""
    return str(getattr(err, "sqlite_errorname", "")).startswith(DAMAGE_CODES)


Params = Any  # sqlite3's own parameter types (a sequence or a mapping)


class GuardedCursor(sqlite3.Cursor):
    """A cursor whose rows, read past a damaged page, raise StoreDamaged."""

    def _damaged(self, err: sqlite3.Error) -> Exception:
        connection = self.connection
        if is_damage(err) and isinstance(connection, GuardedConnection):
            return StoreDamaged(connection.file, str(err))
        return err

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None


class GuardedConnection(sqlite3.Connection):
    """A connection (`sqlite3.connect(path, factory=GuardedConnection)`) whose damage
    errors are StoreDamaged naming its file."""

    def __init__(self, database: str | Path, *args: Any, **kwargs: Any) -> None:
        super().__init__(database, *args, **kwargs)
        self.file = Path(database)

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or GuardedCursor)

    def _damaged(self, err: sqlite3.Error) -> Exception:
        return StoreDamaged(self.file, str(err)) if is_damage(err) else err

    def execute(self, sql: str, parameters: Params = (), /) -> Any:
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Any:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None

    def executescript(self, sql_script: str, /) -> Any:
        try:
            return super().executescript(sql_script)
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None


def damage(path: Path) -> str | None:
    """What is wrong with the store at `path` (SQLite's words), or None when it is sound.
    Read-only: a full `quick_check` of every page. Other errors (locked, unreadable) raise."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as err:
        if is_damage(err):
            return str(err)
        raise
    finally:
        db.close()
    found = [str(row[0]) for row in rows if row[0] != "ok"]
    return "; ".join(found[:3]) or None


def move_aside(path: Path, now: float | None = None) -> Path:
    """Rename the store and its WAL files to `<name>.damaged-<time>` (a number added if
    that is taken); returns the store's new path. Nothing is deleted."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    target, n = path.with_name(f"{path.name}.damaged-{stamp}"), 1
    while any(Path(f"{target}{s}").exists() for s in ("", *SIDE_FILES)):
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    for suffix in SIDE_FILES:  # the WAL first: never a store beside another's WAL
        side = Path(f"{path}{suffix}")
        if side.exists():
            side.rename(f"{target}{suffix}")
    path.rename(target)
    return target
