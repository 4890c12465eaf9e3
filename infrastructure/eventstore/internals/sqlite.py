"""eventsourcing's SQLite pool and recorders, extended beneath its API (see ``__init__``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    ConnectionUnavailableError,
    InterfaceError,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteTransaction,
)
from eventsourcing.sqlite import SQLiteFactory as BaseSQLiteFactory

from ...database import Cur, Dialect

if TYPE_CHECKING:
    from ...readmodel import ReadModelProjector


class StatementCachingPool(SQLiteConnectionPool):
    """eventsourcing's SQLite pool, with a real prepared-statement cache.

    eventsourcing opens connections with ``cached_statements=True``, which sqlite3 reads
    as a cache of one statement, so every command re-prepares each of its statements.
    Otherwise the same connection setup (WAL, autocommit, row factory).
    """

    def _create_connection(self) -> SQLiteConnection:
        try:
            c = sqlite3.connect(
                database=self.db_name,
                uri=True,
                check_same_thread=False,
                isolation_level=None,
                cached_statements=256,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as e:
            raise InterfaceError(e) from e
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            mode = c.execute("PRAGMA journal_mode;").fetchone()[0]
            if mode.lower() != "wal":
                c.execute("PRAGMA journal_mode=WAL;")
                self.journal_mode_was_changed_to_wal = True
            self.is_journal_mode_wal = True
        c.row_factory = sqlite3.Row
        return SQLiteConnection(sqlite_conn=c, max_age=self.max_age)

    # One writer at a time holds the pool's writer lock anyway, so a file database keeps
    # one connection for writing beside the pool: a write then takes that lock and
    # nothing else (the fairness semaphore and the pool's condition variables are
    # Python-level locks, a tenth of an append's CPU; ADR 0016). In-memory databases,
    # whose reads and writes exclude each other, keep the pool's full protocol.
    _writer: SQLiteConnection | None = None

    def get_connection(
        self, timeout: float | None = None, *, is_writer: bool | None = None
    ) -> SQLiteConnection:
        if is_writer is not True or self._mutually_exclusive_read_write:
            return super().get_connection(timeout, is_writer=is_writer)
        wait = self.pool_timeout if timeout is None else timeout
        if not self._writer_lock.acquire(timeout=wait):
            raise ConnectionUnavailableError("Timed out waiting for return of writer")
        try:
            if self._closed:
                raise ConnectionPoolClosedError
            conn = self._writer
            if conn is not None:
                conn.in_use.acquire()  # the max-age timer closes it only while unused
                if conn.closed:
                    conn.in_use.release()
                    conn = None
            if conn is None:
                conn = self._writer = self._create_connection()  # created in use
                if self._closed:  # close() ran meanwhile: it may not have seen this one
                    conn.close()
                    raise ConnectionPoolClosedError
        except BaseException:
            self._writer_lock.release()
            raise
        conn.is_writer = True
        self._num_writers += 1
        return conn

    def put_connection(self, conn: SQLiteConnection) -> None:
        if conn is not self._writer or conn.is_writer is not True:
            super().put_connection(conn)  # also refuses a writer put back twice
            return
        conn.is_writer = None
        self._num_writers -= 1
        if conn.closing:  # its max age is up: the next write opens a fresh one
            conn.close()
        conn.in_use.release()
        self._writer_lock.release()

    def close(self) -> None:
        super().close()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


class SQLiteFactory(BaseSQLiteFactory):
    """eventsourcing's SQLite factory whose datastore pools ``StatementCachingPool``
    connections (the ``PERSISTENCE_MODULE`` topic of SQLite stores)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        # The base factory reads the environment and builds the datastore with a plain
        # pool (still empty: nothing has connected); ours takes its place.
        plain = self.datastore.pool
        self.datastore.pool = StatementCachingPool(db_name=plain.db_name, lock_timeout=plain.lock_timeout)
        plain.close()


class LockedWriter(Protocol):
    """A write transaction holding the database's writer lock from its start (PostgreSQL:
    from its first ``events_after``, ADR 0053): no other connection inserts events
    until it ends (ADR 0021). Passed to ``save`` as
    ``locked_writer=``; the recorder then inserts inside it."""

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]: ...


class _ImmediateTransaction(SQLiteTransaction):
    """eventsourcing's transaction (commit, rollback, error mapping), begun IMMEDIATE:
    it takes the write lock before its first read."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        return cursor


class _SQLiteLockedWriter:
    def __init__(self, recorder: ProjectingSQLiteRecorder, c: SQLiteCursor) -> None:
        self.recorder = recorder
        self.c = c

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]:
        raw = self.c.sqlite_cursor
        raw.execute(
            self.recorder.select_events_statement
            + "AND originator_version>? ORDER BY originator_version ASC",
            (originator_id.hex, version),
        )
        return [
            StoredEvent(originator_id, row["originator_version"], row["topic"], bytes(row["state"]))
            for row in raw.fetchall()
        ]


class ProjectingSQLiteRecorder(SQLiteApplicationRecorder):
    """Inserts a command's events, its due snapshots and its read-model rows in one
    transaction (ADR 0003). ``save(**kwargs)`` hands them down: ``projected_events``
    (the domain events, for the projector), ``snapshots`` (stored snapshots) and
    ``locked_writer`` (insert inside that transaction instead of a new one)."""

    def __init__(self, datastore: Any, projector: ReadModelProjector, dialect: Dialect) -> None:
        super().__init__(datastore)
        self.projector = projector
        self.dialect = dialect
        self.snapshot_recorder: Any = None  # wired by SessionsApplication

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        writer = kwargs.get("locked_writer")
        if writer is not None:
            return self._insert_events(writer.c, stored_events, **kwargs)
        # The datastore's transaction() minus its two generator context managers: the
        # same pooled writer connection, BEGIN, commit or rollback and error mapping.
        pool = self.datastore.pool
        conn = pool.get_connection(is_writer=True)
        try:
            with SQLiteTransaction(conn, commit=True) as c, c:
                return self._insert_events(c, stored_events, **kwargs)
        finally:
            pool.put_connection(conn)

    @contextmanager
    def locked_writer(self) -> Iterator[LockedWriter]:
        pool = self.datastore.pool
        conn = pool.get_connection(is_writer=True)
        try:
            with _ImmediateTransaction(conn, commit=True) as c, c:
                yield _SQLiteLockedWriter(self, c)
        finally:
            pool.put_connection(conn)

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # Not super()'s insert: it executes row by row to read each lastrowid (15-20 µs
        # more per 8-message command, ADR 0026). One executemany instead: the writer
        # holds the database lock and a rowid table without AUTOINCREMENT gives each
        # new row max(rowid) + 1, so the ids are the consecutive ones ending at
        # last_insert_rowid().
        raw = c.sqlite_cursor
        rows = []
        prev: Any = None
        key = ""
        for s in stored_events:
            oid = s.originator_id
            if oid is not prev:  # a command's events share one originator: one .hex
                prev, key = oid, (oid.hex if isinstance(oid, UUID) else str(oid))
            rows.append((key, s.originator_version, s.topic, s.state))
        raw.executemany(self.insert_events_statement, rows)
        last = int(raw.execute("SELECT last_insert_rowid()").fetchone()[0])
        ids = list(range(last - len(stored_events) + 1, last + 1))
        events = kwargs.get("projected_events")
        if ids and events is not None:
            self.projector.project_inline(Cur(raw, self.dialect), ids, events)
        snapshots = kwargs.get("snapshots")
        if snapshots:
            self.snapshot_recorder._insert_events(c, snapshots)
        return ids
