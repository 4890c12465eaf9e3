"""The shared projection handlers (ADR 0050) answer command-id reuse the same
way on every backend, including through a second bus that does not know the id."""

from __future__ import annotations

from typing import Any

import pytest

from backends import Databases
from helpers import Harness, user


def _script(h: Harness) -> list[Any]:
    other = h.new_bus()
    steps: list[tuple[Any, dict[str, Any]]] = [
        (h.bus, {"type": "start_session", "session_id": "a", "model": "gpt-4o", "command_id": "k1"}),
        (h.bus, {"type": "start_session", "session_id": "b", "model": "gpt-4o"}),
        (h.bus, {"type": "append_messages", "session_id": "a", "command_id": "k2", "messages": [user("x")]}),
        (other, {"type": "append_messages", "session_id": "b", "command_id": "k2", "messages": [user("y")]}),
        (other, {"type": "append_messages", "session_id": "a", "command_id": "k1", "messages": [user("z")]}),
        (other, {"type": "append_messages", "session_id": "a", "command_id": "k2", "messages": [user("x")]}),
        (other, {"type": "start_session", "session_id": "c", "model": "gpt-4o", "command_id": "k2"}),
        (other, {"type": "pin_messages", "session_id": "a", "seqs": [1], "command_id": "k2"}),
        (h.bus, {"type": "pin_messages", "session_id": "a", "seqs": [1], "command_id": "k3"}),
        (other, {"type": "pin_messages", "session_id": "b", "seqs": [1], "command_id": "k3"}),
        (other, {"type": "append_messages", "session_id": "b", "command_id": "k3", "messages": [user("w")]}),
        (other, {"type": "append_messages", "session_id": "b", "command_id": "k4", "messages": [user("v")]}),
    ]
    out = []
    for bus, command in steps:
        answer = bus.dispatch_json(command)
        if answer["ok"]:
            result = answer["result"]
            out.append(("ok", result.get("seqs"), result.get("pinned_seqs"), result.get("duplicate")))
        else:
            out.append(("error", answer["error"]["code"]))
    for sid in ("a", "b", "c"):
        answer = h.do({"type": "get_history", "session_id": sid})
        out.append([m["content"] for m in answer["result"]["messages"]] if answer["ok"] else answer["error"]["code"])
    return out


def test_command_id_reuse_is_answered_alike_on_memory_sqlite_and_postgres(tmp_path: Any, request: Any) -> None:
    answers = {}
    for kind in ("memory", "sqlite", "postgres"):
        if kind == "postgres":
            request.getfixturevalue("pg_databases")
        dbs = Databases(kind, tmp_path / kind)
        (tmp_path / kind).mkdir()
        try:
            answers[kind] = _script(dbs.harness("main"))
        finally:
            dbs.cleanup()
    assert answers["memory"] == answers["sqlite"] == answers["postgres"], answers
