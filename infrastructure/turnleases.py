"""``SqlTurnLeases``: which process runs a turn on a session, in the session's database.

One row per session that has (or had) a running turn: the owner and when its lease
runs out, on the database server's clock (so the processes' clocks never need to
agree). Each operation is one statement in its own short transaction; taking a lease
is one upsert that only overwrites an expired lease or the owner's own, so two
processes racing for it cannot both win, on SQLite (the writer lock) and on PostgreSQL
(the row lock of ``ON CONFLICT``). ADR 0041.

Not a read-model table: it is coordination, not history — ``verify`` ignores it and a
rebuild never touches it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .database import Database, StorageBusy

T = TypeVar("T")

#: Tries of one lease operation while the database is busy or a pooled connection was
#: dropped (PostgreSQL: ``recover`` replaces the dead ones in between). Every operation
#: is safe to repeat: the owner's own lease can be taken, renewed or released again.
ATTEMPTS = 3

TABLE = "ctxc_turn_leases"

#: Seconds since the epoch on the database server's clock.
_NOW = {
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
    "postgres": "(EXTRACT(EPOCH FROM clock_timestamp())::double precision)",
}


class SqlTurnLeases:
    def __init__(self, db: Database) -> None:
        self.db = db
        now = _NOW["postgres" if db.dialect.is_postgres else "sqlite"]
        t = "{t}" + TABLE
        self._create = (
            f"CREATE TABLE IF NOT EXISTS {t} (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
            "expires_at DOUBLE PRECISION NOT NULL)"
        )
        self._acquire = (
            f"INSERT INTO {t} AS lease (session_id, owner, expires_at) VALUES (?, ?, {now} + ?) "
            "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = "
            f"excluded.expires_at WHERE lease.expires_at <= {now} OR lease.owner = excluded.owner"
        )
        self._renew = f"UPDATE {t} SET expires_at = {now} + ? WHERE session_id = ? AND owner = ?"
        self._release = f"DELETE FROM {t} WHERE session_id = ? AND owner = ?"
        self._holder = f"SELECT owner FROM {t} WHERE session_id = ? AND expires_at > {now}"

        self._created = False

    def create_table(self) -> None:
        with self.db.connection_cursor() as cur:
            cur.execute(self._create)
        self._created = True

    def acquire(self, session_id: str, owner: str, seconds: float) -> bool:
        return self._retrying(lambda: self._changes(self._acquire, (session_id, owner, float(seconds))) == 1)

    def renew(self, session_id: str, owner: str, seconds: float) -> bool:
        return self._retrying(lambda: self._changes(self._renew, (float(seconds), session_id, owner)) == 1)

    def release(self, session_id: str, owner: str) -> None:
        self._retrying(lambda: self._changes(self._release, (session_id, owner)))

    def holder(self, session_id: str) -> str | None:
        row = self._retrying(lambda: self.db.query_one(self._holder, (session_id,)))
        return str(row[0]) if row else None

    def _changes(self, sql: str, params: tuple[object, ...]) -> int:
        with self.db.write() as cur:
            return cur.execute(sql, params).rowcount

    def _retrying(self, operation: Callable[[], T]) -> T:
        for attempt in range(ATTEMPTS):
            try:
                if not self._created:  # SQLite: on first use, not at bootstrap (ADR 0052)
                    self.create_table()
                return operation()
            except StorageBusy:
                if attempt == ATTEMPTS - 1:
                    raise
                self.db.recover()
        raise AssertionError("unreachable")
