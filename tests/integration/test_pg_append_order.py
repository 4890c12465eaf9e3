"""PostgreSQL appends (ADR 0073): the events under the library's lock, their read-model
rows and position in the same transaction; a refused projection writes nothing, a read
model left behind is caught up first, concurrent writers never deadlock, and new
databases compress event states with lz4."""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

import psycopg
import pytest

from backends import POSTGRES_URL
from context_compaction.infrastructure.readmodel.schema import POSITION
from helpers import Harness, err, in_thread, ok, user

pytestmark = pytest.mark.postgres


def _schema(h: Harness) -> str:
    return h.url.split("schema=")[1]


def _consistent(h: Harness) -> None:
    """Every message row points at its own event, and the position is the newest id."""
    app = h.inspect.app
    events = app.projector.events_table.qualified
    wrong = h.query(
        "SELECT m.session_id, m.seq FROM {t}rm_messages m JOIN {t}rm_sessions s ON s.session_id = m.session_id"
        f" LEFT JOIN {events} e ON e.notification_id = m.notification_id"
        " AND e.originator_id::text = (substr(s.aggregate_id, 1, 8) || '-' || substr(s.aggregate_id, 9, 4) || '-'"
        " || substr(s.aggregate_id, 13, 4) || '-' || substr(s.aggregate_id, 17, 4) || '-' || substr(s.aggregate_id, 21))"
        " WHERE e.notification_id IS NULL"
    )
    assert wrong == []
    position = h.query("SELECT notification_id FROM {t}rm_position WHERE name = ?", (POSITION,))
    newest = h.query(f"SELECT max(notification_id) FROM {events}")
    assert position == newest


def test_a_taken_command_id_writes_nothing(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("taken-id")
    for sid in ("a", "b"):
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "command_id": "c1", "messages": [user("x")]}))
    events = h.events()
    rows = [h.query(f"SELECT count(*) FROM {{t}}{t}")[0][0] for t in ("rm_messages", "rm_search", "rm_commands")]
    other = h.new_bus()  # its own caches: it does not know c1, the database refuses it
    err(other.dispatch_json({"type": "append_messages", "session_id": "b", "command_id": "c1",
                             "messages": [user("y")]}), "idempotency_conflict")
    assert h.events() == events
    assert [h.query(f"SELECT count(*) FROM {{t}}{t}")[0][0]
            for t in ("rm_messages", "rm_search", "rm_commands")] == rows
    assert h.query("SELECT message_count FROM {t}rm_sessions WHERE session_id = 'b'") == [(0,)]
    _consistent(h)


@pytest.mark.parametrize("path", ["same_process", "new_process"])
def test_a_read_model_behind_the_events_is_caught_up_by_the_careful_path(pg_databases: Any, path: str) -> None:
    """An event stored without its projection: the next append finds the position not
    just before its ids, replays that event, then projects its own (nothing written
    twice). ``new_process``: a process that has not yet seen the session's id."""
    h: Harness = pg_databases.harness("behind")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("one")]}))
    writer = h.new_bus() if path == "new_process" else h.bus
    app = h.inspect.app
    session = app.repository.get(UUID(h.query("SELECT aggregate_id FROM {t}rm_sessions")[0][0]))
    session.configure(model="gpt-4o-mini", agent_token_limit=None, set_limit=False, created_at="2026-01-01T00:00:00Z")
    app.recorder.insert_events([app.mapper.to_stored_event(e) for e in session.collect_events()])  # unprojected
    events = h.events()
    assert h.query("SELECT model FROM {t}rm_sessions") == [("gpt-4o",)]
    result = ok(writer.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [user("two")]}))
    assert result["seqs"] == [2]
    assert h.events() == events + 1
    assert h.query("SELECT model, message_count FROM {t}rm_sessions") == [("gpt-4o-mini", 2)]
    assert h.query("SELECT count(*) FROM {t}rm_damaged") == [(0,)]
    _consistent(h)


def test_concurrent_writers_and_a_follower_see_every_event_in_order(pg_databases: Any) -> None:
    """Writers on their own sessions, two on one shared session (lost
    races go the contended path), and a follower polling the notification log while
    they write: every append succeeds, the follower never skips an id it later finds
    stored, and the read model matches the events."""
    h: Harness = pg_databases.harness("concurrent")
    ok(h.do({"type": "start_session", "session_id": "shared", "model": "gpt-4o"}))
    buses = [h.new_bus() for _ in range(4)]
    for i, bus in enumerate(buses[:2]):
        ok(bus.dispatch_json({"type": "start_session", "session_id": f"own{i}", "model": "gpt-4o"}))
    turns = 15
    plan = [(buses[0], "own0"), (buses[1], "own1"), (buses[2], "shared"), (buses[3], "shared")]
    recorder = h.inspect.recorder
    done = threading.Event()
    seen: list[int] = []

    def follow() -> None:
        while True:
            finished = done.is_set()
            start = seen[-1] + 1 if seen else 1
            seen.extend(n.id for n in recorder.select_notifications(start=start, limit=50))
            if finished and (not seen or not recorder.select_notifications(start=seen[-1] + 1, limit=1)):
                return

    def write(bus: Any, sid: str) -> list[int]:
        return [ok(bus.dispatch_json({"type": "append_messages", "session_id": sid,
                                      "messages": [user(f"{sid}-{k}"), user("more")]}))["seqs"][0]
                for k in range(turns)]

    follower, followed = in_thread(follow)
    writers = [in_thread(lambda bus=bus, sid=sid: write(bus, sid)) for bus, sid in plan]
    for thread, _ in writers:
        thread.join(120)
    done.set()
    follower.join(60)
    assert "error" not in followed, followed.get("error")
    for _, out in writers:
        assert "error" not in out, out.get("error")
    firsts = sorted(s for _, out in writers[2:] for s in out["result"])
    assert firsts == list(range(1, 4 * turns, 2))  # the shared session: no seq twice, none lost
    stored_ids = [n.id for n in recorder.select_notifications(start=1, limit=10**6)]
    assert seen == stored_ids  # in order, none skipped
    assert len(stored_ids) == 3 + 4 * turns * 2
    _consistent(h)


