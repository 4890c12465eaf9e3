"""One small seam over eventsourcing's SQLite and PostgreSQL datastores (and pools),
which the read model shares with the events (DESIGN §5). SQL is written once with ``?``
placeholders and ``{t}`` before table names; the dialect adapts it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import OperationalError, PersistenceError
from eventsourcing.sqlite import SQLiteCursor, SQLiteTransaction

from context_compaction.domain.errors import InvalidCommand, StorageError


class StorageBusy(StorageError):
    """A transient database condition (locked, busy, connection dropped): retry; a
    ``storage_error`` when it reaches the caller after the retries."""


def quote_identifier(name: str) -> str:
    """``name`` as one SQL identifier (a schema name from configuration is data)."""
    return '"' + name.replace('"', '""') + '"'


def qualified_name(schema: str | None, table: str) -> str:
    """A PostgreSQL table in its schema (``public`` by default), both quoted."""
    return f"{quote_identifier(schema or 'public')}.{quote_identifier(table)}"


def refuse_keyword_schema(conn: Any, schema: str | None) -> None:
    """eventsourcing names its PostgreSQL types in unquoted ``schema.type`` text, so a
    schema named by a reserved word (``order``, ``user``) fails every start with a bare
    syntax error: say so, before anything is created."""
    sql = "SELECT 1 FROM pg_get_keywords() WHERE word = %s AND catcode IN ('R', 'C')"
    if schema and conn.execute(sql, (schema,)).fetchone():
        raise InvalidCommand(f"the PostgreSQL schema name {schema!r} is a reserved SQL word: choose another")


# Causes worth telling an operator, by SQLite result code and PostgreSQL SQLSTATE. The
# drivers' message texts are not used: they can quote values (data) back.
_SQLITE_CAUSES = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_IOERR": "disk I/O error",
    "SQLITE_READONLY": "the database is read-only",
    "SQLITE_CANTOPEN": "the database file cannot be opened",
    "SQLITE_PERM": "permission denied",
    "SQLITE_CORRUPT": "the database file is damaged",
    "SQLITE_NOTADB": "the file is not a database",
    "SQLITE_NOMEM": "out of memory",
    "SQLITE_BUSY": "the database is locked by another connection",
    "SQLITE_LOCKED": "the database is locked by another connection",
}
_POSTGRES_CAUSES = {
    "53100": "the disk is full",
    "53200": "the server is out of memory",
    "53300": "the server has too many connections",
    "55P03": "a lock wait timed out (another connection holds the table)",
    "57014": "the statement was canceled (timeout)",
    "57P01": "the server is shutting down",
    "57P03": "the server is not accepting connections yet",
    "25006": "the database is read-only",
    "28000": "authentication failed",
    "28P01": "authentication failed",
    "3D000": "the database does not exist",
    "3F000": "the schema does not exist",
    "42501": "permission denied",
}


def storage_cause(exc: BaseException) -> str:
    """A short cause of a database error that names what went wrong, never data."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, sqlite3.Error):
            name = getattr(seen, "sqlite_errorname", None) or ""
            base = "_".join(name.split("_")[:2])  # SQLITE_IOERR_WRITE -> SQLITE_IOERR
            cause = _SQLITE_CAUSES.get(name) or _SQLITE_CAUSES.get(base) or name or type(seen).__name__
            return cause + _file_size_limit() if base in ("SQLITE_IOERR", "SQLITE_FULL") else cause
        sqlstate = getattr(seen, "sqlstate", None)
        if isinstance(sqlstate, str) and type(seen).__module__.startswith("psycopg"):
            return _POSTGRES_CAUSES.get(sqlstate) or f"{type(seen).__name__} (SQLSTATE {sqlstate})"
        seen = seen.__cause__
    return type(exc).__name__


