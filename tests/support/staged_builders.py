"""Builders of the staged (tool-result clearing) tests and their storage twins."""

from __future__ import annotations

import json
from typing import Any

from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, ok, user

SID = "s"


SYSTEM = "You are a careful coding agent."


RESERVE = 1_000


def clearing(**extra: Any) -> dict[str, Any]:
    return {
        "reserve_tokens": RESERVE,
        "keep_recent_tokens": 2_000,
        "tool_results": {"clear": True, "keep_recent_tokens": 1_500, "clear_at_least_tokens": 500, **extra},
    }


def build(h: Harness, turns: int = 6) -> dict[str, str]:
    """A coding session and the next user request; returns tool_call_id -> tool name."""
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    names: dict[str, str] = {}
    for t in coding_session(turns, big_output_chars=6_000):
        names.update(t.tool_names)
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("Next.", turn_id="next")]}))
    return names


def limit_just_over(h: Harness, below: int = 100) -> int:
    """Set the agent limit so the next request is ``below`` tokens over the threshold."""
    used = ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": SYSTEM}))["used_tokens"]
    ok(h.do({"type": "configure_session", "session_id": SID, "agent_token_limit": used + RESERVE - below}))
    return used


def prepare(h: Harness) -> dict[str, Any]:
    return ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM}))


def history(messages: list[dict[str, Any]]) -> str:
    return json.dumps([m for m in messages if m["role"] != "system"], sort_keys=True)


def cleared_events(h: Harness) -> list[dict[str, Any]]:
    rows = h.stored_events("context_compaction:Session.ToolResultsCleared")
    return [{"version": v, **json.loads(state)} for v, _, state in rows]
