"""PostgreSQL appends go through eventsourcing's own insert (ADR 0073): its events lock
gives up after ``postgres.lock_timeout`` with a clear storage error, and its NOTIFY
lets the library's own subscriptions hear every append."""

from __future__ import annotations

from typing import Any

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
