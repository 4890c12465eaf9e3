"""Is the store to be opened read-only? (issue 36, ADR 0071)

A SELECT-only PostgreSQL role (an auditor, a reporting replica) or a SQLite file this
process cannot write is served read-only: nothing is created, migrated, caught up or
indexed, every query runs and every write is refused before it starts
(``application.handlers.read_only_handlers``).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs, urlparse

from context_compaction.domain.errors import StorageError

from .database import Dialect, qualified_name

#: Why this connection can only read (NULL: it can write): our events table exists and
#: the role may not INSERT into it, or the server or the role's default is read-only.
_PG_READ_ONLY_SQL = (
    "SELECT CASE WHEN pg_is_in_recovery() THEN 'the server is a standby'"
    " WHEN current_setting('default_transaction_read_only') = 'on' THEN 'transactions are read-only by default'"
    " WHEN to_regclass(%s) IS NOT NULL AND NOT has_table_privilege(to_regclass(%s), 'INSERT')"
    " THEN 'the role may not write the events table' END"
)


def postgres_read_only(conn: Any, schema: str | None, events_table: str) -> str | None:
    """Why ``conn``'s role can only read this schema, or None (it can write)."""
    events = qualified_name(schema, events_table)
    row = conn.execute(_PG_READ_ONLY_SQL, (events, events)).fetchone()
    return str(row[0]) if row and row[0] else None


def sqlite_read_only(dialect: Dialect, env: dict[str, str]) -> str | None:
    """Why an existing SQLite file is to be opened read-only (issue 36), or None: a file
    this process cannot write, or a URI with ``mode=ro``. SQLite reads a WAL database
    only beside its -shm file: when the directory cannot take one and there is none
    (no writer has the file open), that is said, not "the database is read-only"."""
    if dialect.is_postgres:
        return None
    path = env["SQLITE_DBNAME"]
    if path.startswith("file:"):
        query = parse_qs(urlparse(path).query)
        return "the URI opens it read-only" if (query.get("mode") or [""])[-1] == "ro" else None
    if not os.path.exists(path) or os.access(path, os.W_OK):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK) and not os.path.exists(path + "-shm"):
        cause = ("the file and its directory are read-only: SQLite reads a WAL database only beside its -shm "
                 "file, which it cannot create here (let this user write the directory, or read a copy)")
        raise StorageError(cause, details={"cause": cause})
    return "the file is not writable"
