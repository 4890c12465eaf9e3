"""The ``recall_history`` tool: the model searches and expands compacted history itself.

A ready OpenAI tool definition (``RECALL_HISTORY_TOOL``) and its local executor: the
``TurnRunner`` offers it when asked (``run(recall=True)``) and answers its calls with
``search_history`` / ``get_history`` instead of the host's executor (issue 16). Hosts
with their own loop can offer the same definition and call :func:`run_recall`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from context_compaction.domain.errors import InvalidCommand

from ..contracts import commands as c
from ..contracts.results import HistoryMessage

RECALL_TOOL_NAME = "recall_history"
#: Messages one expansion returns at most (the model asks again from the next seq).
EXPAND_LIMIT = 20

RECALL_HISTORY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RECALL_TOOL_NAME,
        "description": (
            "Recall earlier messages of this conversation verbatim, also those the "
            "summary stands for. Give `query` to search them (every word must occur; "
            "returns seq, role and a snippet per hit), or `from_seq` (and `to_seq`) to "
            "read the messages of a seq range in order."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to search for."},
                "from_seq": {"type": "integer", "minimum": 1, "description": "First seq to read."},
                "to_seq": {"type": "integer", "minimum": 1, "description": "Last seq to read."},
                "limit": {"type": "integer", "minimum": 1, "maximum": EXPAND_LIMIT},
            },
            "additionalProperties": False,
        },
    },
}


def run_recall(bus: Any, session_id: str, arguments: str | dict[str, Any]) -> str:
    """Answer one ``recall_history`` call: a JSON text for the tool result.

    Bad arguments are answered with an error text for the model (never raised): the
    tool result is the model's to read, like any tool failure.
    """
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        limit = args.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError("limit must be a positive integer")
        if args.get("from_seq") is not None:
            result = bus.dispatch(c.GetHistory(
                session_id=session_id, from_seq=args["from_seq"], to_seq=args.get("to_seq"),
                limit=min(limit or EXPAND_LIMIT, EXPAND_LIMIT)))
            return json.dumps({"messages": [_brief(m) for m in result.messages]}, ensure_ascii=False)
        if args.get("query"):
            found = bus.dispatch(c.SearchHistory(
                session_id=session_id, query=args["query"], limit=min(limit or 10, EXPAND_LIMIT)))
            # (``truncated`` only where true: the model learns that the middle of that
            # message was not searched and can expand it by its seq; ADR 0071)
            hits = [{"seq": h.seq, "role": h.role, "snippet": h.snippet, "compacted": h.compacted,
                     **({"truncated": True} if h.truncated else {})}
                    for h in found.hits]
            shortened = {"query_shortened_to": found.shortened_to} if found.shortened_to else {}
            return json.dumps({"hits": hits, **shortened}, ensure_ascii=False)
        raise ValueError("give query, or from_seq (and to_seq)")
    except (ValueError, InvalidCommand) as exc:  # (a ValidationError is a ValueError)
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        return json.dumps({"error": reason}, ensure_ascii=False)


def _brief(message: HistoryMessage) -> dict[str, Any]:
    """What the model needs of a stored message (no provider-private state)."""
    out: dict[str, Any] = {"seq": message.seq, "role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [call.model_dump() for call in message.tool_calls]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out
