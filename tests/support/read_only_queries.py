"""The queries and writes the read-only store tests send, and their answers."""

from __future__ import annotations

import json
from typing import Any

from context_compaction import Settings, bootstrap
from harness import Inspect

QUERIES = [
    {"type": "get_history", "session_id": "S"},
    {"type": "search_history", "session_id": "S", "query": "kiwi"},
    {"type": "get_projection", "session_id": "S"},
    {"type": "replay_session", "session_id": "S"},
    {"type": "list_checkpoints", "session_id": "S"},
    {"type": "list_sessions"},
    {"type": "read_events"},
    {"type": "get_context_usage", "session_id": "S"},
    {"type": "recall_timeline", "session_id": "S"},
    {"type": "list_compaction_attempts", "session_id": "S"},
]


WRITES = [
    {"type": "append_messages", "session_id": "S", "messages": [{"role": "user", "content": "more"}]},
    {"type": "start_session", "session_id": "T", "model": "gpt-4o"},
    {"type": "compact", "session_id": "S"},
    {"type": "purge_session", "session_id": "S"},
    {"type": "delete_session", "session_id": "S"},
    {"type": "pin_messages", "session_id": "S", "seqs": [1]},
]


def answers_of(url: str) -> dict[str, Any]:
    with bootstrap(Settings(database_url=url, summarizer="extractive")) as bus:
        assert Inspect(bus).read_only, "detected at start"
        return {json.dumps(cmd): bus.dispatch_json(cmd) for cmd in QUERIES + WRITES}
