"""Tool calls in OpenAI's nested form: the schema a host sees and the form given out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_NAME = {"type": "string", "minLength": 1, "maxLength": 512}
_ARGUMENTS = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": ""}
_PRIVATE = {"anyOf": [{"type": "object"}, {"type": "null"}]}
TOOL_CALL_JSON_SCHEMA: dict[str, Any] = {
    "title": "ToolCall",
    "description": "A tool call: OpenAI's nested form (returned everywhere) or the flat form.",
    "anyOf": [
        {
            "type": "object",
            "title": "ToolCallNested",
            "properties": {
                "id": _NAME,
                "type": {"type": "string", "const": "function"},
                "function": {
                    "type": "object",
                    "properties": {"name": _NAME, "arguments": _ARGUMENTS, "provider_specific_fields": _PRIVATE},
                    "required": ["name"],
                },
                "index": {"type": "integer"},
                "provider_specific_fields": _PRIVATE,
            },
            "required": ["id", "function"],
        },
        {
            "type": "object",
            "title": "ToolCallFlat",
            "properties": {
                "id": _NAME,
                "type": {"type": "string", "const": "function"},
                "name": _NAME,
                "arguments": _ARGUMENTS,
                "index": {"type": "integer"},
                "provider_specific_fields": _PRIVATE,
            },
            "required": ["id", "name"],
        },
    ],
}


def nested_tool_calls(
    calls: Sequence[dict[str, Any]], private: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Stored (flat) tool calls in OpenAI's nested form; ``private`` (call id → fields)
    adds a call's provider-private fields (only for its producer)."""
    out = []
    for c in calls:
        call = {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c.get("arguments") or ""},
        }
        extra = private.get(c["id"]) if private else None
        if extra:
            for key, value in extra.items():
                if key == "function" and isinstance(value, dict):
                    call["function"].update(value)
                else:
                    call[key] = value
        out.append(call)
    return out
