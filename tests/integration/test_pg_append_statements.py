"""What one PostgreSQL append sends (ADR 0053, 0057, 0064): the statements of the one-trip
path are pinned, so a statement added to every append is a decision, not an accident;
a due snapshot goes out binary through the events' own INSERT, in the same trip."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from context_compaction.infrastructure.eventstore.pgsql import ORDERED_FUNCTION
from helpers import Harness, ok, user

pytestmark = pytest.mark.postgres


def _recorded(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[int]]:
    from psycopg._pipeline_base import BasePipeline

    statements: list[str] = []
    syncs: list[int] = []
    execute = psycopg.Cursor.execute
    enqueue = BasePipeline._enqueue_sync

    def noted(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        statements.append(query if isinstance(query, str) else query.as_string(self.connection))
        return execute(self, query, params, **kw)

    def counted(self: Any) -> None:
        syncs.append(1)
        enqueue(self)

    monkeypatch.setattr(psycopg.Cursor, "execute", noted)
    monkeypatch.setattr(BasePipeline, "_enqueue_sync", counted)
    return statements, syncs


def _schema(h: Harness) -> str:
    return h.url.split("schema=")[1]


def _shape(statement: str) -> str:
    return " ".join(statement.split()[:2])


def test_a_plain_append_is_one_statement(pg_databases: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    h: Harness = pg_databases.harness("statements")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))  # (warm caches)
    ok(h.do({"type": "pin_messages", "session_id": "s", "seqs": [1]}))  # (version and next_seq apart)
    statements, syncs = _recorded(monkeypatch)
    assert ok(h.do({"type": "append_messages", "session_id": "s",
                    "messages": [user("two"), user("three")]}))["seqs"] == [2, 3]
    # ADR 0064: the session row's update is all such an append projects before its ids,
    # so the function does it (its row lock first, then the events lock: ADR 0053's
    # order), with the events, their rm_messages rows and the position (ADR 0057). One
    # statement, its own transaction: no BEGIN, COMMIT or pipeline. Arrays binary.
    assert len(statements) == 1 and ORDERED_FUNCTION in statements[0], statements
    assert statements[0].count("%b") == 8 and statements[0].count("%s") == 6
    assert syncs == []
    monkeypatch.undo()
    row = h.query("SELECT version, next_seq, message_count FROM {t}rm_sessions WHERE session_id = 's'")[0]
    assert tuple(row) == (5, 4, 3)
    assert [r[0] for r in h.query("SELECT seq FROM {t}rm_messages ORDER BY notification_id")] == [1, 2, 3]


def test_a_session_row_update_other_than_the_declared_touch_is_not_sent_inside_the_function(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The function runs only ``APPEND_TOUCH``'s update (ADR 0064): a projection whose
    update for appended messages has another shape is sent as it is, in the pipelined
    transaction, and its values land."""
    from context_compaction.infrastructure.readmodel.handlers import EventHandlers

    h: Harness = pg_databases.harness("statements-drift")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))
    touch = EventHandlers._touch

    def drifted(self: Any, ops: Any, sid: str, event: Any, add: Any = None, **values: Any) -> None:
        touch(self, ops, sid, event, add, **values, model="drifted")

    monkeypatch.setattr(EventHandlers, "_touch", drifted)
    statements, syncs = _recorded(monkeypatch)
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("two")]}))["seqs"] == [2]
    assert [_shape(s) for s in statements] == ["BEGIN", "SELECT 1", "UPDATE " + statements[2].split()[1], "SELECT *",
                                               "COMMIT"]
    assert "FOR UPDATE" in statements[1] and "model = " in statements[2] and len(syncs) == 1
    monkeypatch.undo()
    assert h.query("SELECT model, message_count FROM {t}rm_sessions WHERE session_id = 's'") == [("drifted", 2)]


def test_an_append_with_a_command_id_is_one_pipelined_transaction(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host's command id is registered (and a taken one refused) before the ids, so
    that append projects more than the session row: BEGIN, the session's read-model
    update (the row taken with SELECT ... FOR UPDATE first: ADR 0066's second review;
    ADR 0061 had skipped it), the command's row, the function with no touch of its own,
    COMMIT; one Sync for the registration's row count and one for the rest."""
    h: Harness = pg_databases.harness("statements-command")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))  # (warm caches)
    statements, syncs = _recorded(monkeypatch)
    assert ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "c-1",
                    "messages": [user("two"), user("three")]}))["seqs"] == [2, 3]
    statements = statements[statements.index("BEGIN"):]  # (after the command id's lookup)
    shapes = [_shape(s) for s in statements]
    assert shapes == ["BEGIN", "SELECT 1", "UPDATE " + statements[2].split()[1], "INSERT INTO", "SELECT *", "COMMIT"], \
        statements
    assert "FOR UPDATE" in statements[1] and "rm_sessions" in statements[2] and "rm_commands" in statements[3]
    assert ORDERED_FUNCTION in statements[4]
    assert len(syncs) == 2
    monkeypatch.undo()
    again = ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "c-1",
                     "messages": [user("two"), user("three")]}))
    assert again["seqs"] == [2, 3]
    assert [r[0] for r in h.query("SELECT seq FROM {t}rm_messages ORDER BY notification_id")] == [1, 2, 3]