def _lz4_tables(h: Harness) -> tuple[str, str]:
    """The events and snapshots tables, or a skip where the server has no lz4."""
    if not h.query("SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression'"
                   " AND 'lz4' = ANY(enumvals)")[0][0]:
        pytest.skip("this PostgreSQL server has no lz4")
    events = h.inspect.events_table.qualified
    return events, events.replace("_events", "_snapshots")


def _state_compression(h: Harness, *tables: str) -> list[tuple[str]]:
    """Each table's ``state`` column compression: 'l' lz4, 'p' pglz, '' the default."""
    return h.query(" UNION ALL ".join(
        f"SELECT attcompression FROM pg_attribute WHERE attrelid = '{t}'::regclass AND attname = 'state'"
        for t in tables))


def test_a_new_database_compresses_event_states_with_lz4(pg_databases: Any) -> None:
    """ADR 0053: pglz took about half of the events INSERT, which runs under the lock."""
    h: Harness = pg_databases.harness("lz4", snapshot_interval=4)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("x" * 40_000)]}))
    events, snapshots = _lz4_tables(h)
    assert _state_compression(h, events) == [("l",)]
    assert h.query(f"SELECT DISTINCT pg_column_compression(state) FROM {events}"
                   " WHERE pg_column_compression(state) IS NOT NULL") == [("lz4",)]
    history = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"]
    assert history[0]["content"] == "x" * 40_000
    # The snapshots too (ADR 0067): their pglz was 8 % of the server's CPU at 8 writers.
    assert h.query(f"SELECT to_regclass('{snapshots}') IS NOT NULL") == [(True,)]
    assert _state_compression(h, snapshots) == [("l",)]
    # A snapshot large enough to be compressed: an assistant turn's sixty open tool calls.
    calls = [{"id": f"call_{i:03d}_" + "c" * 200, "type": "function",
              "function": {"name": "read_file", "arguments": "{}"}} for i in range(60)]
    ok(h.do({"type": "append_messages", "session_id": "s",
             "messages": [{"role": "assistant", "content": None, "tool_calls": calls}]}))
    for call in calls[:4]:  # (past a snapshot step)
        ok(h.do({"type": "append_messages", "session_id": "s",
                 "messages": [{"role": "tool", "tool_call_id": call["id"], "content": "r"}]}))
    assert h.query(f"SELECT DISTINCT pg_column_compression(state) FROM {snapshots}") == [("lz4",)]
    # Read back: a new process loads the session from that snapshot and goes on.
    again: Harness = pg_databases.harness("lz4", snapshot_interval=4)
    ok(again.do({"type": "append_messages", "session_id": "s",
                 "messages": [{"role": "tool", "tool_call_id": calls[4]["id"], "content": "r"}]}))
    assert len(ok(again.do({"type": "get_history", "session_id": "s"}))["messages"]) == 7


def test_a_database_built_before_lz4_gets_it_at_its_next_schema_upgrade(pg_databases: Any) -> None:
    """Review of ADR 0067: a database built before it kept pglz on its snapshots."""
    h: Harness = pg_databases.harness("lz4-upgrade")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    tables = _lz4_tables(h)
    for table in tables:  # (what an older release built)
        h.execute(f"ALTER TABLE {table} ALTER COLUMN state SET COMPRESSION pglz")
    assert _state_compression(h, *tables) == [("p",), ("p",)]
    h.reopen()  # (the schema is current: nothing is altered on an ordinary start)
    assert _state_compression(h, *tables) == [("p",), ("p",)]
    h.execute("UPDATE {t}rm_position SET notification_id = notification_id - 1 WHERE name = 'schema'")
    h.reopen()
    assert _state_compression(h, *tables) == [("l",), ("l",)]
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("z" * 40_000)]}))
    assert ok(h.do({"type": "get_history", "session_id": "s"}))["messages"][0]["content"] == "z" * 40_000


def test_an_upgrade_that_cannot_have_the_lock_for_lz4_starts_all_the_same(
    pg_databases: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Second review of ADR 0067: the ALTER waited for every reader of the table, up to
    the lock timeout, and then failed the start (the schema marker already written)."""
    h: Harness = pg_databases.harness("lz4-busy")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    _, snapshots = _lz4_tables(h)
    h.execute(f"ALTER TABLE {snapshots} ALTER COLUMN state SET COMPRESSION pglz")
    h.execute("UPDATE {t}rm_position SET notification_id = notification_id - 1 WHERE name = 'schema'")
    with psycopg.connect(POSTGRES_URL) as reader:  # (a transaction that has read the table)
        reader.execute(f"SELECT count(*) FROM {snapshots}").fetchone()
        t0 = time.monotonic()
        h.reopen()
        waited = time.monotonic() - t0
    assert waited < 5
    assert "event states stay pglz-compressed" in caplog.text
    assert _state_compression(h, snapshots) == [("p",)]
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("after")]}))

