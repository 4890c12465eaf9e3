"""Storage failures name their cause (issue 13, item 5).

A database held by another process, a full disk, an unreachable or locked PostgreSQL:
each is ``storage_error`` with a message an operator can act on (and never a
password), the command changes nothing, and nothing waits forever.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL, RUN_ID
from cli_inprocess import run_cli
from context_compaction import Settings, bootstrap
from context_compaction.domain.errors import InvalidCommand, StorageError
from context_compaction.infrastructure.cli import EXIT_FAILED
from helpers import Harness, err, table_locked, ok, user


def _session(h: Harness) -> None:
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("hello")]}))


def test_a_database_held_exclusively_by_another_process_is_a_storage_error_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXC_SQLITE_LOCK_TIMEOUT", "1")  # for the CLI run below
    path = tmp_path / "held.db"
    bootstrap(Settings(database_url=f"sqlite:///{path}")).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StorageError) as raised:
            bootstrap(Settings(database_url=f"sqlite:///{path}", sqlite_lock_timeout=1))
        assert raised.value.code == "storage_error"
        assert "locked by another connection" in raised.value.message
        assert str(path) in raised.value.message
        assert run_cli(["sessions", "--db", str(path)]) == EXIT_FAILED
        assert "error: storage_error: cannot open the database" in capsys.readouterr().err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    bootstrap(Settings(database_url=f"sqlite:///{path}")).close()  # free again: it opens


def test_a_full_disk_says_so_and_writes_nothing(make_harness: Any) -> None:
    h: Harness = make_harness("full")
    _session(h)
    events = h.events()
    if h.is_postgres:
        # A server's full disk cannot be staged here; the cause comes from the SQLSTATE
        # of the error the server sends (a real psycopg error class).
        from context_compaction.infrastructure.database import storage_cause

        assert storage_cause(psycopg.errors.DiskFull("could not extend file")) == "the disk is full"
        return
    pages = h.query("PRAGMA page_count")[0][0]
    db = h.inspect.db
    with db.write() as cur:  # the writer connection may not grow the file any more
        cur.execute(f"PRAGMA max_page_count = {pages}")
    error = err(h.do({"type": "append_messages", "session_id": "s",
                      "messages": [user("x" * 200_000)]}), "storage_error")
    assert "the disk is full" in error["message"], error
    assert h.events() == events
    with db.write() as cur:
        cur.execute("PRAGMA max_page_count = 1073741823")
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("x" * 200_000)]}))


def test_a_locked_events_table_fails_a_write_in_a_few_lock_timeouts_not_fifty(pg_databases: Any) -> None:
    """Loading the session retries a busy read a few times; eventsourcing's own ten
    retries of every event query inside each of them made it fifty lock waits."""
    h: Harness = pg_databases.harness("locked-events", postgres={"lock_timeout": 1})
    _session(h)
    fresh = h.new_bus()  # holds no copy of the session: it must load it
    with table_locked(h, "ACCESS EXCLUSIVE"):
        began = time.monotonic()
        result = fresh.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [user("x")]})
        elapsed = time.monotonic() - began
    error = err(result, "storage_error")
    assert "lock wait timed out" in error["message"], error
    assert elapsed < 12, f"{elapsed:.0f} s for a write against a table locked elsewhere"
    assert ok(fresh.dispatch_json({"type": "get_history", "session_id": "s"}))["messages"][0]["content"] == "hello"


@pytest.mark.postgres
def test_an_unreachable_postgres_is_named_by_host_and_port_never_by_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql://app:s3cret-pw@127.0.0.1:1/ctxc"  # nothing listens on port 1
    with pytest.raises(StorageError) as raised:
        bootstrap(Settings(database_url=url, postgres={"connect_timeout": 2}))
    message = raised.value.message
    assert message == "PostgreSQL at 127.0.0.1:1 (database 'ctxc') is unreachable: connection refused"
    assert "s3cret" not in str(raised.value.to_dict())
    assert run_cli(["sessions", "--db", url]) == EXIT_FAILED
    out = capsys.readouterr()
    assert "127.0.0.1:1" in out.err and "s3cret" not in out.err + out.out


@pytest.mark.postgres
def test_a_locked_table_makes_a_postgres_read_fail_in_time_instead_of_hanging(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("locked", postgres={"lock_timeout": 1})
    _session(h)
    result: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: result.update(h.do({"type": "get_history", "session_id": "s"})))
    try:
        with table_locked(h, "ACCESS EXCLUSIVE", "rm_sessions"):
            reader.start()
            reader.join(timeout=30)
            assert not reader.is_alive(), "the read waited for the lock indefinitely"
    finally:
        reader.join(timeout=30)
    error = err(result, "storage_error")
    assert "lock wait timed out" in error["message"], error
    assert ok(h.do({"type": "get_history", "session_id": "s"}))["messages"][0]["content"] == "hello"


@pytest.mark.postgres
def test_a_schema_name_from_configuration_is_never_interpolated_into_sql() -> None:
    canary = f"ctxc_{RUN_ID}_canary_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {canary}")
        conn.execute(f"CREATE TABLE {canary}.victim (x int)")
    hostile = f'ctxc_{RUN_ID}_x"; DROP TABLE {canary}.victim; --'
    try:
        for settings in ({"postgres": {"schema": hostile}}, {"postgres": {"schema": "Upper"}}):
            with pytest.raises(InvalidCommand, match="schema name"):
                bootstrap(Settings(database_url=POSTGRES_URL, **settings))
        with pytest.raises(InvalidCommand, match="schema name"):
            bootstrap(Settings(database_url=f"{POSTGRES_URL}?schema={canary}%22%3B"))
        with psycopg.connect(POSTGRES_URL) as conn:
            assert conn.execute(f"SELECT count(*) FROM {canary}.victim").fetchone() == (0,)
            names = [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall()]
        assert not [n for n in names if n.startswith(f"ctxc_{RUN_ID}_x")]
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {canary} CASCADE")


@pytest.mark.postgres
@pytest.mark.parametrize("word", ["order", "user", "int"])
def test_a_schema_name_that_is_a_reserved_word_is_refused_by_name_and_creates_nothing(word: str) -> None:
    # (the name check lets it through; eventsourcing's "schema.type" text cannot parse it)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        assert conn.execute("SELECT to_regnamespace(%s)", (word,)).fetchone() == (None,)
    with pytest.raises(InvalidCommand, match=f"schema name '{word}' is a reserved SQL word"):
        bootstrap(Settings(database_url=f"{POSTGRES_URL}?schema={word}"))
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        assert conn.execute("SELECT to_regnamespace(%s)", (word,)).fetchone() == (None,)


def test_an_events_table_dropped_by_hand_is_named_at_start_and_nothing_is_created(make_harness: Any) -> None:
    """The schema mark is current but the events are gone (review of ADR 0090): the
    start refuses and names the table; before, every command failed with a bare
    UndefinedTable / SQLITE_ERROR (and PostgreSQL's starts had made an empty one)."""
    h: Harness = make_harness("dropped")
    _session(h)
    table = h.inspect.events_table.qualified
    h.execute(f"DROP TABLE {table}")
    h.bus.close()
    with pytest.raises(StorageError) as raised:
        h.new_bus()
    assert raised.value.code == "storage_error"
    assert "events table" in raised.value.message and "missing" in raised.value.message
    assert table in raised.value.message
    with pytest.raises(StorageError):  # (nothing was created: the next start says the same)
        h.new_bus()
