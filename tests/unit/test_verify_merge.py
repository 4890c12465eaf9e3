"""``ctxc verify`` compares each table as a merge of two key-ordered streams
(issue 18 (b), ADR 0044): only the keys that differ are kept."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from eventsourcing.sqlite import SQLiteDatastore

from context_compaction.infrastructure.database import Database, Dialect
from context_compaction.infrastructure.readmodel import SCHEMA
from context_compaction.infrastructure.verify import _diff, _rows


def test_the_merge_finds_missing_unexpected_and_different_rows_anywhere_in_the_order() -> None:
    live = [("a", 1, "x"), ("a", 2, "x"), ("b", 1, "changed"), ("c", 5, "x"), ("d", 1, "x")]
    rebuilt = [("a", 2, "x"), ("a", 3, "x"), ("b", 1, "x"), ("c", 5, "x"), ("e", 1, "x")]
    diff = _diff("rm_messages", iter(live), iter(rebuilt))  # key (session_id, seq)
    assert (diff.live, diff.rebuilt) == (5, 5)
    assert diff.extra == ["a/1", "d/1"]
    assert diff.missing == ["a/3", "e/1"]
    assert diff.different == ["b/1"]
    assert not diff.ok


def test_equal_streams_match_and_empty_sides_are_all_missing_or_unexpected() -> None:
    rows = [("s", n, "x") for n in range(1, 2000)]
    same = _diff("rm_messages", iter(rows), iter(list(rows)))
    assert same.ok and same.live == same.rebuilt == 1999
    gone = _diff("rm_messages", iter([]), iter(rows[:3]))
    assert gone.missing == ["s/1", "s/2", "s/3"] and gone.live == 0
    left = _diff("rm_messages", iter(rows[:2]), iter([]))
    assert left.extra == ["s/1", "s/2"] and left.rebuilt == 0


def _checkpoints_peak(tmp_path: Path, count: int) -> int:
    """Traced peak (bytes) of comparing ``count`` checkpoint rows, each with a 200 KB
    ledger, against themselves, as ``verify`` streams them."""
    datastore = SQLiteDatastore(str(tmp_path / f"cp{count}.db"))
    try:
        db = Database(datastore, Dialect("sqlite"))
        with db.write() as cur:
            for statement in SCHEMA:
                cur.execute(statement)
            columns = cur.execute("PRAGMA table_info(rm_checkpoints)").fetchall()
            names = [c[1] for c in columns]
            sql = f"INSERT INTO rm_checkpoints ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            for n in range(count):
                ledger = f"{n:04d}" + "x" * 200_000  # distinct text: no shared string
                cur.execute(sql, [f"cp{n:04d}" if name == "checkpoint_id" else ledger if name == "ledger"
                                  else n if "INT" in (ctype or "").upper() else "t"
                                  for _, name, ctype, *_ in columns])
        with db.read() as live, db.read() as rebuilt:
            gc.collect()
            tracemalloc.start()
            try:
                diff = _diff("rm_checkpoints", _rows(live, "rm_checkpoints"), _rows(rebuilt, "rm_checkpoints"))
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        assert diff.ok and diff.live == diff.rebuilt == count
        return peak
    finally:
        datastore.close()


def test_comparing_checkpoints_holds_a_few_rows_at_once_not_the_table(tmp_path: Path) -> None:
    # Each checkpoint row holds its ledger and there is one per compaction: at 100k
    # messages, holding the table (twice) was 28 MB of verify's peak (issue 18, ADR 0044).
    few, many = _checkpoints_peak(tmp_path, 3), _checkpoints_peak(tmp_path, 24)
    assert many < 1.5 * few, (few, many)
