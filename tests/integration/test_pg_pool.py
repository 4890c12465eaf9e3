"""The PostgreSQL pool hands out its newest idle connection (ADR 0067).

psycopg_pool takes idle connections oldest first, so one writer cycled through all
``pool_size`` of them, each meeting a cold server backend: ~20 % more server CPU per
append at eight writers. These pin what ``infrastructure/eventstore/internals/pool.py`` relies
on in psycopg_pool and what it must keep: the other connections stay open for bursts,
the pool's own check keeps the order, an expired spare is still replaced, and
shrinking still closes the overflow.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

import psycopg
import psycopg_pool
import pytest

from backends import POSTGRES_URL
from context_compaction.infrastructure.eventstore.internals import NewestFirst, newest_idle_first
from helpers import Harness, ok

pytestmark = pytest.mark.postgres


def _pid(pool: Any) -> int:
    with pool.connection() as conn:
        return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def _pool(size: int = 3, **kwargs: Any) -> Any:
    pool = psycopg_pool.ConnectionPool(POSTGRES_URL, min_size=size, max_size=size, open=False, **kwargs)
    return pool


def test_the_private_names_it_uses_are_there() -> None:
    pool = _pool()
    try:
        assert type(pool._pool) is deque  # (what ``newest_idle_first`` replaces)
        assert hasattr(pool._lock, "acquire")
    finally:
        pool.close()


def test_one_caller_at_a_time_gets_the_same_connection_and_the_others_stay_open() -> None:
    pool = _pool(3)
    assert newest_idle_first(pool)
    pool.open(wait=True)
    try:
        pids = {_pid(pool) for _ in range(12)}
        assert len(pids) == 1
        assert pool.get_stats()["pool_size"] == 3  # (the other two are idle, not closed)
        # Two at once: two connections; the newest returned is the next one handed out.
        a, b = pool.getconn(), pool.getconn()
        pid_a = a.execute("SELECT pg_backend_pid()").fetchone()[0]
        pid_b = b.execute("SELECT pg_backend_pid()").fetchone()[0]
        assert pid_a != pid_b
        pool.putconn(a)
        pool.putconn(b)
        assert _pid(pool) == pid_b
    finally:
        pool.close()


def test_the_pools_own_check_keeps_the_order_and_every_connection() -> None:
    pool = _pool(3)
    newest_idle_first(pool)
    pool.open(wait=True)
    try:
        a, b, c = pool.getconn(), pool.getconn(), pool.getconn()
        for conn in (a, b, c):
            pool.putconn(conn)
        warm = c.info.backend_pid  # (returned last)
        pool.check()  # (what ``Database.recover`` calls after a transient failure)
        assert isinstance(pool._pool, NewestFirst)
        assert pool.get_stats()["pool_available"] == 3
        assert [_pid(pool) for _ in range(5)] == [warm] * 5
    finally:
        pool.close()


def test_an_expired_spare_is_handed_out_once_and_replaced() -> None:
    """psycopg_pool discards an expired connection when it comes back; in newest-first
    order a spare would never come back, and outlive ``conn_max_age`` forever."""
    pool = _pool(3, max_lifetime=1.5)
    newest_idle_first(pool)
    pool.open(wait=True)
    try:
        first = {c.info.backend_pid for c in pool._pool}
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and first & {c.info.backend_pid for c in pool._pool}:
            _pid(pool)
            time.sleep(0.05)
        assert not first & {c.info.backend_pid for c in pool._pool}  # (every one replaced)
        pool.wait(5)
        assert pool.get_stats()["pool_size"] == 3
        assert len({_pid(pool) for _ in range(5)}) == 1  # (and newest first again)
    finally:
        pool.close()


def test_shrinking_still_closes_the_overflow() -> None:
    pool = psycopg_pool.ConnectionPool(POSTGRES_URL, min_size=1, max_size=3, max_idle=0.5, open=False)
    newest_idle_first(pool)
    pool.open(wait=True)
    try:
        burst = [pool.getconn() for _ in range(3)]
        for conn in burst:
            pool.putconn(conn)
        assert pool.get_stats()["pool_size"] == 3
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and pool.get_stats()["pool_size"] > 1:
            time.sleep(0.1)
        assert pool.get_stats()["pool_size"] == 1
        assert len({_pid(pool) for _ in range(3)}) == 1
    finally:
        pool.close()


def test_calling_it_again_keeps_the_order_and_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    pool = _pool(2)
    assert newest_idle_first(pool)
    idle = pool._pool
    assert newest_idle_first(pool)
    assert pool._pool is idle
    assert "internals changed" not in caplog.text
    pool.close()


def test_threads_share_the_pool_without_losing_a_connection() -> None:
    pool = _pool(2)
    newest_idle_first(pool)
    pool.open(wait=True)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                _pid(pool)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors
        stats = pool.get_stats()
        assert stats["pool_size"] == stats["pool_available"] == 2
    finally:
        pool.close()


def test_a_pool_built_otherwise_keeps_its_own_order(caplog: pytest.LogCaptureFixture) -> None:
    class Other:
        _pool: list[Any] = []
        _lock = threading.Lock()

    other = Other()
    assert newest_idle_first(other) is False
    assert other._pool == []
    assert "pool internals changed" in caplog.text


def test_the_store_reuses_one_backend_for_sequential_commands(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("pool", postgres={"pool_size": 4})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    pool = h.bus.services.extra["app"].factory.datastore.pool
    assert isinstance(pool._pool, NewestFirst)
    pids = [c.info.backend_pid for c in pool._pool]
    assert len(pids) >= 2
    with psycopg.connect(POSTGRES_URL, autocommit=True) as watcher:
        t0 = watcher.execute("SELECT clock_timestamp()").fetchone()[0]
        for i in range(8):
            ok(h.do({"type": "append_messages", "session_id": "s",
                     "messages": [{"role": "user", "content": f"m{i}"}]}))
            ok(h.do({"type": "get_history", "session_id": "s"}))
        used = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s) AND state_change > %s", (pids, t0)
        ).fetchone()[0]
    assert used == 1  # (oldest first, every one of them ran commands)
