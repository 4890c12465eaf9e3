"""PostgreSQL inserts skip the library's redundant ``SET LOCAL lock_timeout`` (ADR 0030,
R1): every pooled connection has the timeout from connect, so a write that waits on
the events table's lock still gives up in time, with a clear storage error."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from helpers import Harness, err, table_locked, notifies_heard, ok, user

pytestmark = pytest.mark.postgres


def test_the_insert_lock_has_no_set_local_and_still_times_out(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("lock-round-trips", postgres={"lock_timeout": 1})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("hello")]}))
    recorder = h.bus.services.extra["app"].recorder
    statements = [repr(s) for s in recorder.lock_table_statements]
    assert len(statements) == 1 and "EXCLUSIVE" in statements[0], statements
    with recorder.datastore.get_connection() as conn, conn.transaction():
        assert conn.execute("SHOW lock_timeout").fetchone()["lock_timeout"] == "1s"

    # SHARE conflicts with the insert's EXCLUSIVE lock and lets reads through.
    with table_locked(h, "SHARE"):
        began = time.monotonic()
        result = h.do({"type": "append_messages", "session_id": "s", "messages": [user("x")]})
        elapsed = time.monotonic() - began
    error = err(result, "storage_error")
    assert "lock wait timed out" in error["message"], error
    assert elapsed < 12, f"{elapsed:.0f} s for a write against a locked table"
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("y")]}))["seqs"] == [2]


def test_an_append_sends_no_notify_and_subscribe_says_why(pg_databases: Any) -> None:
    """ADR 0043: nothing LISTENs, and a notifying commit takes a database-wide lock."""
    h: Harness = pg_databases.harness("no-notify")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    heard = notifies_heard(h, "ctxc_", {"type": "append_messages", "session_id": "s", "messages": [user("hello")]},
                           timeout=1.0)
    assert heard == []
    with pytest.raises(NotImplementedError, match="no NOTIFY"):
        h.bus.services.extra["app"].recorder.subscribe()
    assert ok(h.do({"type": "get_projection", "session_id": "s"}))["messages"][0]["content"] == "hello"


def test_the_pipelined_position_advance_fails_on_the_server_if_the_position_moved(pg_databases: Any) -> None:
    """ADR 0043: the pipelined insert reads no result before COMMIT, so the position's
    guard is checked by the server: a position that is not the one read fails the
    transaction, one that is moves it."""
    from context_compaction.domain.errors import StorageError
    from context_compaction.infrastructure.readmodel.projector import ADVANCE_SQL, ReadModelProjector
    from context_compaction.infrastructure.readmodel.schema import POSITION

    h: Harness = pg_databases.harness("advance-guard")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("hello")]}))
    db = h.bus.services.extra["db"]
    with db.read() as cur:
        position = ReadModelProjector.position(cur)
    assert position > 0
    with pytest.raises(StorageError):
        with db.write() as cur:
            cur.execute(ADVANCE_SQL, (position + 5, POSITION, position - 1))
    with db.read() as cur:
        assert ReadModelProjector.position(cur) == position  # rolled back, unmoved

    class Undo(Exception):
        pass

    with pytest.raises(Undo):
        with db.write() as cur:
            cur.execute(ADVANCE_SQL, (position + 5, POSITION, position))
            assert ReadModelProjector.position(cur) == position + 5
            raise Undo  # (leave the harness's read model as it was)
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("x")]}))["seqs"] == [2]


def test_postgres_notify_on_sends_notify_and_subscriptions_hear_appends(pg_databases: Any) -> None:
    """``postgres.notify`` (ADR 0043): for eventsourcing subscriptions in other processes."""
    h: Harness = pg_databases.harness("notify-on", postgres={"notify": True})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    heard = notifies_heard(h, "ctxc_on_", {"type": "append_messages", "session_id": "s", "messages": [user("hello")]},
                           timeout=5.0)
    assert len(heard) == 1
    recorder = h.bus.services.extra["app"].recorder
    # The library's own subscription yields what was written, in order.
    with recorder.subscribe(gt=0) as subscription:
        topics = [next(subscription).topic for _ in range(2)]
    assert [t.rsplit(".", 1)[-1] for t in topics] == ["Started", "MessageAppended"]


def test_the_projection_of_an_append_waits_for_the_server_only_for_a_host_command_id(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR 0043, 0050: the handlers run on the insert's pipeline through ``SqlOps``; a
    plain append's projection reads no result (it goes out with the COMMIT), and one
    with a host command id waits once, for the row count of its command's row."""
    from context_compaction.infrastructure.readmodel.projector import ReadModelProjector

    h: Harness = pg_databases.harness("projection-waits")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("warm")]}))
    projecting: list[bool] = []
    waits: list[str] = []
    sync = psycopg.Pipeline.sync

    def watched(project: Any) -> Any:
        def watched_project(self: Any, *args: Any, **kwargs: Any) -> Any:
            projecting.append(True)
            try:
                return project(self, *args, **kwargs)
            finally:
                projecting.pop()
        return watched_project

    def watched_sync(self: Any) -> None:
        if projecting:
            waits.append("sync")
        sync(self)

    # (the one-trip append projects before the events lock, the careful path inline: ADR 0053)
    for name in ("project_inline", "project_before_ids"):
        monkeypatch.setattr(ReadModelProjector, name, watched(getattr(ReadModelProjector, name)))
    monkeypatch.setattr(psycopg.Pipeline, "sync", watched_sync)
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("a"), user("b")]}))
    assert waits == []
    ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "host-1",
             "messages": [user("c"), user("d")]}))
    assert waits == ["sync"]
