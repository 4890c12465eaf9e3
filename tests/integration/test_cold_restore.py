"""A cold restore's fixed cost (ADR 0052): a process that only reads a SQLite session
never opens the writer connection; the turn-lease table is created on first use."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from context_compaction import Settings, bootstrap
from context_compaction import commands as c


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def test_a_reading_bootstrap_writes_nothing_and_leases_still_work(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    settings = Settings(database_url=f"sqlite:///{path}", summarizer="extractive")
    bus = bootstrap(settings)
    bus.dispatch(c.StartSession(session_id="s", model="gpt-4o"))
    bus.dispatch(c.AppendMessages(session_id="s", messages=[{"role": "user", "content": "hi"}]))
    bus.close()
    assert "ctxc_turn_leases" not in _tables(path)  # nothing asked for a lease yet

    bus = bootstrap(settings)
    assert [m["content"] for m in bus.dispatch(c.GetProjection(session_id="s")).messages] == ["hi"]
    pool = bus.services.extra["app"].factory.datastore.pool
    assert pool._writer is None  # the restore read; it opened no writer connection
    leases = bus.services.leases
    assert leases.acquire("s", "A", 30) and leases.holder("s") == "A"
    bus.close()
    assert "ctxc_turn_leases" in _tables(path)

    other = bootstrap(settings)  # another process: the table is there, the lease too
    assert other.services.leases.holder("s") == "A" and not other.services.leases.acquire("s", "B", 30)
    other.close()
