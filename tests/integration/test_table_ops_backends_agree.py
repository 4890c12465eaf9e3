"""The table operations the one handler set is written
against must do the same on SQL and on the memory dicts, for any call a new event's
handler may make ("a new event is 4 files": its author writes only ``handlers.py`` and
``schema.py``; nothing tells them which calls the memory twin gets wrong).

Each test runs one operation on SQLite (``SqlOps``) and on ``memory.tables.Tables`` and
compares rows, lookups and errors. All fail today.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError

from context_compaction.infrastructure.database import Cur, Dialect
from context_compaction.infrastructure.memory.tables import Tables
from context_compaction.infrastructure.readmodel import SCHEMA
from context_compaction.infrastructure.readmodel.ops import SqlOps
from context_compaction.infrastructure.readmodel.schema import PROJECTED


def _both() -> tuple[SqlOps, Tables, sqlite3.Connection]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    dialect = Dialect("sqlite")
    for statement in SCHEMA:
        conn.execute(dialect.sql(statement))
    return SqlOps(Cur(conn.cursor(), Dialect("sqlite"))), Tables(), conn


def _sql_rows(conn: sqlite3.Connection, table: str) -> list[tuple[Any, ...]]:
    spec = next(t for t in PROJECTED if t.name == table)
    return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY {', '.join(spec.key)}")]


def _session(sid: str, agg: str, limit: int | None = None) -> tuple[Any, ...]:
    return (sid, agg, "m", limit, 1, 1, 0, None, 0, 0, 0, 0, "t0", "t0", "{}", 0, None)


def test_an_update_of_a_key_column_moves_the_row_in_memory_as_in_sql() -> None:
    """Memory stores the changed row under its OLD key: a lookup by the new key finds
    nothing (SQL finds the row), and the old key still answers with the new values."""
    sql, memory, conn = _both()
    for ops in (sql, memory):
        ops.insert("rm_pins", [("s", 2)])
        ops.update("rm_pins", {"session_id": "s", "seq": 2}, values={"seq": 5})
    assert memory.rows("rm_pins") == _sql_rows(conn, "rm_pins") == [("s", 5)]
    found = [ops.select_one("rm_pins", ("seq",), {"session_id": "s", "seq": 5}) for ops in (sql, memory)]
    assert found == [(5,), (5,)]
    gone = [ops.select_one("rm_pins", ("seq",), {"session_id": "s", "seq": 2}) for ops in (sql, memory)]
    assert gone == [None, None]


def test_an_update_onto_a_taken_unique_column_raises_in_memory_as_in_sql() -> None:
    """SQL refuses an UPDATE that breaks ``UNIQUE (aggregate_id)``; memory accepts it,
    so a projection that fails (and rolls back its events) on SQLite commits in memory."""
    sql, memory, conn = _both()
    for ops in (sql, memory):
        ops.insert("rm_sessions", [_session("a", "agg-a"), _session("b", "agg-b")])
    with pytest.raises(sqlite3.IntegrityError):
        sql.update("rm_sessions", {"session_id": "b"}, values={"aggregate_id": "agg-a"})
    with pytest.raises(IntegrityError):
        memory.update("rm_sessions", {"session_id": "b"}, values={"aggregate_id": "agg-a"})
    assert memory.rows("rm_sessions") == _sql_rows(conn, "rm_sessions")


def test_a_where_on_null_matches_no_row_in_memory_as_in_sql() -> None:
    """SQL's ``col = NULL`` is never true; the memory scan compares ``None == None``."""
    sql, memory, conn = _both()
    for ops in (sql, memory):
        ops.insert("rm_sessions", [_session("a", "agg-a")])  # active_checkpoint_id NULL
        ops.update("rm_sessions", {"active_checkpoint_id": None}, values={"deleted": 1})
    assert sql.rowcount == 0
    assert memory.rowcount == sql.rowcount
    assert memory.rows("rm_sessions") == _sql_rows(conn, "rm_sessions")


def test_an_increment_of_a_null_column_gives_null_in_memory_as_in_sql() -> None:
    """SQL: ``NULL + 1`` is NULL. Memory: ``None + 1`` raises TypeError (a projection
    that fails only on the memory backend)."""
    sql, memory, conn = _both()
    for ops in (sql, memory):
        ops.insert("rm_sessions", [_session("a", "agg-a", limit=None)])
    sql.update("rm_sessions", {"session_id": "a"}, add={"agent_token_limit": 1})
    memory.update("rm_sessions", {"session_id": "a"}, add={"agent_token_limit": 1})
    assert memory.rows("rm_sessions") == _sql_rows(conn, "rm_sessions")


def test_an_upsert_that_updates_reports_one_row_in_memory_as_in_sql() -> None:
    """``rowcount`` is "the rows the last operation inserted, changed or deleted" (ops.py).
    Memory's upsert of a taken key (``update_row``) never sets it: it reports whatever
    the operation before left, here 0, so ``_register_command`` would take a command's
    own later span for another command's id (a refusal under ``strict``)."""
    sql, memory, conn = _both()
    for ops in (sql, memory):
        ops.upsert("rm_commands", ("c", "s", "append_messages", 1, 2), ("last_seq",), ("session_id", "kind"))
        ops.delete("rm_pins", {"session_id": "s"})  # nothing to delete: rowcount 0
        ops.upsert("rm_commands", ("c", "s", "append_messages", 3, 4), ("last_seq",), ("session_id", "kind"))
    assert sql.rowcount == 1
    assert memory.rowcount == sql.rowcount
    assert memory.rows("rm_commands") == _sql_rows(conn, "rm_commands")