def _file_size_limit() -> str:
    """A write past ``ulimit -f`` fails as EFBIG (Python ignores SIGXFSZ), which SQLite
    reports as a disk I/O error: name the limit when the process has one (issue 36)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not a POSIX system
        return ""
    if soft == resource.RLIM_INFINITY:
        return ""
    return f" (this process has a file-size limit, ulimit -f, of {soft:,} bytes)"


class Dialect:
    def __init__(self, name: str, schema: str | None = None) -> None:
        self.name = name
        self.schema = schema
        self._cache: dict[str, str] = {}
        prefix = f"{quote_identifier(schema)}." if (name == "postgres" and schema) else ""
        self._format = {
            "t": prefix,
            "INT": "BIGINT" if name == "postgres" else "INTEGER",
            # SQLite: keyed tables clustered on their key (one B-tree, fewer pages per commit).
            "WR": "" if name == "postgres" else " WITHOUT ROWID",
        }

    def sql(self, text: str) -> str:
        out = self._cache.get(text)
        if out is None:
            out = text.format(**self._format)
            if self.name == "postgres":
                out = out.replace("?", "%s")
            self._cache[text] = out
        return out

    @property
    def is_postgres(self) -> bool:
        return self.name == "postgres"


class Cur:
    """A DB-API cursor speaking the dialect; rows come back as tuples."""

    __slots__ = ("dialect", "raw")

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw = raw
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cur:
        self.raw.execute(self.dialect.sql(sql), tuple(params))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.raw.executemany(self.dialect.sql(sql), rows)

    def fetchone(self) -> tuple[Any, ...] | None:
        row = self.raw.fetchone()
        return tuple(row) if row is not None else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.raw.fetchall()]

    @property
    def rowcount(self) -> int:
        return int(self.raw.rowcount)

    #: Whether checks wait for the COMMIT (``expect_one``) instead of reading a row count.
    deferred_checks = False


#: SQLSTATE of a failed ``expect_one`` (division_by_zero: nothing else in an append divides).
CHECK_FAILED = "22012"


class PipelinedCur(Cur):
    """A PostgreSQL cursor in eventsourcing's pipelined insert transaction (ADR 0084):
    reading a result waits for the server, so the inline projection reads none in the
    common case and checks with ``expect_one`` at the COMMIT instead."""

    __slots__ = ()

    deferred_checks = True

    def expect_one(self, table: str, where: dict[str, Any]) -> None:
        """Fail this transaction (``CHECK_FAILED``, at its COMMIT) unless exactly one row
        of ``table`` matches ``where`` then."""
        terms = " AND ".join(f"{column} = ?" for column in where)
        self.execute(f"SELECT 1 / (count(*) = 1)::int FROM {{t}}{table} WHERE {terms}", tuple(where.values()))

    @property
    def rowcount(self) -> int:
        with self.raw.connection.pipeline():  # (a nested block syncs when it ends)
            pass
        return int(self.raw.rowcount)


def is_transient(exc: BaseException) -> bool:
    """Locked/busy SQLite, dropped or refused PostgreSQL connections."""
    if isinstance(exc, StorageBusy):
        return True
    if isinstance(exc, OperationalError) and exc.__cause__ is not None:
        return is_transient(exc.__cause__)  # eventsourcing wraps the driver's error
    if isinstance(exc, OperationalError):
        text = str(exc).lower()
        return any(w in text for w in ("locked", "busy", "connection", "timeout", "closed"))
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "locked" in text or "busy" in text
    try:
        import psycopg
    except ImportError:  # pragma: no cover - postgres extra not installed
        return False
    # (class 54, program limit exceeded: a tsvector over 1 MB, issue 36; no retry helps)
    if isinstance(exc, psycopg.OperationalError) and (getattr(exc, "sqlstate", None) or "").startswith("54"):
        return False
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


@contextmanager
def storage_errors() -> Iterator[None]:
    """Translate driver errors: transient ones to ``StorageBusy``, others to ``StorageError``."""
    try:
        yield
    except StorageError:  # (StorageBusy included)
        raise
    except Exception as exc:
        failure = storage_failure(exc)
        if failure is None:
            raise
        raise failure from exc


def storage_failure(exc: BaseException) -> StorageError | None:
    """A driver error as ``StorageBusy`` (transient) or ``StorageError`` naming its
    cause; None for anything that is not a database error."""
    if not (
        isinstance(exc, (PersistenceError, sqlite3.Error))
        or type(exc).__module__.startswith("psycopg")  # (psycopg_pool too)
    ):
        return None
    cause = storage_cause(exc)
    details = {"cause": cause, "error_class": type(exc).__name__}
    if is_transient(exc):
        return StorageBusy(f"the database is busy or unreachable: {cause}", details=details)
    return StorageError(f"storage failed: {cause}", details=details)


class ImmediateTransaction(SQLiteTransaction):
    """The library's SQLite transaction (commit, rollback, error mapping), begun
    IMMEDIATE: it takes the write lock before its first read."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        return cursor


