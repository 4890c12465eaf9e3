"""One projection for every read model (ADR 0050): a new event is 4 files.

Pins what keeps it so: every Session event is dispatched by the one handler set, no
other infrastructure module names a projected event, the tables come from one
declaration with the same columns everywhere, and the two implementations of the
table operations (SQL on SQLite, dicts in memory) agree row for row and count for count.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.domain import CanMutateAggregate
from eventsourcing.persistence import IntegrityError

from context_compaction.domain.session import Session
from context_compaction.infrastructure.database import Cur, Dialect
from context_compaction.infrastructure.memory.tables import COLUMNS, Tables
from context_compaction.infrastructure.readmodel import PROJECTED_TABLES, SCHEMA
from context_compaction.infrastructure.readmodel.handlers import EventHandlers
from context_compaction.infrastructure.readmodel.ops import SqlOps
from context_compaction.infrastructure.readmodel.schema import PROJECTED, TABLES

INFRASTRUCTURE = Path(__file__).resolve().parents[2] / "infrastructure"
#: Events some module besides the handlers reads for its own purpose (not a projection).
OTHER_READERS = {
    Session.Started: {"eventstore/feed.py"},
    # (verify.py: the search rows it compares come from message bodies, ADR 0049;
    # purge.py: it rewrites the content fields of a purged session's events, ADR 0072)
    Session.MessageAppended: {"eventstore/mapper.py", "readmodel/schema.py", "memory/recorder.py", "verify.py",
                              "purge.py"},
    Session.CheckpointCommitted: {"timeline.py", "memory/stores.py", "purge.py"},
    Session.HistoryInvalidated: {"purge.py"},
    # (purge.py: a write racing a purge looks for the session's Purged event, ADR 0072)
    Session.Purged: {"purge.py"},
}


def _session_events() -> set[type]:
    return {
        value for value in vars(Session).values()
        if isinstance(value, type) and issubclass(value, CanMutateAggregate)
        # (the aggregate's base event class, and Created: unused, Started creates a session)
        and value not in (Session.Event, Session.Created)
    }


def test_every_session_event_has_a_handler() -> None:
    dispatched = set(EventHandlers().handler_table()) | {Session.Started, Session.MessageAppended}
    assert _session_events() == dispatched


def test_no_infrastructure_module_but_the_handlers_names_a_projected_event() -> None:
    """So that the memory backend (or anything else) needs no code of its own per event."""
    sources = {
        str(path.relative_to(INFRASTRUCTURE)): path.read_text()
        for path in INFRASTRUCTURE.rglob("*.py")
    }
    for event in _session_events():
        naming = {name for name, text in sources.items()
                  if f"Session.{event.__name__}" in text}
        assert naming - {"readmodel/handlers.py"} == OTHER_READERS.get(event, set()), event.__name__


def _sqlite() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    dialect = Dialect("sqlite")
    for statement in SCHEMA:
        conn.execute(dialect.sql(statement))
    return conn


def test_every_declared_table_has_the_same_columns_in_sql_and_in_memory() -> None:
    conn = _sqlite()
    assert set(PROJECTED_TABLES) == set(COLUMNS) == set(Tables().data) == {t.name for t in PROJECTED}
    for table in PROJECTED:
        info = conn.execute(f"PRAGMA table_info({table.name})").fetchall()
        assert tuple(row[1] for row in info) == table.column_names == COLUMNS[table.name]
        key = tuple(row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5]))
        assert key == table.key
        assert PROJECTED_TABLES[table.name] == ", ".join(table.key)


def _both() -> tuple[SqlOps, Tables, sqlite3.Connection]:
    conn = _sqlite()
    return SqlOps(Cur(conn.cursor(), Dialect("sqlite"))), Tables(), conn


def _same(sql: SqlOps, memory: Tables, conn: sqlite3.Connection, *, rowcount: int | None = None) -> None:
    for table in PROJECTED:
        order = ", ".join(table.key)
        rows = [tuple(r) for r in conn.execute(f"SELECT * FROM {table.name} ORDER BY {order}")]
        assert rows == memory.rows(table.name), table.name
    if rowcount is not None:
        assert sql.rowcount == memory.rowcount == rowcount


def _run(ops: Any, name: str, *args: Any, **kwargs: Any) -> None:
    getattr(ops, name)(*args, **kwargs)


def test_each_table_operation_does_the_same_in_sql_and_in_memory() -> None:
    sql, memory, conn = _both()

    def both(name: str, *args: Any, rowcount: int | None = None, **kwargs: Any) -> None:
        for ops in (sql, memory):
            _run(ops, name, *args, **kwargs)
        _same(sql, memory, conn, rowcount=rowcount)

    session = ("s", "agg", "m", None, 1, 1, 0, None, 0, 0, 0, 0, "t0", "t0", "{}", 0, None)
    both("insert", "rm_sessions", [session])
    both("insert", "rm_messages", [("s", seq, 1, seq + 10) for seq in range(1, 6)])
    both("insert", "rm_pins", [("s", 2), ("s", 3)], if_absent=True, rowcount=2)
    both("insert", "rm_pins", [("s", 3)], if_absent=True, rowcount=0)  # taken: skipped
    both("update", "rm_sessions", {"session_id": "s"}, values={"version": 2, "active_checkpoint_id": None},
         add={"message_count": 5}, rowcount=1)
    # A range of messages hidden once: the second time nothing matches (rowcount 0).
    both("update", "rm_messages", {"session_id": "s", "visible": 1}, values={"visible": 0},
         between=("seq", 2, 4), rowcount=3)
    both("update", "rm_messages", {"session_id": "s", "visible": 1}, values={"visible": 0},
         between=("seq", 2, 4), rowcount=0)
    both("delete", "rm_pins", {"session_id": "s"}, between=("seq", 1, 2), rowcount=1)
    both("delete", "rm_pins", {"session_id": "s", "seq": 3}, rowcount=1)
    # A command's span grows; another session's use of its id changes nothing.
    both("upsert", "rm_commands", ("c", "s", "append_messages", 1, 2), ("last_seq",), ("session_id", "kind"),
         rowcount=1)
    both("upsert", "rm_commands", ("c", "s", "append_messages", 3, 4), ("last_seq",), ("session_id", "kind"),
         rowcount=1)
    both("upsert", "rm_commands", ("c", "t", "append_messages", 5, 5), ("last_seq",), ("session_id", "kind"),
         rowcount=0)
    assert memory.rows("rm_commands") == [("c", "s", "append_messages", 1, 4)]
    for ops in (sql, memory):
        assert ops.select_one("rm_sessions", ("session_id", "version"), {"aggregate_id": "agg"}) == ("s", 2)
        assert ops.select_one("rm_sessions", ("learned_windows",), {"session_id": "nobody"}) is None


@pytest.mark.parametrize(("table", "row", "taken"), [
    ("rm_messages", ("s", 1, 1, 9), "key"),
    ("rm_sessions", ("s2", "agg", "m", None, 1, 1, 0, None, 0, 0, 0, 0, "t", "t", "{}", 0, None), "unique"),
])
def test_a_taken_key_or_unique_column_raises_in_both(table: str, row: tuple[Any, ...], taken: str) -> None:
    sql, memory, conn = _both()
    session = ("s", "agg", "m", None, 1, 1, 0, None, 0, 0, 0, 0, "t0", "t0", "{}", 0, None)
    for ops in (sql, memory):
        ops.insert("rm_sessions", [session])
        ops.insert("rm_messages", [("s", 1, 1, 7)])
    with pytest.raises(sqlite3.IntegrityError):
        sql.insert(table, [row])
    with pytest.raises(IntegrityError, match=taken):
        memory.insert(table, [row])
    _same(sql, memory, conn)


def test_a_failed_memory_transaction_undoes_every_operation() -> None:
    memory = Tables()
    session = ("s", "agg", "m", None, 1, 1, 0, None, 0, 0, 0, 0, "t0", "t0", "{}", 0, None)
    memory.insert("rm_sessions", [session])
    memory.insert("rm_pins", [("s", 1)])
    before = {name: memory.rows(name) for name in TABLES}
    with pytest.raises(IntegrityError), memory.transaction():
        memory.update("rm_sessions", {"session_id": "s"}, add={"message_count": 1})
        memory.delete("rm_pins", {"session_id": "s", "seq": 1})
        memory.upsert("rm_commands", ("c", "s", "append_messages", 1, 1), ("last_seq",), ("session_id",))
        memory.insert("rm_sessions", [session])  # the key is taken
    assert {name: memory.rows(name) for name in TABLES} == before
