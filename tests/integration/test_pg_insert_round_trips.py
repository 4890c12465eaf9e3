"""PostgreSQL appends go through eventsourcing's own insert (ADR 0073): its events lock
gives up after ``postgres.lock_timeout`` with a clear storage error, and its NOTIFY
lets the library's own subscriptions hear every append."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from helpers import Harness, err, notifies_heard, ok, table_locked, user

pytestmark = pytest.mark.postgres


def test_a_write_against_a_locked_events_table_gives_up_with_a_storage_error(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("lock-round-trips", postgres={"lock_timeout": 1})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("hello")]}))
    recorder = h.inspect.recorder
    with recorder.datastore.get_connection() as conn, conn.transaction():
        # (every pooled connection waits for a lock no longer than the inserts do)
        assert conn.execute("SHOW lock_timeout").fetchone()["lock_timeout"] == "1s"

    # SHARE conflicts with the insert's EXCLUSIVE lock and lets reads through.
    with table_locked(h, "SHARE"):
        result = h.do({"type": "append_messages", "session_id": "s", "messages": [user("x")]})
    error = err(result, "storage_error")
    assert "lock wait timed out" in error["message"], error
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("y")]}))["seqs"] == [2]


def test_appends_notify_and_the_librarys_subscription_hears_them(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("notify-on")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    heard = notifies_heard(h, "ctxc_on_", {"type": "append_messages", "session_id": "s", "messages": [user("hello")]},
                           timeout=5.0)
    assert len(heard) == 1
    recorder = h.inspect.recorder
    with recorder.subscribe(gt=0) as subscription:
        topics = [next(subscription).topic for _ in range(2)]
    assert [t.rsplit(".", 1)[-1] for t in topics] == ["Started", "MessageAppended"]


def _round_trips(trace: str) -> int:
    """Waits of the client on the server in libpq's trace: a run of messages sent (F)
    after the server's last answer (B) is one trip."""
    directions = [line.split("\t", 1)[0] for line in trace.splitlines() if line[:1] in "FB"]
    return sum(1 for prev, cur in zip(["B", *directions], directions) if cur == "F" and prev == "B")


def test_an_append_waits_on_the_server_only_where_the_librarys_transaction_does(
    pg_databases: Any, tmp_path: Any
) -> None:
    """The library's pipelined transaction waits five times (BEGIN, the INSERT's ids, its
    sync before COMMIT, COMMIT, the pipeline's end); the read-model rows, position and
    command-id check ride in it without a wait of their own (issue 37: it was seven)."""
    h: Harness = pg_databases.harness("trips", postgres={"pool_size": 1, "max_overflow": 0})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("warm")]}))
    recorder = h.inspect.app.recorder
    path = tmp_path / "libpq.trace"
    with open(path, "w") as f:
        with recorder.datastore.get_connection() as conn:  # (the pool's only connection)
            conn.pgconn.trace(f.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        messages = [user(f"m{i}") for i in range(5)]
        for command_id in (None, "host-1"):
            f.flush()
            before = path.read_text()
            extra = {"command_id": command_id} if command_id else {}
            ok(h.do({"type": "append_messages", "session_id": "s", "messages": messages, **extra}))
            sent = path.read_text()[len(before):]
            sent = sent[sent.index('Parse\t "" "BEGIN"'):]  # (the pipelined transaction, not the reads before it)
            assert _round_trips(sent) == 5, sent
            assert sent.count(".rm_messages (") == 1, sent  # every message's row in one statement
        with recorder.datastore.get_connection() as conn:
            conn.pgconn.untrace()
    assert h.query("SELECT count(*) FROM {t}rm_messages")[0][0] == 11