def drop_dead_connections(datastore: Any) -> None:
    """psycopg_pool's public ``check()``: the pool drops its closed idle connections."""
    try:
        datastore.pool.check()
    except Exception:  # noqa: BLE001 - the retry will report what is still wrong
        pass


class Database:
    """Transactions on the datastore eventsourcing built (shared pool and file)."""

    def __init__(self, datastore: Any, dialect: Dialect) -> None:
        self.datastore = datastore
        self.dialect = dialect

    def recover(self) -> None:
        """After a transient failure: drop dead pooled connections (PostgreSQL) so the
        retry gets a live one instead of timing out on each dead one in turn."""
        if self.dialect.is_postgres:
            drop_dead_connections(self.datastore)

    def _pg_cur(self, conn: Any) -> Cur:
        from psycopg.rows import tuple_row

        return Cur(conn.cursor(row_factory=tuple_row), self.dialect)

    @contextmanager
    def read(self) -> Iterator[Cur]:
        """A read-only transaction on one consistent snapshot."""
        with storage_errors():
            if self.dialect.is_postgres:
                from psycopg import IsolationLevel

                with self.datastore.get_connection() as conn:
                    # (psycopg's BEGIN carries them, where a SET TRANSACTION was a round
                    # trip more; put back before the connection returns to the pool)
                    conn.isolation_level, conn.read_only = IsolationLevel.REPEATABLE_READ, True
                    try:
                        with conn.transaction(force_rollback=True):
                            yield self._pg_cur(conn)
                    finally:
                        if not conn.closed:
                            conn.isolation_level, conn.read_only = None, None
            else:
                with self.datastore.transaction(commit=False) as c:
                    yield Cur(c.sqlite_cursor, self.dialect)

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """One single-statement read, outside an explicit transaction (no BEGIN/ROLLBACK)."""
        with storage_errors():
            if self.dialect.is_postgres:
                with self.datastore.get_connection() as conn:
                    return self._pg_cur(conn).execute(sql, params).fetchone()
            with self.datastore.get_connection(commit=False) as conn:
                return Cur(conn.cursor().sqlite_cursor, self.dialect).execute(sql, params).fetchone()

    @contextmanager
    def write(self, lock_sql: str | None = None, *, durable: bool = True) -> Iterator[Cur]:
        """A write transaction that holds the writer lock from its first statement.

        ``lock_sql`` (PostgreSQL) serializes it with event inserts. ``durable=False``
        (caches): the commit does not wait for the disk; a crash can lose it, never
        corrupt the database.
        """
        with storage_errors():
            if self.dialect.is_postgres:
                with self.datastore.get_connection() as conn, conn.transaction():
                    cur = self._pg_cur(conn)
                    if not durable:
                        cur.execute("SET LOCAL synchronous_commit = off")
                    if lock_sql:
                        cur.execute(lock_sql)
                    yield cur
            else:
                with self.datastore.get_connection(commit=True) as conn:
                    pragma = conn.cursor().sqlite_cursor.execute
                    if not durable:
                        pragma("PRAGMA synchronous=NORMAL")
                    try:
                        with ImmediateTransaction(conn, commit=True) as c:
                            yield Cur(c.sqlite_cursor, self.dialect)
                    finally:
                        if not durable:  # the pooled connection goes back fully durable
                            pragma("PRAGMA synchronous=FULL")
