"""``postgres.ordering = lock_free`` (ADR 0066): appends to different sessions do not
queue on the events lock, ids may commit out of order, and nothing that reads the log
in id order (the event feed, eventsourcing's followers, ``ctxc verify``) ever passes
an event that commits late. The read model stays complete: every writer projects
inline; the first lock-free append marks the database, which every process then
follows."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL
from context_compaction.infrastructure.readmodel.schema import LOCK_FREE_MARK, POSITION
from context_compaction.infrastructure.verify import verify
from helpers import Harness, in_thread, ok, user, wait_for_advisory

pytestmark = pytest.mark.postgres

LOCK_FREE: dict[str, Any] = {"postgres": {"ordering": "lock_free"}}
HOLD = 660066  # the advisory lock a held append waits for, inside its transaction


def _marks(h: Harness) -> dict[str, int]:
    return dict(h.query("SELECT name, notification_id FROM {t}rm_position"))


def _consistent(h: Harness) -> None:
    """Every event of every session is in the read model, and nothing else is."""
    app = h.bus.services.extra["app"]
    events = app.projector.events_table.qualified
    topic = "context_compaction:Session.MessageAppended"
    stored = h.query(f"SELECT count(*) FROM {events} WHERE topic = ?", (topic,))
    assert h.count("rm_messages") == stored[0][0]
    wrong = h.query(
        f"SELECT m.session_id, m.seq FROM {{t}}rm_messages m LEFT JOIN {events} e"
        " ON e.notification_id = m.notification_id WHERE e.notification_id IS NULL"
    )
    assert wrong == []
    report = verify(app, h.bus.services.read_model)
    assert all(t.ok for t in report.tables.values()), report.text()
    assert report.position == report.newest


def _hold_session(h: Harness, session_id: str, table: str = "rm_messages", when: str = "BEFORE INSERT") -> None:
    """Appends to ``session_id`` wait for the advisory lock ``HOLD`` inside their
    transaction: by default after their ids are drawn and before they commit (a
    trigger on rm_messages); ``rm_sessions``/``AFTER UPDATE``: after the session row's
    update (the touch), before the events are inserted."""
    h.execute(
        "CREATE OR REPLACE FUNCTION {t}ctxc_hold() RETURNS trigger AS $$ BEGIN"
        f" IF NEW.session_id = '{session_id}' THEN PERFORM pg_advisory_lock({HOLD});"
        f" PERFORM pg_advisory_unlock({HOLD}); END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
    )
    h.execute(f"CREATE TRIGGER ctxc_hold {when} ON {{t}}{table} FOR EACH ROW EXECUTE FUNCTION {{t}}ctxc_hold()")


def _waiting_on_hold() -> None:
    wait_for_advisory(HOLD)


def test_a_lock_free_append_marks_the_database_and_keeps_the_read_model_complete(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("lf-basic", **LOCK_FREE)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    marks = _marks(h)
    assert LOCK_FREE_MARK in marks and marks[POSITION] == marks[LOCK_FREE_MARK]
    for i in range(5):
        ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user(f"m{i}")]}))
    # The position stays where the database was marked; the read model is fresh anyway.
    assert _marks(h)[POSITION] == marks[POSITION]
    projection = ok(h.do({"type": "get_projection", "session_id": "a"}))
    assert [m["content"] for m in projection["messages"]] == [f"m{i}" for i in range(5)]
    _consistent(h)
    # A restart reads the same (no catch-up replays the inline-projected events twice).
    h.reopen()
    again = ok(h.do({"type": "get_projection", "session_id": "a"}))
    assert again["messages"] == projection["messages"]
    _consistent(h)


def test_an_append_to_another_session_does_not_wait_and_readers_never_pass_the_late_one(
    pg_databases: Any,
) -> None:
    h: Harness = pg_databases.harness("lf-order", **LOCK_FREE)
    for s in ("slow", "fast"):
        ok(h.do({"type": "start_session", "session_id": s, "model": "gpt-4o"}))
    app = h.bus.services.extra["app"]
    head = max(n.id for n in app.recorder.select_notifications(start=1, limit=1000))
    _hold_session(h, "slow")
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (HOLD,))
        thread, out = in_thread(
            lambda: h.do({"type": "append_messages", "session_id": "slow", "messages": [user("late")]}))
        _waiting_on_hold()
        # Under the events lock this append would wait for the held one; lock-free it commits.
        done = threading.Event()
        fast: dict[str, Any] = {}

        def append_fast() -> None:
            fast.update(h.do({"type": "append_messages", "session_id": "fast", "messages": [user("early")]}))
            done.set()

        threading.Thread(target=append_fast, daemon=True).start()
        assert done.wait(20), "an append to another session waited for the held one"
        ok(fast)
        visible = h.query(f"SELECT max(notification_id) FROM {app.projector.events_table.qualified}")[0][0]
        assert visible > head
        # The held append drew the lower id: no reader may return the fast one yet.
        assert [n.id for n in app.recorder.select_notifications(start=head + 1, limit=100)] == []
        feed = ok(h.do({"type": "read_events", "after": head}))
        assert feed["events"] == []
        # The fast session itself reads fresh (its rows are inline, no catch-up waits).
        assert [m["content"] for m in ok(h.do({"type": "get_projection", "session_id": "fast"}))
                ["messages"]] == ["early"]
    finally:
        holder.execute("SELECT pg_advisory_unlock(%s)", (HOLD,))
        holder.close()
    thread.join(30)
    assert "error" not in out, out
    ok(out["result"])
    after = app.recorder.select_notifications(start=head + 1, limit=100)
    ids = [n.id for n in after]
    assert ids == sorted(ids) and len(ids) == 2
    topics_by_session = [h.query(
        "SELECT session_id FROM {t}rm_messages WHERE notification_id = ?", (i,))[0][0] for i in ids]
    assert topics_by_session == ["slow", "fast"]
    feed = ok(h.do({"type": "read_events", "after": head}))["events"]
    assert [e["position"] for e in feed] == ids
    h.execute("DROP TRIGGER ctxc_hold ON {t}rm_messages")
    _consistent(h)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_locked_process_follows_the_mark_of_a_lock_free_database(pg_databases: Any, when: str) -> None:
    """Whether the locked process wrote before the mark was set (so it learns it from
    its careful path) or starts after it (one look at its first write), it writes
    lock-free: the position stays, nothing is projected twice."""
    h: Harness = pg_databases.harness(f"lf-mixed-{when}")
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    locked = h.new_bus(postgres={"ordering": "locked"})
    if when == "before":
        ok(locked.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("zero")]}))
    lock_free = h.new_bus(**LOCK_FREE)
    ok(lock_free.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    ok(lock_free.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("two")]}))
    marked = _marks(h)[POSITION]
    ok(locked.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("three")]}))
    ok(locked.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("four")]}))
    assert locked.services.extra["app"].recorder.lock_free
    assert _marks(h)[POSITION] == marked
    contents = [m["content"] for m in ok(locked.dispatch_json({"type": "get_projection", "session_id": "a"}))["messages"]]
    assert contents == (["zero"] if when == "before" else []) + ["one", "two", "three", "four"]
    _consistent(h)


def test_switching_a_locked_database_catches_the_read_model_up_first(pg_databases: Any) -> None:
    locked: Harness = pg_databases.harness("lf-switch")
    ok(locked.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(locked.do({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    # Events the read model has not seen yet (it is behind, as after a lost projection).
    locked.execute("DELETE FROM {t}rm_messages WHERE session_id = 'a'")
    locked.execute("UPDATE {t}rm_position SET notification_id = 1 WHERE name = ?", (POSITION,))
    lock_free = locked.new_bus(**LOCK_FREE)
    ok(lock_free.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("two")]}))
    marks = _marks(locked)
    assert marks[LOCK_FREE_MARK] == marks[POSITION] >= 2
    messages = ok(lock_free.dispatch_json({"type": "get_projection", "session_id": "a"}))["messages"]
    assert [m["content"] for m in messages] == ["one", "two"]


def test_a_schema_upgrade_on_a_lock_free_database_rebuilds_without_doubling(pg_databases: Any) -> None:
    """The upgrade drops the position; lock-free writers project inline into the new
    tables meanwhile; the catch-up then replays from empty tables, not on top of them."""
    h: Harness = pg_databases.harness("lf-upgrade", **LOCK_FREE)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    h.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("two")]}))
    messages = ok(h.do({"type": "get_projection", "session_id": "a"}))["messages"]
    assert [m["content"] for m in messages] == ["one", "two"]
    assert POSITION in _marks(h)
    _consistent(h)


def test_an_append_right_after_a_schema_upgrade_rebuilds_first(pg_databases: Any) -> None:
    """A new release drops the tables of an older shape and the position; the first
    lock-free append, before any read, finds the position gone (the function checks
    it), rebuilds the read model under the lock, then appends."""
    h: Harness = pg_databases.harness("lf-upgrade-real", **LOCK_FREE)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    h.execute("UPDATE {t}rm_position SET notification_id = 4 WHERE name = 'schema'")  # an older shape
    h.reopen()  # drops and recreates the projected tables
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("two")]}))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("three")], "command_id": "c3"}))
    messages = ok(h.do({"type": "get_projection", "session_id": "a"}))["messages"]
    assert [m["content"] for m in messages] == ["one", "two", "three"]
    _consistent(h)


def test_a_rebuild_waits_for_a_writer_holding_its_session_row_without_a_deadlock(pg_databases: Any) -> None:
    """A lock-free writer holds its session's row (its touch) while it inserts; the
    rebuild takes every session's row before the events lock, the writers' order, so
    it waits for the writer instead of deadlocking with it."""
    h: Harness = pg_databases.harness("lf-rebuild-order", **LOCK_FREE)
    ok(h.do({"type": "start_session", "session_id": "n", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "n", "messages": [user("one")]}))
    _hold_session(h, "n", "rm_sessions", "AFTER UPDATE")  # (its row held, its events not yet inserted)

    def deadlocks() -> int:
        with psycopg.connect(POSTGRES_URL) as c:
            row = c.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").fetchone()
            assert row is not None
            return int(row[0])

    before = deadlocks()
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (HOLD,))
        writer, out = in_thread(
            lambda: h.do({"type": "append_messages", "session_id": "n", "messages": [user("two")]}))
        _waiting_on_hold()
        rebuild, rebuilt = in_thread(h.bus.services.read_model.rebuild)
        import time

        time.sleep(0.3)  # (the rebuild reaches the writer's row and waits for it)
    finally:
        holder.execute("SELECT pg_advisory_unlock(%s)", (HOLD,))
        holder.close()
    writer.join(30)
    rebuild.join(30)
    assert "error" not in out and "error" not in rebuilt, (out, rebuilt)
    ok(out["result"])
    h.execute("DROP TRIGGER ctxc_hold ON {t}rm_sessions")
    assert deadlocks() == before
    assert [m["content"] for m in ok(h.do({"type": "get_projection", "session_id": "n"}))["messages"]] == ["one", "two"]
    _consistent(h)


def test_a_running_process_meets_an_upgrade_made_by_another(pg_databases: Any) -> None:
    """The process marked the database long ago; another one's schema upgrade drops the
    projected rows and the position. Its next append's function finds the position gone
    and fails (nothing written); the process rebuilds under the lock, then appends."""
    h: Harness = pg_databases.harness("lf-upgrade-running", **LOCK_FREE)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    for table in ("rm_messages", "rm_sessions"):
        h.execute(f"DELETE FROM {{t}}{table}")
    h.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("two")]}))
    assert POSITION in _marks(h)
    messages = ok(h.do({"type": "get_projection", "session_id": "a"}))["messages"]
    assert [m["content"] for m in messages] == ["one", "two"]
    _consistent(h)


def test_a_subscription_delivers_past_a_rolled_back_hole_without_another_notify(pg_databases: Any) -> None:
    """``postgres.notify`` on: a subscription's read stops before a hole whose writer
    still runs; that writer's rollback sends no NOTIFY, so the subscription also pulls
    every 0.1 s and delivers the event above the hole soon after (review of ADR 0066)."""
    import time
    import uuid

    h: Harness = pg_databases.harness("lf-subscribe", postgres={"ordering": "lock_free", "notify": True})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    recorder = h.bus.services.extra["app"].recorder
    head = max(n.id for n in recorder.select_notifications(start=1, limit=100))
    got: list[int] = []
    subscription = recorder.subscribe(gt=head)

    def consume() -> None:
        for n in subscription:
            got.append(n.id)

    threading.Thread(target=consume, daemon=True).start()
    doomed = psycopg.connect(POSTGRES_URL)
    try:
        doomed.execute("SELECT pg_current_xact_id()")
        row = doomed.execute(
            f"INSERT INTO {recorder.qualified_events} (originator_id, originator_version, topic, state)"
            " VALUES (%s, 1, 'tests:Raw', '\\x7b7d'::bytea) RETURNING notification_id", (uuid.uuid4(),)).fetchone()
        assert row is not None
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("b")]}))  # commits, NOTIFYs
        time.sleep(0.4)
        assert got == []  # (the hole's writer still runs)
        doomed.rollback()
        deadline = time.monotonic() + 3
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got and got[0] > int(row[0])
    finally:
        subscription.stop()
        doomed.close()


@pytest.mark.parametrize("path", ["one_statement", "pipelined"])
@pytest.mark.parametrize("ordering,how", [("lock_free", "rebuild"), ("locked", "rebuild"), ("lock_free", "catch_up")])
def test_an_append_waiting_on_its_row_during_a_rebuild_keeps_that_row(
    pg_databases: Any, ordering: str, how: str, path: str
) -> None:
    """The rebuild holds every session's row, deletes it and writes it again; the one
    statement's touch that waited for the row finds it gone (its snapshot cannot see
    the new one). The function updates once more, in the next statement's snapshot,
    so the row counts this append too (second review of ADR 0066)."""
    import time

    from context_compaction.infrastructure.verify import verify

    pg: dict[str, Any] = LOCK_FREE if ordering == "lock_free" else {}
    h: Harness = pg_databases.harness(f"lf-rebuild-touch-{ordering}-{how}-{path}", **pg)
    extra = {"command_id": "c-two"} if path == "pipelined" else {}  # (a host command id: the pipeline)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(h.do({"type": "start_session", "session_id": "z", "model": "gpt-4o"}))  # (replayed after a)
    writer = h.new_bus(**pg)  # another process
    ok(writer.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    _hold_session(h, "z", "rm_sessions", "BEFORE INSERT")  # the replay pauses at z's row
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (HOLD,))
        if how == "catch_up":  # the position gone, as another process's upgrade leaves it
            h.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
            rebuild, rebuilt = in_thread(lambda: h.do({"type": "get_projection", "session_id": "z"}))
        else:
            rebuild, rebuilt = in_thread(h.bus.services.read_model.rebuild)
        _waiting_on_hold()  # the rebuild holds every row and the events lock, the tables cleared
        append, out = in_thread(lambda: writer.dispatch_json(
            {"type": "append_messages", "session_id": "a", "messages": [user("two")], **extra}))
        time.sleep(0.5)  # (the append waits on a's row)
    finally:
        holder.execute("SELECT pg_advisory_unlock(%s)", (HOLD,))
        holder.close()
    rebuild.join(30)
    append.join(30)
    h.execute("DROP TRIGGER ctxc_hold ON {t}rm_sessions")
    assert "error" not in out and "error" not in rebuilt, (out, rebuilt)
    ok(out["result"])
    assert h.query("SELECT message_count, next_seq FROM {t}rm_sessions WHERE session_id = 'a'") == [(2, 3)]
    report = verify(h.bus.services.extra["app"], h.bus.services.read_model)
    assert all(t.ok for t in report.tables.values()), report.text()
