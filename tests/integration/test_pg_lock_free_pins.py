"""Lock-free fixes pinned by the second review of ADR 0066 (each fails when its fix is
undone; the reviewer ran every one against a mutant of the fix): a new process's first
append on a marked database takes no lock; a lock-free catch-up or marking takes the
sessions' rows before the events lock; the timeline follower reads through the gap
rule; a locked process reads a lock-free database through it too; a locked database's
bootstrap replays at once after an upgrade drops the tables."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL
from helpers import assistant, in_thread, ok, tool, user, wait_for_advisory

pytestmark = pytest.mark.postgres

LOCK_FREE: dict[str, Any] = {"postgres": {"ordering": "lock_free"}}
SMALL_KEEP: dict[str, Any] = {"context_compaction": {"keep_recent_tokens": 10}}



def hold_trigger(h: Any, name: str, table: str, when: str, session_id: str, key: int) -> None:
    """A row trigger on ``table`` that waits on advisory lock ``key`` for ``session_id``."""
    h.execute(
        f"CREATE OR REPLACE FUNCTION {{t}}{name}() RETURNS trigger AS $$ BEGIN"
        f" IF NEW.session_id = '{session_id}' THEN PERFORM pg_advisory_lock({key});"
        f" PERFORM pg_advisory_unlock({key}); END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
    )
    h.execute(f"CREATE TRIGGER {name} {when} ON {{t}}{table} FOR EACH ROW EXECUTE FUNCTION {{t}}{name}()")



def _deadlocks() -> int:
    with psycopg.connect(POSTGRES_URL) as c:
        return int(c.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").fetchone()[0])


def test_first_append_of_a_new_process_on_a_marked_database_takes_no_lock(pg_databases: Any) -> None:
    """Fix (3). Mutant d3b_first_append_locks: the first append marks under the locks
    again, waits behind an unrelated held append (its session row, then the events
    lock)."""
    h = pg_databases.harness("p3", **LOCK_FREE)
    for s in ("slow", "b"):
        ok(h.do({"type": "start_session", "session_id": s, "model": "gpt-4o"}))  # (marked here)
    restarted = h.new_bus(**LOCK_FREE)
    hold_trigger(h, "hold_slow", "rm_messages", "BEFORE INSERT", "slow", 669001)
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(669001)")
    try:
        t, out = in_thread(lambda: h.do({"type": "append_messages", "session_id": "slow", "messages": [user("late")]}))
        wait_for_advisory(669001)
        t0 = time.monotonic()
        done = threading.Event()
        threading.Thread(target=lambda: (restarted.dispatch_json(
            {"type": "append_messages", "session_id": "b", "messages": [user("b")]}), done.set()), daemon=True).start()
        waited = done.wait(1.5)
        elapsed = time.monotonic() - t0
    finally:
        holder.execute("SELECT pg_advisory_unlock(669001)")
        holder.close()
    t.join(20)
    assert waited, f"a new process's first append waited {elapsed:.2f}s for an unrelated held append"



@pytest.mark.parametrize("action", ["read", "append"])
def test_a_lock_free_catch_up_waits_for_a_writer_holding_its_row_without_a_deadlock(pg_databases: Any, action: str) -> None:
    """Fix (5): the catch-up's branch (read; mutant d5_catchup_no_sessions_first) and
    the marking's rebuild (append; mutant d5_mark_no_sessions_first). Mutated, the
    catch-up takes the events lock, then its DELETE waits for the writer's row while
    the writer waits for the events table: a deadlock (one of them aborted)."""
    from context_compaction.infrastructure.readmodel.schema import POSITION

    h = pg_databases.harness("p5", **LOCK_FREE)
    for s in ("a", "n"):
        ok(h.do({"type": "start_session", "session_id": s, "model": "gpt-4o"}))
        ok(h.do({"type": "append_messages", "session_id": s, "messages": [user("one")]}))
    reader = h.new_bus(**LOCK_FREE)
    hold_trigger(h, "hold_n", "rm_sessions", "AFTER UPDATE", "n", 669005)
    h.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))  # (as another process's upgrade)
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(669005)")
    d0 = _deadlocks()
    try:
        tw, out_w = in_thread(lambda: h.do({"type": "append_messages", "session_id": "n", "messages": [user("x")]}))
        wait_for_advisory(669005)  # the writer holds n's row, its events not yet inserted
        cmd = ({"type": "get_projection", "session_id": "a"} if action == "read" else
               {"type": "append_messages", "session_id": "a", "messages": [user("two")]})  # (append: _mark_lock_free rebuilds)
        tr, out_r = in_thread(lambda: reader.dispatch_json(cmd))
        time.sleep(0.5)  # (the reader's catch-up reaches n's row)
    finally:
        holder.execute("SELECT pg_advisory_unlock(669005)")
        holder.close()
    tw.join(30)
    tr.join(30)
    h.execute("DROP TRIGGER hold_n ON {t}rm_sessions")
    ok(out_w["result"])
    ok(out_r["result"])
    assert _deadlocks() == d0
    assert [m["content"] for m in ok(h.do({"type": "get_projection", "session_id": "n"}))["messages"]] == ["one", "x"]


def _fill(h: Any, sid: str) -> None:
    ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    for n in range(6):
        ok(h.do({"type": "append_messages", "session_id": sid, "messages": [
            user(f"step {n}"), assistant("reading", [(f"c{n}", "read_file", '{"path": "x.py"}')]),
            tool(f"c{n}", f"line {n} of a long file\n" * 200), assistant(f"done {n}")]}))


def test_a_checkpoint_committing_late_still_gets_its_timeline_entry(pg_databases: Any) -> None:
    """Fix (7). Mutant d7_timeline_direct: another process's later checkpoint commits
    first; its timeline follower (direct read) moves past the held one, whose entry is
    then never written."""
    from context_compaction.domain.session import session_aggregate_id
    from context_compaction.infrastructure.timeline import CHECKPOINT_TOPIC

    h = pg_databases.harness("p7", **LOCK_FREE, **SMALL_KEEP)
    other = pg_databases.harness("p7", **LOCK_FREE, **SMALL_KEEP)
    _fill(h, "slow")
    _fill(other, "fast")
    table = h.bus.services.extra["app"].projector.events_table.qualified
    schema = table.split(".")[0]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(
            f"CREATE FUNCTION {schema}.hold_cp() RETURNS trigger AS $$ BEGIN"
            f" IF NEW.originator_id = '{session_aggregate_id('slow')}' AND NEW.topic = '{CHECKPOINT_TOPIC}' THEN"
            " PERFORM pg_advisory_lock(669007); PERFORM pg_advisory_unlock(669007); END IF; RETURN NULL; END $$ LANGUAGE plpgsql")
        admin.execute(f"CREATE CONSTRAINT TRIGGER hold_cp AFTER INSERT ON {table} DEFERRABLE INITIALLY DEFERRED"
                      f" FOR EACH ROW EXECUTE FUNCTION {schema}.hold_cp()")  # (at COMMIT: its ids drawn)
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(669007)")
    try:
        t, out = in_thread(lambda: h.do({"type": "compact", "session_id": "slow"}))
        wait_for_advisory(669007)
        ok(other.do({"type": "compact", "session_id": "fast"}))  # commits first, a higher id; its follower runs
    finally:
        holder.execute("SELECT pg_advisory_unlock(669007)")
        holder.close()
    t.join(30)
    ok(out["result"])
    rows = sorted(r[0] for r in h.query("SELECT session_id FROM {t}rm_timeline"))
    assert rows == ["fast", "slow"]


@pytest.mark.parametrize("ordering", ["locked", "lock_free"])
def test_an_append_right_after_an_upgrade_on_either_ordering(pg_databases: Any, ordering: str) -> None:
    """The bootstrap that drops the tables of an older shape replays the events at
    once: before, an append before any read failed (its projection reads its
    session's row), on either ordering."""
    h = pg_databases.harness(f"pin-upgrade-{ordering}", postgres={"ordering": ordering})
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("one")]}))
    h.execute("UPDATE {t}rm_position SET notification_id = 4 WHERE name = 'schema'")  # an older shape
    h.reopen()  # the new release starts: drops and recreates the projected tables
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("two")]}))
    messages = ok(h.do({"type": "get_projection", "session_id": "a"}))["messages"]
    assert [m["content"] for m in messages] == ["one", "two"]


