"""``SqlTurnLeases``: which process runs a turn on a session, in the session's database.

One row per session that has (or had) a running turn: the owner and when its lease
runs out. Each operation is one statement in its own short transaction; taking a lease
only overwrites an expired lease or the owner's own, so two processes racing for it
cannot both win, on SQLite (the writer lock) and on PostgreSQL (the row lock of
``ON CONFLICT``). ADR 0041.

Expiry: PostgreSQL decides on the server's clock. SQLite has no server: its "now" is
the calling process's clock, which libfaketime or a time namespace can move, so a
process an hour ahead took running turns' leases (issue 36). On SQLite a lease is
therefore taken from another owner only after this process has seen it unchanged
(owner, renewal count, expiry) for the lease's length on its own monotonic clock, and
only if it is still unchanged then (one conditional UPDATE). An offset clock measures
that duration right; the holder renews every third of the lease. The database clock
is only a hint of when to start watching (ADR 0085).

Not a read-model table: it is coordination, not history — ``verify`` ignores it and a
rebuild never touches it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

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
    def __init__(self, db: Database, *, monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.db = db
        self._observed = not db.dialect.is_postgres  # no server clock to trust
        now = _NOW["sqlite" if self._observed else "postgres"]
        t = "{t}" + TABLE
        self._t = t
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
        if self._observed:  # the clock decides nothing: only a free lease or one's own
            self._acquire = (
                f"INSERT INTO {t} AS lease (session_id, owner, expires_at, lease_seconds) "
                f"VALUES (?, ?, {now} + ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                "expires_at = excluded.expires_at, lease_seconds = excluded.lease_seconds, "
                "renewals = lease.renewals + 1 WHERE lease.owner = excluded.owner"
            )
            self._renew = (f"UPDATE {t} SET expires_at = {now} + ?, lease_seconds = ?, renewals = renewals + 1 "
                           "WHERE session_id = ? AND owner = ?")
        self._release = f"DELETE FROM {t} WHERE session_id = ? AND owner = ?"
        self._holder = f"SELECT owner FROM {t} WHERE session_id = ? AND expires_at > {now}"
        # (SQLite) the lease as last seen, with the database clock's hint and its length
        # "looks expired" also when the expiry lies farther ahead than the lease lasts (and a
        # second of ordinary skew): the holder's clock ran ahead, or ours behind; a crashed
        # holder's lease would otherwise be refused to a process that asks once for the skew.
        self._seen_sql = (f"SELECT owner, renewals, expires_at, lease_seconds, expires_at <= {now} "
                          f"OR expires_at > {now} + lease_seconds + 1.0 FROM {t} WHERE session_id = ?")
        self._take = (f"UPDATE {t} SET owner = ?, expires_at = {now} + ?, lease_seconds = ?, "
                      "renewals = renewals + 1 WHERE session_id = ? AND owner = ? AND renewals = ? "
                      "AND expires_at = ?")
        self._monotonic, self._sleep = monotonic, sleep
        self._seen: dict[str, tuple[tuple[Any, ...], float]] = {}  # session → (lease, first seen)
        self._seen_lock = threading.Lock()
        self._created = False

    def create_table(self) -> None:
        with self.db.write() as cur:
            cur.execute(self._create)
            if self._observed:  # added by ADR 0085; an older file gains them here
                names = {row[1] for row in cur.execute(f"PRAGMA table_info({self._t.format(t='')})").fetchall()}
                for column in ("renewals INTEGER NOT NULL DEFAULT 0", "lease_seconds REAL NOT NULL DEFAULT 30"):
                    if column.split()[0] not in names:
                        cur.execute(f"ALTER TABLE {self._t} ADD COLUMN {column}")
        self._created = True

    def acquire(self, session_id: str, owner: str, seconds: float) -> bool:
        if not self._observed:
            return self._retrying(lambda: self._changes(self._acquire, (session_id, owner, float(seconds))) == 1)
        return self._retrying(lambda: self._acquire_observed(session_id, owner, float(seconds)))

    def renew(self, session_id: str, owner: str, seconds: float) -> bool:
        params = (float(seconds), *((float(seconds),) if self._observed else ()), session_id, owner)
        return self._retrying(lambda: self._changes(self._renew, params) == 1)

    def release(self, session_id: str, owner: str) -> None:
        self._retrying(lambda: self._changes(self._release, (session_id, owner)))

    def holder(self, session_id: str) -> str | None:
        if not self._observed:
            row = self._retrying(lambda: self.db.query_one(self._holder, (session_id,)))
            return str(row[0]) if row else None
        seen = self._retrying(lambda: self._watch(session_id))
        return None if seen is None or seen[1] else str(seen[0][0])

    def _acquire_observed(self, session_id: str, owner: str, seconds: float) -> bool:
        if self._changes(self._acquire, (session_id, owner, seconds, seconds)) == 1:
            return True  # free, or its own
        seen = self._watch(session_id)
        if seen is None:  # released meanwhile
            return self._changes(self._acquire, (session_id, owner, seconds, seconds)) == 1
        (holder, renewals, expires_at, _), stale = seen
        taken = stale and self._changes(self._take, (owner, seconds, seconds, session_id, holder, renewals,
                                                     expires_at)) == 1
        if taken:
            with self._seen_lock:
                self._seen.pop(session_id, None)
        return taken

    def _watch(self, session_id: str) -> tuple[tuple[Any, ...], bool] | None:
        """(SQLite) The lease and whether it is stale: seen unchanged by this process for
        its length. When the database clock says it ran out (a crash, or this process's
        clock runs ahead), watch it for the rest of that length rather than answer
        "live" at once; any change is a holder alive. None: there is no lease."""
        watching = False
        naps = 0
        while True:
            row = self.db.query_one(self._seen_sql, (session_id,))
            if row is None:
                with self._seen_lock:
                    self._seen.pop(session_id, None)
                return None
            lease, length, looks_expired = tuple(row[:3]) + (float(row[3]),), float(row[3]), bool(row[4])
            now = self._monotonic()
            with self._seen_lock:
                before = self._seen.get(session_id)
                if before is None or before[0] != lease:
                    if watching:
                        return lease, False  # it renewed while we watched
                    before = self._seen[session_id] = (lease, now)
            left = before[1] + length - now
            if left <= 0:
                return lease, True
            # (a clock that does not move, e.g. frozen in a test, never makes it stale)
            if not looks_expired or naps > 12:
                return lease, False
            watching, naps = True, naps + 1
            self._sleep(min(left, max(length / 6, 0.05)))

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
