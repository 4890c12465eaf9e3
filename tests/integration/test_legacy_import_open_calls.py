"""An incremental legacy import reads the session's open calls from the held
aggregate (``legacy._open_calls``) without the ADR 0051 guard: after a restart from a
snapshot taken before a rewind that reopened an archived call, that copy's open calls
miss the reopened one (``groups_incomplete``), and a legacy result answering it is
skipped, where a process that never restarted imports it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, ok
from legacy_fixture import BASE_MS

from context_compaction.infrastructure.legacy import import_legacy

SID = "L"


def _legacy(path: Path, rows: list[tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, model TEXT, created_at INTEGER,
                               updated_at INTEGER, last_compressed_message_at INTEGER);
        CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                               seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT, tool_calls TEXT,
                               tool_call_id TEXT, name TEXT, created_at INTEGER NOT NULL,
                               UNIQUE (session_id, seq));
        """
    )
    conn.execute("INSERT OR IGNORE INTO sessions VALUES (?, 'gpt-4o', ?, ?, NULL)", (SID, BASE_MS, BASE_MS))
    for seq, role, content, calls, call_id in rows:
        conn.execute("INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, name, created_at)"
                     " VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                     (SID, seq, role, content, json.dumps(calls) if calls else None, call_id, BASE_MS + seq))
    conn.commit()
    conn.close()


def _turn(n: int, seq: int) -> list[tuple[Any, ...]]:
    call = [{"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]
    return [(seq, "user", f"step {n} " + "please " * 30, None, None), (seq + 1, "assistant", "", call, None),
            (seq + 2, "tool", f"contents {n} " + "line " * 40, None, f"c{n}"),
            (seq + 3, "assistant", f"done {n} " + "ok " * 30, None, None)]


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("restart", [False, True], ids=["held", "restarted"])
def test_a_legacy_result_for_a_call_a_rewind_reopened_is_imported_after_a_restart(
    make_harness: MakeHarness, tmp_path: Path, restart: bool
) -> None:
    legacy = tmp_path / "picobot.db"
    _legacy(legacy, [row for n in range(12) for row in _turn(n, 4 * n + 1)])  # seqs 1-48, c0 at 2, result 3
    h: Harness = make_harness("main", snapshot_interval=1,
                              adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                              context_compaction={"keep_recent_tokens": 300})
    assert import_legacy(h.bus, legacy).imported == 48
    assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"
    if restart:
        h.settings["snapshot_interval"] = 10**6  # (the newest snapshot stays the one before the rewind)
        h.reopen()
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 2}))  # reopens c0
    if restart:
        h.reopen()
    _legacy(legacy, [(49, "tool", "c0 again", None, "c0")])
    report = import_legacy(h.bus, legacy)
    per = {s["session_id"]: s for s in report.to_dict()["per_session"]}
    assert per[SID]["imported"] == 1, per[SID]
