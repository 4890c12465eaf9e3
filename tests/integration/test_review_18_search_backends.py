"""Review 18: the lagging search index answers alike on memory, SQLite and PostgreSQL
through rewinds, re-appended seqs, deletes, clears, pins and compactions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backends import Databases
from helpers import Harness, RecordingSummarizer, assistant, tool, user

SID = "sb"


def _turn(n: int) -> list[dict[str, Any]]:
    return [user(f"kiwi step {n} " + "please " * 20), assistant(None, [(f"c{n}", "grep", '{"q": "kiwi"}')]),
            tool(f"c{n}", f"kiwi result {n} " + "line " * 20, name="grep"), assistant(f"kiwi done {n}")]


def _script(h: Harness) -> list[Any]:
    out: list[Any] = []

    def search(**extra: Any) -> None:
        for query in ("kiwi", "grep", "result 3", "nothing-here"):
            answer = h.do({"type": "search_history", "session_id": SID, "query": query, "limit": 200, **extra})
            out.append(sorted((x["seq"], x["compacted"], x.get("invalidated")) for x in answer["result"]["hits"])
                       if answer["ok"] else answer["error"]["code"])

    steps = [
        {"type": "start_session", "session_id": SID, "model": "gpt-4o"},
        {"type": "append_messages", "session_id": SID, "messages": [m for n in range(6) for m in _turn(n)]},
        None,
        {"type": "compact", "session_id": SID},
        {"type": "append_messages", "session_id": SID, "messages": _turn(6)},
        None,
        {"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 10},
        {"type": "append_messages", "session_id": SID, "messages": _turn(7)},
        None,
        {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [6, 7]},
        {"type": "pin_messages", "session_id": SID, "seqs": [2]},
        None,
        {"type": "invalidate_history", "session_id": SID, "kind": "clear"},
        {"type": "append_messages", "session_id": SID, "messages": _turn(8)},
        None,
    ]
    for step in steps:
        if step is None:
            search()
            search(include_invalidated=True)
        else:
            answer = h.do(step)
            out.append(answer["ok"] or answer["error"]["code"])
    return out


def test_search_answers_alike_on_every_backend(tmp_path: Path, request: Any) -> None:
    answers = {}
    for kind in ("memory", "sqlite", "postgres"):
        if kind == "postgres":
            request.getfixturevalue("pg_databases")
        (tmp_path / kind).mkdir()
        dbs = Databases(kind, tmp_path / kind)
        try:
            answers[kind] = _script(dbs.harness("main", adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo.")},
                                                context_compaction={"keep_recent_tokens": 300}))
        finally:
            dbs.cleanup()
    assert answers["memory"] == answers["sqlite"], answers
    assert answers["sqlite"] == answers["postgres"], answers