def test_a_locked_process_reads_a_lock_free_database_through_the_gap_rule(pg_databases: Any) -> None:
    """Its event feed must not return an id above a hole a lock-free writer of another
    process may still fill, whatever its own setting."""
    h = pg_databases.harness("pin-locked-reader", **LOCK_FREE)
    for s in ("slow", "fast"):
        ok(h.do({"type": "start_session", "session_id": s, "model": "gpt-4o"}))
    reader = h.new_bus(postgres={"ordering": "locked"})  # e.g. an HTTP server serving GET /v1/events
    events = h.bus.services.extra["app"].projector.events_table.qualified
    head = h.query(f"SELECT max(notification_id) FROM {events}")[0][0]
    hold_trigger(h, "hold_slow", "rm_messages", "BEFORE INSERT", "slow", 662001)
    holder = psycopg.connect(POSTGRES_URL, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (662001,))
    try:
        t, out = in_thread(lambda: h.do({"type": "append_messages", "session_id": "slow", "messages": [user("s")]}))
        wait_for_advisory(662001)
        ok(h.do({"type": "append_messages", "session_id": "fast", "messages": [user("f")]}))
        assert ok(reader.dispatch_json({"type": "read_events", "after": head}))["events"] == []
    finally:
        holder.execute("SELECT pg_advisory_unlock(%s)", (662001,))
        holder.close()
    t.join(20)
    ok(out["result"])
    feed = ok(reader.dispatch_json({"type": "read_events", "after": head}))["events"]
    assert [e["position"] for e in feed] == sorted(e["position"] for e in feed) and len(feed) == 2
