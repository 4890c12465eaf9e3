"""Review of issue 37 (ADR 0073): a refused projection on PostgreSQL rolls the events back
on each write path (pipelined and the unpipelined one for appends past
``PIPELINE_LIMIT``), the pool's connections stay usable, and a backend terminated while
its append waits for the events lock is a ``storage_error`` whose retry goes through."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL
from context_compaction.infrastructure.eventstore.internals.postgres import PIPELINE_LIMIT
from context_compaction.infrastructure.verify import verify
from helpers import Harness, err, ok, user
from harness import Inspect

BACKENDS = ("sqlite", "postgres")


def _counts(h: Harness) -> list[Any]:
    return [h.events(), *(h.query(f"SELECT count(*) FROM {{t}}{t}")[0][0]
                          for t in ("rm_messages", "rm_sessions", "rm_commands"))]


def _verify_ok(h: Harness) -> None:
    report = h.inspect.verify()
    assert report.ok, report


@pytest.mark.parametrize("size", ["pipelined", "past_the_pipeline_limit"])
def test_a_projection_refusal_writes_nothing_and_the_pool_goes_on(databases: Any, size: str) -> None:
    """A command id taken by another process after the command's own check: the
    projection refuses it inside the append's transaction, on either write path."""
    if databases.kind == "sqlite" and size != "pipelined":
        pytest.skip("one write path on SQLite")
    h: Harness = databases.harness("refusal", snapshot_interval=1)
    for sid in ("a", "b"):
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "command_id": "c1", "messages": [user("x")]}))
    other = h.new_bus(snapshot_interval=1)  # its own caches: only the database knows c1
    n = PIPELINE_LIMIT // 4 if size != "pipelined" else 1000
    big = [user(os.urandom(n).hex()) for _ in range(3)]  # (3 x 2 MB: past the limit in states)
    recorder = Inspect(other).recorder
    pipelined: list[bool] = []  # (per projection: in the library's pipeline?)
    fetch = getattr(recorder, "_fetch_ids_after_insert_events", None)

    def spy(curs: Any, *args: Any, **kwargs: Any) -> Any:
        pipelined.append(bool(curs.connection.pgconn.pipeline_status))
        return fetch(curs, *args, **kwargs)  # type: ignore[misc]

    if h.is_postgres:
        recorder._fetch_ids_after_insert_events = spy
    # The race the projection's refusal is for: c1 taken after the command's own check.
    read_model = other.services.read_model
    lookup, race = read_model.command, [False]

    def command(command_id: str) -> Any:
        if race[0]:
            race[0] = False
            return None
        return lookup(command_id)

    read_model.command = command
    before = _counts(h)
    for _ in range(3):
        race[0] = True
        err(other.dispatch_json({"type": "append_messages", "session_id": "b", "command_id": "c1",
                                 "messages": big}), "idempotency_conflict")
        assert _counts(h) == before
        # the next command, on the same pool, works (no 'current transaction is aborted')
        assert ok(other.dispatch_json({"type": "get_history", "session_id": "b"}))["messages"] == []
    # (the first refusal on the library's pipelined insert or the plain one for large
    # appends; later ones on the contended path, which the first conflict chose)
    assert not h.is_postgres or pipelined and pipelined[0] == (size == "pipelined") and not any(pipelined[1:])
    assert ok(other.dispatch_json({"type": "append_messages", "session_id": "b", "command_id": "b1",
                                   "messages": big}))["seqs"] == [1, 2, 3]
    assert ok(other.dispatch_json({"type": "append_messages", "session_id": "b", "command_id": "b2",
                                   "messages": [user("small")]}))["seqs"] == [4]
    _verify_ok(h)


