"""The SQLite turn-lease table, created on first use (ADR 0052) and upgraded in place
with the columns of ADR 0085, by several processes at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from turnlease_helpers import create_lease_table

PROCESSES = 4


def test_processes_upgrading_an_older_lease_table_at_once_all_succeed_first_time(tmp_path: Path) -> None:
    # Its schema statements run under BEGIN IMMEDIATE (the storage simplification of
    # issue 37): under a deferred BEGIN each process read the columns, then failed to
    # upgrade its read lock to ALTER the table (SQLITE_BUSY, no busy wait), every round.
    for n in range(3):
        path = str(tmp_path / f"leases{n}.db")
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE ctxc_turn_leases (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                         "expires_at DOUBLE PRECISION NOT NULL)")
        barrier, results = multiprocessing.Barrier(PROCESSES), multiprocessing.Queue()
        workers = [multiprocessing.Process(target=create_lease_table, args=(path, barrier, results))
                   for _ in range(PROCESSES)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=60)
        assert [results.get(timeout=5) for _ in workers] == ["ok"] * PROCESSES
        with sqlite3.connect(path) as conn:
            columns = [row[1] for row in conn.execute("PRAGMA table_info(ctxc_turn_leases)")]
        assert columns == ["session_id", "owner", "expires_at", "renewals", "lease_seconds"]