def test_a_command_with_other_events_locks_its_session_row_first(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a command of appended messages skips the ``FOR UPDATE``: a checkpoint, a pin
    or a model change writes other rows of the session before its ``rm_sessions``
    update, so the row is locked first (ADR 0053's order)."""
    h: Harness = pg_databases.harness("statements-pin")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))
    statements, _ = _recorded(monkeypatch)
    ok(h.do({"type": "pin_messages", "session_id": "s", "seqs": [1]}))
    shapes = [_shape(s) for s in statements]
    assert shapes[:2] == ["BEGIN", "SELECT 1"] and "FOR UPDATE" in statements[1], statements


def test_the_events_lock_is_taken_inside_the_inserting_statement(pg_databases: Any) -> None:
    """ADR 0057: the function's body locks the events table before its INSERT (the lock
    eventsourcing takes for gapless notification ids), and the insert is the ordered one."""
    h: Harness = pg_databases.harness("lock-in-function")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    (body,) = h.query(
        "SELECT prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = ? AND p.proname = ?", (_schema(h), ORDERED_FUNCTION))[0]
    lock = body.index("LOCK TABLE")
    assert "IN EXCLUSIVE MODE" in body[lock:body.index(";", lock)]
    assert lock < body.index("INSERT INTO") and "rm_position" in body


def test_an_append_to_a_database_without_the_function_makes_it(pg_databases: Any) -> None:
    """A database whose tables were made before ADR 0057 (and a start that skipped its
    schema statements) lacks the function: that append takes the careful path and makes
    it; the next one is one trip again. Nothing is lost or doubled."""
    h: Harness = pg_databases.harness("function-missing")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    h.execute(f"DROP FUNCTION {{t}}{ORDERED_FUNCTION}")
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))["seqs"] == [1]
    assert h.query("SELECT count(*) FROM pg_proc WHERE proname = ?", (ORDERED_FUNCTION,))[0][0] >= 1
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("two")]}))["seqs"] == [2]
    history = ok(h.do({"type": "get_history", "session_id": "s"}))
    assert [m["content"] for m in history["messages"]] == ["one", "two"]
    rows = h.query("SELECT seq, notification_id FROM {t}rm_messages ORDER BY seq")
    ids = [r[1] for r in rows]
    assert [r[0] for r in rows] == [1, 2] and ids == sorted(ids) and None not in ids


def _function_raising(h: Harness, message: str) -> None:
    """The ordered function replaced by one of its signature that fails as PostgreSQL
    does when the function is dropped between a call's parse and its execution."""
    h.execute(
        f"CREATE OR REPLACE FUNCTION {{t}}{ORDERED_FUNCTION}(uuid[], bigint[], text[], bytea[], text[], bigint[],"
        " uuid[], bigint[], text, bigint, text, bigint, bigint, text)"
        " RETURNS TABLE (nid bigint, guard bigint) LANGUAGE plpgsql AS"
        f" $f$ BEGIN RAISE EXCEPTION USING ERRCODE = 'XX000', MESSAGE = '{message}'; END $f$"
    )


def test_the_function_dropped_mid_call_takes_the_careful_path(pg_databases: Any) -> None:
    """"cache lookup failed for function" (XX000) is the function gone between parse and
    execution (ADR 0063; seen once under concurrent DROPs): the append is stored once,
    by the careful path. Any other internal error fails the command and stores nothing."""
    h: Harness = pg_databases.harness("function-xx000")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))
    _function_raising(h, "cache lookup failed for function 123")
    assert ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("two")]}))["seqs"] == [2]
    _function_raising(h, "something else broke")
    failed = h.do({"type": "append_messages", "session_id": "s", "messages": [user("three")]})
    assert not failed["ok"] and failed["error"]["code"] == "storage_error", failed
    history = ok(h.new_bus().dispatch_json({"type": "get_history", "session_id": "s"}))
    assert [m["content"] for m in history["messages"]] == ["one", "two"]
    rows = h.query("SELECT seq, notification_id FROM {t}rm_messages ORDER BY seq")
    assert [r[0] for r in rows] == [1, 2] and rows[0][1] < rows[1][1]


def test_a_due_snapshot_goes_binary_in_the_append_and_restores(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    h: Harness = pg_databases.harness("snapshot-binary", snapshot_interval=4)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))
    statements, syncs = _recorded(monkeypatch)
    # Version 2 -> 5 crosses the step at 4: a snapshot is due with these events.
    texts = ["two", "three é", "four"]
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user(t) for t in texts]}))
    monkeypatch.undo()
    snapshot_inserts = [s for s in statements if "contextcompaction_snapshots" in s]
    assert len(snapshot_inserts) == 1, statements
    # The events' four-array INSERT (states as binary bytea), not the library's array of
    # composite values sent as hex-escaped text.
    assert "%b::bytea[]" in snapshot_inserts[0] and "stored_event" not in snapshot_inserts[0]
    assert len(syncs) == 1
    rows = h.query("SELECT originator_version, length(state) FROM {t}contextcompaction_snapshots")
    assert [r[0] for r in rows] == [5] and rows[0][1] > 0
    # A process that never saw the session restores it from that snapshot.
    other = h.new_bus()
    history = ok(other.dispatch_json({"type": "get_history", "session_id": "s"}))
    assert [m["content"] for m in history["messages"]] == ["one", *texts]
    appended = ok(other.dispatch_json({"type": "append_messages", "session_id": "s",
                                       "messages": [user("five")]}))
    assert appended["seqs"] == [5]
