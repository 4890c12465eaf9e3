"""The SQLite pool's writer connection (infrastructure/eventstore/internals/sqlite.py, ADR 0016)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from eventsourcing.persistence import (
    ConnectionNotFromPoolError,
    ConnectionPoolClosedError,
    ConnectionUnavailableError,
)

from context_compaction.infrastructure.eventstore.internals import StatementCachingPool


def make_pool(tmp_path: Path, **kwargs: object) -> StatementCachingPool:
    return StatementCachingPool(db_name=str(tmp_path / "pool.db"), **kwargs)  # type: ignore[arg-type]


def test_writes_share_one_connection_apart_from_the_readers(tmp_path: Path) -> None:
    pool = make_pool(tmp_path)
    writer = pool.get_connection(is_writer=True)
    reader = pool.get_connection(is_writer=False)
    assert reader is not writer
    writer._sqlite_conn.execute("CREATE TABLE t (x INTEGER)")
    pool.put_connection(reader)
    pool.put_connection(writer)
    again = pool.get_connection(is_writer=True)
    assert again is writer and again.is_writer is True
    pool.put_connection(again)
    assert writer.is_writer is None and not writer.in_use.locked()
    pool.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed with the pool
        writer._sqlite_conn.execute("SELECT 1")
    with pytest.raises(ConnectionPoolClosedError):
        pool.get_connection(is_writer=True)


def test_a_second_writer_waits_for_the_first_and_times_out(tmp_path: Path) -> None:
    pool = make_pool(tmp_path)
    first = pool.get_connection(is_writer=True)
    outcome: list[object] = []

    def second() -> None:
        try:
            outcome.append(pool.get_connection(timeout=0.05, is_writer=True))
        except ConnectionUnavailableError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    thread.join()
    assert isinstance(outcome[0], ConnectionUnavailableError)
    waiting = threading.Thread(target=lambda: outcome.append(pool.get_connection(timeout=5, is_writer=True)))
    waiting.start()
    time.sleep(0.05)
    assert len(outcome) == 1  # still waiting for the writer to come back
    pool.put_connection(first)
    waiting.join()
    assert outcome[1] is first
    pool.put_connection(first)
    pool.close()


def test_a_writer_closed_by_its_max_age_is_replaced(tmp_path: Path) -> None:
    pool = make_pool(tmp_path, max_age=0.05)
    first = pool.get_connection(is_writer=True)
    time.sleep(0.1)
    assert not first.closed  # never closed while in use
    pool.put_connection(first)
    assert first.closed  # closed as it came back, not left to its timer
    second = pool.get_connection(is_writer=True)
    assert second is not first and not second.closed
    second._sqlite_conn.execute("SELECT 1")
    pool.put_connection(second)
    pool.close()


def test_in_memory_databases_keep_the_pools_read_write_exclusion() -> None:
    pool = StatementCachingPool(db_name="file:pooltest?mode=memory&cache=shared")
    writer = pool.get_connection(is_writer=True)
    assert pool._writer is None  # the base class issued it
    with pytest.raises(ConnectionUnavailableError):
        pool.get_connection(timeout=0.05, is_writer=False)  # readers wait for the writer
    pool.put_connection(writer)
    pool.close()


def test_a_writer_put_back_twice_is_refused_and_the_lock_stays_consistent(tmp_path: Path) -> None:
    pool = make_pool(tmp_path)
    writer = pool.get_connection(is_writer=True)
    pool.put_connection(writer)
    with pytest.raises(ConnectionNotFromPoolError):
        pool.put_connection(writer)
    again = pool.get_connection(timeout=0.5, is_writer=True)  # the lock was released once
    assert again is writer
    pool.put_connection(again)
    pool.close()


def test_a_failed_connect_releases_the_writer_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = make_pool(tmp_path)
    real = pool._create_connection
    monkeypatch.setattr(pool, "_create_connection", lambda: (_ for _ in ()).throw(sqlite3.OperationalError("disk")))
    with pytest.raises(sqlite3.OperationalError):
        pool.get_connection(is_writer=True)
    monkeypatch.setattr(pool, "_create_connection", real)
    writer = pool.get_connection(timeout=0.5, is_writer=True)  # not left locked
    writer._sqlite_conn.execute("SELECT 1")
    pool.put_connection(writer)
    pool.close()
