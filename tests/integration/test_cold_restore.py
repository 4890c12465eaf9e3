"""A cold restore's fixed cost (ADR 0052): a process that only reads a SQLite session
writes nothing to the database file; the turn-lease table is created on first use."""

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


def _written(path: Path) -> tuple[int, int, int]:
    """The database file's size and modification time, and its write-ahead log's size
    (a reader may create the log, empty; a write appends frames to it)."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size, path.stat().st_mtime_ns, wal.stat().st_size if wal.exists() else 0


def test_a_reading_bootstrap_writes_nothing_and_leases_still_work(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    settings = Settings(database_url=f"sqlite:///{path}", summarizer="extractive")
    bus = bootstrap(settings)
    bus.dispatch(c.StartSession(session_id="s", model="gpt-4o"))
    bus.dispatch(c.AppendMessages(session_id="s", messages=[{"role": "user", "content": "hi"}]))
    bus.close()
    assert "ctxc_turn_leases" not in _tables(path)  # nothing asked for a lease yet

    before = _written(path)
    bus = bootstrap(settings)
    assert [m["content"] for m in bus.dispatch(c.GetProjection(session_id="s")).messages] == ["hi"]
    assert _written(path) == before  # the restore read; it wrote nothing
    leases = bus.services.leases
    assert leases.acquire("s", "A", 30) and leases.holder("s") == "A"
    bus.close()
    assert "ctxc_turn_leases" in _tables(path)

    other = bootstrap(settings)  # another process: the table is there, the lease too
    assert other.services.leases.holder("s") == "A" and not other.services.leases.acquire("s", "B", 30)
    other.close()
