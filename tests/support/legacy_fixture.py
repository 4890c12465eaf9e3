"""Builds a small legacy PicoBot SQLite file (seed 002's schema) for import tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

BASE_MS = 1_767_000_000_000  # 2025-12-29, epoch milliseconds as PicoBot stored them


def build_legacy_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, created_at INTEGER, updated_at INTEGER,
                               last_compressed_message_at INTEGER);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                               seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT, tool_calls TEXT,
                               tool_call_id TEXT, name TEXT, created_at INTEGER NOT NULL,
                               UNIQUE (session_id, seq));
        CREATE TABLE memories (id INTEGER PRIMARY KEY, session_id TEXT, category TEXT, key TEXT,
                               content TEXT, created_at INTEGER);
        """
    )
    conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)",
                 ("feishu:oc:dialog-1", "gpt-4o", BASE_MS, BASE_MS + 9_000, BASE_MS + 4_000))
    conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)", ("cli:local", None, BASE_MS, BASE_MS, None))
    call = [{"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]
    rows = [
        ("feishu:oc:dialog-1", 1, "user", "Please fix the failing import in a.py", None, None, None),
        ("feishu:oc:dialog-1", 2, "assistant", "", json.dumps(call), None, None),
        ("feishu:oc:dialog-1", 3, "tool", "import os\nimport sys", None, "call_a", "read_file"),
        ("feishu:oc:dialog-1", 4, "assistant", "The import of sys is unused; removed it.", None, None, None),
        ("feishu:oc:dialog-1", 5, "user", "Thanks. Also check b.py on port 8443.", None, None, None),
        ("feishu:oc:dialog-1", 6, "tool", "orphaned output", None, "ghost", "grep"),
        ("feishu:oc:dialog-1", 7, "assistant", "b.py looks fine.", None, None, None),
        ("cli:local", 3, "user", "hello from the CLI", None, None, None),
        ("cli:local", 4, "assistant", "hi", None, None, None),
    ]
    for i, (sid, seq, role, content, calls, call_id, name) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, name, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (sid, seq, role, content, calls, call_id, name, BASE_MS + 1_000 * i),
        )
    conn.execute("INSERT INTO memories VALUES (1, 'feishu:oc:dialog-1', 'timeline', 'k', 'old summary', ?)",
                 (BASE_MS + 4_000,))
    conn.commit()
    conn.close()


def add_legacy_messages(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO messages (session_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
        ("cli:local", 5, "user", "one more question", BASE_MS + 60_000),
    )
    conn.commit()
    conn.close()