@pytest.mark.postgres
def test_a_backend_terminated_while_its_append_waits_is_a_storage_error_and_the_retry_works(
    pg_databases: Any,
) -> None:
    h: Harness = pg_databases.harness("terminated")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))
    app = h.inspect.app
    events = app.projector.events_table.qualified
    before = h.events()
    result: dict[str, Any] = {}
    with psycopg.connect(POSTGRES_URL, autocommit=True, application_name="ctxc-review-blocker") as blocker:
        blocker.execute("BEGIN")
        blocker.execute(f"LOCK TABLE {events} IN EXCLUSIVE MODE")
        worker = threading.Thread(target=lambda: result.update(
            h.do({"type": "append_messages", "session_id": "s", "command_id": "k",
                  "messages": [user("two")]})))
        worker.start()
        with psycopg.connect(POSTGRES_URL, autocommit=True, application_name="ctxc-review-killer") as killer:
            for _ in range(200):
                pids = killer.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> %s"
                    " AND query LIKE 'LOCK TABLE%%'", (blocker.info.backend_pid,)).fetchall()
                if pids:
                    break
                time.sleep(0.05)
            assert pids, "the append never waited for the lock"
            killer.execute("SELECT pg_terminate_backend(%s)", (pids[0][0],))
        time.sleep(0.2)
        blocker.execute("ROLLBACK")
        worker.join(60)
    assert not worker.is_alive()
    if result["ok"]:  # (the command loop may retry on a new connection itself)
        assert result["result"]["seqs"] == [2]
    else:
        assert result["error"]["code"] == "storage_error", result
        assert h.events() == before
        assert ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "k",
                        "messages": [user("two")]}))["seqs"] == [2]
    assert ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "k",
                    "messages": [user("two")]}))["seqs"] == [2]
    assert [m["content"] for m in ok(h.do({"type": "get_history", "session_id": "s"}))["messages"]] == ["one", "two"]
    _verify_ok(h)


@pytest.mark.postgres
def test_the_event_feed_reads_through_pooled_connections_the_server_closed(pg_databases: Any) -> None:
    """The library's reads are used without its retry decorator (lock waits are retried
    by our loops); a read whose pooled connection the server closed is still tried again
    on a live one, also where no loop of ours surrounds it (``read_events``)."""
    h: Harness = pg_databases.harness("feed-drop")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for n in range(3):
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user(f"m{n}")]}))
    ok(h.do({"type": "read_events", "after": 0}))  # (several pooled connections in use)
    app_name = os.environ["PGAPPNAME"]
    with psycopg.connect(POSTGRES_URL, autocommit=True, application_name="ctxc-review-killer") as killer:
        killed = killer.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                " WHERE application_name = %s AND pid <> pg_backend_pid()", (app_name,)).fetchall()
    assert killed
    time.sleep(0.1)
    events = ok(h.do({"type": "read_events", "after": 0}))["events"]
    assert len(events) >= 4 and {e["session_id"] for e in events} == {"s"}
    app = h.inspect.app
    assert [n.id for n in app.recorder.select_notifications(start=1, limit=100)] == [e["position"] for e in events]


@pytest.mark.parametrize("table", ["rm_messages", "snapshots"])
@pytest.mark.parametrize("size", ["pipelined", "past_the_pipeline_limit"])
def test_a_read_model_or_snapshot_row_the_server_refuses_rolls_the_append_back(
    databases: Any, size: str, table: str
) -> None:
    """The server fails the projection's (or the due snapshot's) INSERT inside the
    append's transaction: nothing of the append stays, and the next commands work."""
    if databases.kind == "sqlite" and size != "pipelined":
        pytest.skip("one write path on SQLite")
    h: Harness = databases.harness("server-refusal", snapshot_interval=1)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    app = h.inspect.app
    target = app.snapshots.recorder.events_table_name if table == "snapshots" else table
    n = PIPELINE_LIMIT // 4 if size != "pipelined" else 1000
    messages = [user(os.urandom(n).hex()) for _ in range(3)]
    before = [*_counts(h), h.query(f"SELECT count(*) FROM {{t}}{target}")[0][0]]
    h.fail_inserts(target)
    try:
        for _ in range(2):
            got = h.do({"type": "append_messages", "session_id": "s", "command_id": "k", "messages": messages})
            assert not got["ok"] and got["error"]["code"] == "storage_error", got
            assert [*_counts(h), h.query(f"SELECT count(*) FROM {{t}}{target}")[0][0]] == before
            assert ok(h.do({"type": "get_history", "session_id": "s"}))["messages"] == []
    finally:
        h.allow_inserts(target)
    assert ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "k",
                    "messages": messages}))["seqs"] == [1, 2, 3]
    _verify_ok(h)


def test_the_librarys_insert_function_setting_is_refused() -> None:
    """``POSTGRES_ENABLE_DB_FUNCTIONS`` switches the library's insert to its plpgsql
    function, which runs neither insert hook nor the events lock: the read model would
    silently stop and followers could skip events. The recorder refuses it."""
    from types import SimpleNamespace

    from context_compaction.infrastructure.database import Dialect
    from context_compaction.infrastructure.eventstore.internals import postgres_recorder_class

    with pytest.raises(ValueError, match="POSTGRES_ENABLE_DB_FUNCTIONS"):
        postgres_recorder_class()(SimpleNamespace(enable_db_functions=True), None, Dialect("postgres", "public"),
                                  "contextcompaction_events")
