"""Agent-facing budget tools for the ``TurnRunner`` (issue 43), both off by default.

``context_remaining``: the tokens left before the compaction threshold and the window,
the forecast in turns (``/info``'s, method named) and the last compaction. ``compact_now``:
the model asks for a compaction; it runs when the turn has ended (no checkpoint is made
mid-turn, spec §11.4), and its outcome is among the turn's compactions.
"""

from __future__ import annotations

import json
from typing import Any

from ..contracts import commands as c

CONTEXT_REMAINING_TOOL_NAME = "context_remaining"
COMPACT_NOW_TOOL_NAME = "compact_now"

CONTEXT_REMAINING_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": CONTEXT_REMAINING_TOOL_NAME,
        "description": (
            "How much room is left in this conversation's context: tokens until it is "
            "compacted and until the window is full, the turns that leaves at the recent "
            "pace, and when it was last compacted."
        ),
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}

COMPACT_NOW_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": COMPACT_NOW_TOOL_NAME,
        "description": (
            "Ask for this conversation's older part to be summarized when the current "
            "turn ends (a good moment: a subtask finished). Recent turns stay verbatim."
        ),
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}


def run_context_remaining(bus: Any, session_id: str, inputs: c.PrepareTurn | None = None) -> str:
    """The tool result: a JSON text for the model; ``inputs``: the turn's own system
    prompt, tools, knowledge and plan, which take room in its requests too."""
    given = {} if inputs is None else inputs.model_dump(
        include={"system_prompt", "tools", "knowledge", "active_plan", "model"})
    usage = bus.dispatch(c.GetContextUsage(session_id=session_id, **given))
    attempts = bus.dispatch(c.ListCompactionAttempts(session_id=session_id, limit=50)).attempts
    last = next((a for a in attempts if a.outcome in ("compacted", "degraded")), None)
    f = usage.forecast
    return json.dumps({
        "tokens_until_compaction": max(0, usage.compression_threshold_tokens - usage.used_tokens),
        "tokens_until_window_full": usage.remaining_tokens,
        "used_tokens": usage.used_tokens,
        "turns_until_compaction": f.turns_to_threshold if f else None,
        "turns_until_window_full": f.turns_to_window if f else None,
        "forecast_method": f.method if f else None,
        "last_compaction": None if last is None else {
            "at": last.at, "tokens_before": last.tokens_before, "tokens_after": last.tokens_after,
        },
    })


BUDGET_TOOLS = {CONTEXT_REMAINING_TOOL_NAME: CONTEXT_REMAINING_TOOL, COMPACT_NOW_TOOL_NAME: COMPACT_NOW_TOOL}
COMPACT_NOW_REPLY = json.dumps({"scheduled": True, "when": "at the end of this turn"})
