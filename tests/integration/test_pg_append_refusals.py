"""On PostgreSQL's append (ADR 0073: the library's, the projection under its lock) a refused projection writes
nothing (events, read model, snapshot) and leaves the pooled connections usable."""

from __future__ import annotations

from typing import Any

from context_compaction.domain.session import session_aggregate_id
from context_compaction.infrastructure.verify import verify
from helpers import Harness, err, ok, user


def _counts(h: Harness) -> list[Any]:
    app = h.inspect.app
    snapshots = app.snapshots.recorder.events_table_name
    return [h.events(), *(h.query(f"SELECT count(*) FROM {{t}}{t}")[0][0]
                          for t in ("rm_messages", "rm_sessions", "rm_commands", snapshots))]


def test_a_refused_append_with_a_snapshot_due_writes_nothing_and_the_bus_goes_on(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("refusals", snapshot_interval=1)
    for sid in ("a", "b"):
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "a", "command_id": "c1", "messages": [user("x")]}))
    other = h.new_bus(snapshot_interval=1)  # its own caches: only the database knows c1
    before = _counts(h)
    for _ in range(3):  # (each refusal rolls back; the pooled connection must stay usable)
        err(other.dispatch_json({"type": "append_messages", "session_id": "b", "command_id": "c1",
                                 "messages": [user("y"), user("z")]}), "idempotency_conflict")
        assert _counts(h) == before
    err(other.dispatch_json({"type": "start_session", "session_id": "new", "model": "gpt-4o", "command_id": "c1"}),
        "idempotency_conflict")
    assert _counts(h) == before
    for k in range(5):
        assert ok(other.dispatch_json({"type": "append_messages", "session_id": "b", "command_id": f"b{k}",
                                       "messages": [user(f"b{k}")]}))["seqs"] == [k + 1]
    ok(other.dispatch_json({"type": "start_session", "session_id": "new", "model": "gpt-4o"}))
    assert ok(h.do({"type": "get_history", "session_id": "b"}))["messages"][-1]["content"] == "b4"
    report = h.inspect.verify()
    assert report.ok, report.text() if hasattr(report, "text") else report
    assert h.query("SELECT count(*) FROM {t}rm_sessions WHERE aggregate_id = ?",
                   (session_aggregate_id("new").hex,)) == [(1,)]
