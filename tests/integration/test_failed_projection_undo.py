"""A projection that fails inside the store's write (a host
command id another session took between the handler's read-model check and the save,
ADR 0019) rolls back its rows and its events alike on memory, SQLite and PostgreSQL:
the command answers ``idempotency_conflict``, every projected table, the event feed,
the history and the search index are as before, and the session takes the next append.
"""

from __future__ import annotations
from typing import Any
import pytest
from context_compaction.infrastructure.readmodel import PROJECTED_TABLES

@pytest.mark.backends("memory", "sqlite", "postgres")
def test_a_failed_projection_changes_nothing_on_every_backend(databases: Any) -> None:
    h = databases.harness("u")
    for sid in ("a", "b"):
        assert h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"})["ok"]
    assert h.do({"type": "append_messages", "session_id": "a", "command_id": "X", "messages": [{"role": "user", "content": "one"}]})["ok"]
    assert h.do({"type": "append_messages", "session_id": "b", "messages": [{"role": "user", "content": "b1"}]})["ok"]
    rm = h.bus.services.read_model
    real = rm.command
    calls = []
    def once_blind(cid: str) -> Any:
        calls.append(cid)
        return None if len(calls) == 1 else real(cid)
    rm.command = once_blind
    before = {t: rm.table_rows(t) for t in PROJECTED_TABLES}
    events_before = h.do({"type": "read_events", "after": 0, "limit": 1000})
    env = h.do({"type": "append_messages", "session_id": "b", "command_id": "X", "messages": [{"role": "user", "content": "two"}, {"role": "user", "content": "three"}]})
    rm.command = real
    assert calls == ["X", "X"]  # blind once, then the conflict path read it: the projection did fail
    assert not env["ok"] and env["error"]["code"] == "idempotency_conflict"
    assert {t: rm.table_rows(t) for t in PROJECTED_TABLES} == before
    assert h.do({"type": "read_events", "after": 0, "limit": 1000}) == events_before
    hist = h.do({"type": "get_history", "session_id": "b"})["result"]["messages"]
    assert [m["content"] for m in hist] == ["b1"]
    assert h.do({"type": "append_messages", "session_id": "b", "messages": [{"role": "user", "content": "after"}]})["ok"]
    hist = h.do({"type": "get_history", "session_id": "b"})["result"]["messages"]
    assert [m["content"] for m in hist] == ["b1", "after"]
    assert h.do({"type": "search_history", "session_id": "b", "query": "two"})["result"]["hits"] == []
