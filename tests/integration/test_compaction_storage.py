"""The compaction service: manual /compact, commit semantics, restore, Timeline (issue 3).

Spec §11.1, §12, §13, §14, §20.3-§20.4.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from context_compaction.domain.projection import SUMMARY_HEADER
from context_compaction.infrastructure.demo.scenario import coding_session
from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, err, fingerprint, ok, user
from compaction_builders import make, add_turns, compact, projection, history


SID = "s"


@pytest.fixture
def turns():
    return coding_session(8, big_output_chars=3_000)


# ----------------------------------------------------------------- manual


# ---------------------------------------------------------- concurrency


# ---------------------------------------------------------- restore


@pytest.mark.parametrize("damage", ["missing", "empty summary", "illegal boundary"])
def test_a_broken_checkpoint_falls_back_to_raw_history(make_harness: MakeHarness, turns, damage: str) -> None:
    spy = RecordingSummarizer()
    h = make(make_harness, spy)
    add_turns(h, turns)
    cp = compact(h)["checkpoint_id"]
    h.close()
    if damage == "missing":
        h.execute("DELETE FROM {t}rm_checkpoints WHERE checkpoint_id = ?", (cp,))
    elif damage == "empty summary":
        h.execute("UPDATE {t}rm_checkpoints SET summary = '  ' WHERE checkpoint_id = ?", (cp,))
    else:
        h.execute("UPDATE {t}rm_checkpoints SET first_retained_seq = 100000 WHERE checkpoint_id = ?", (cp,))
    h2 = make_harness("c", adapters={"summarizer": spy})
    events = h2.events()
    p = projection(h2)
    assert p["checkpoint_id"] is None
    assert p["diagnostics"] and cp in p["diagnostics"][0]
    assert p["first_raw_seq"] == 1
    assert len(p["messages"]) == len(history(h2))
    assert len(spy.requests) == 1 and h2.events() == events
    h2.close()


# ---------------------------------------------------------- /info


def test_a_storage_failure_at_commit_keeps_the_old_projection(make_harness: MakeHarness, turns, caplog) -> None:
    h = make(make_harness)
    add_turns(h, turns)
    live = projection(h)
    events = h.events()
    h.fail_inserts("rm_checkpoints")  # the checkpoint cannot be projected
    caplog.set_level(logging.DEBUG, logger="context_compaction")
    error = err(h.do({"type": "compact", "session_id": SID}), "storage_error")
    # The cause is named (the driver's error code, never the row's content).
    assert error["details"]["cause"] in ("SQLITE_CONSTRAINT_TRIGGER", "RaiseException (SQLSTATE P0001)")
    # A constraint the database enforces fails the same way on every retry: at most the
    # one optimistic retry under the writer lock, not a spin until the command deadline
    # (SQLite reports a trigger's RAISE(ABORT) as an IntegrityError, like a lost race).
    assert caplog.text.count("write conflict, retrying") <= 1
    assert h.events() == events  # checkpoint event and pointer rolled back together
    h.allow_inserts("rm_checkpoints")
    assert projection(h) == live
    assert compact(h)["status"] == "compacted"  # and the command can be retried
    h.close()


def test_a_new_database_has_the_event_and_checkpoint_schema(make_harness: MakeHarness) -> None:
    h = make_harness("fresh")
    counts = {table: h.count(table) for table in ("rm_sessions", "rm_messages", "rm_checkpoints",
                                                  "rm_invalidations", "rm_position", "rm_timeline",
                                                  "rm_token_counts")}
    # Every table exists and is empty, except the one row that records the schema version.
    assert counts == {"rm_sessions": 0, "rm_messages": 0, "rm_checkpoints": 0, "rm_invalidations": 0,
                      "rm_position": 1, "rm_timeline": 0, "rm_token_counts": 0}
    assert h.query("SELECT name FROM {t}rm_position") == [("schema",)]
    assert h.events() == 0
    if not h.is_postgres:
        assert h.query("PRAGMA journal_mode")[0][0] == "wal"
    h.close()
