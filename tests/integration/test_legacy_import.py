"""Legacy import per session (spec §15; issue 12).

``turn_id`` is kept when the legacy table has it; a legacy session whose id already
exists natively is refused (never mixed into that history); a refused or soft-deleted
session does not stop the others, and the report says what happened to each.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from context_compaction.infrastructure.legacy import import_legacy
from helpers import Harness, fingerprint, ok, user
from legacy_fixture import BASE_MS, add_legacy_messages, build_legacy_db


def history(h: Harness, sid: str) -> list[dict]:
    return ok(h.do({"type": "get_history", "session_id": sid, "include_invalidated": True}))["messages"]


def test_turn_ids_of_the_legacy_table_are_kept(tmp_path: Path, harness: Harness) -> None:
    legacy = tmp_path / "picobot.db"
    conn = sqlite3.connect(legacy)
    conn.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, last_compressed_message_at INTEGER);
        CREATE TABLE messages (session_id TEXT, seq INTEGER, role TEXT, content TEXT, tool_calls TEXT,
                               tool_call_id TEXT, name TEXT, turn_id TEXT, created_at INTEGER);
        """
    )
    conn.execute("INSERT INTO sessions VALUES ('s', 'gpt-4o', NULL)")
    for seq, role, content, turn in [(1, "user", "hi", "t-1"), (2, "assistant", "hello", "t-1"),
                                     (3, "user", "again", "t-2"), (4, "assistant", "yes", None)]:
        conn.execute("INSERT INTO messages VALUES ('s', ?, ?, ?, NULL, NULL, NULL, ?, ?)",
                     (seq, role, content, turn, BASE_MS + seq))
    conn.commit()
    conn.close()
    report = import_legacy(harness.bus, legacy)
    assert report.imported == 4 and not report.refused
    assert [m["turn_id"] for m in history(harness, "s")] == ["t-1", "t-1", "t-2", None]


def test_a_native_session_of_the_same_id_is_refused_and_the_others_still_import(
    tmp_path: Path, harness: Harness
) -> None:
    h = harness
    legacy = tmp_path / "picobot.db"
    build_legacy_db(legacy)
    ok(h.do({"type": "start_session", "session_id": "cli:local", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "cli:local", "messages": [user("native work")]}))
    native = history(h, "cli:local")
    report = import_legacy(h.bus, legacy)
    per = {s["session_id"]: s for s in report.to_dict()["per_session"]}
    assert per["cli:local"]["status"] == "refused" and per["cli:local"]["imported"] == 0
    assert "already exists and was not created by a legacy import" in per["cli:local"]["refused"]
    assert history(h, "cli:local") == native  # never mixed into the native history
    assert per["feishu:oc:dialog-1"]["status"] == "imported" and per["feishu:oc:dialog-1"]["imported"] == 6
    assert report.to_dict()["sessions_refused"] == 1
    assert "session 'cli:local' refused" in report.text()


def test_a_deleted_session_is_reported_and_does_not_stop_the_import(tmp_path: Path, harness: Harness) -> None:
    h = harness
    legacy = tmp_path / "picobot.db"
    build_legacy_db(legacy)
    first = import_legacy(h.bus, legacy)
    assert first.imported == 8 and not first.refused
    ok(h.do({"type": "delete_session", "session_id": "cli:local"}))
    add_legacy_messages(legacy)  # new legacy rows for the deleted session
    before = fingerprint(h.bus)
    again = import_legacy(h.bus, legacy)
    per = {s["session_id"]: s for s in again.to_dict()["per_session"]}
    assert per["cli:local"]["status"] == "refused" and "is deleted" in per["cli:local"]["refused"]
    assert per["feishu:oc:dialog-1"] == {**per["feishu:oc:dialog-1"], "status": "imported", "imported": 0}
    assert fingerprint(h.bus) == before  # nothing written for the deleted one, nothing new for the other
