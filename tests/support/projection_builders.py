"""Builders of the projection tests and their storage twins."""

from __future__ import annotations


def rec(seq, role, *, calls=(), call_id=None, content="x", state=None, reasoning=None, steering=False):
    return {
        "seq": seq, "role": role, "content": content, "reasoning": reasoning,
        "tool_calls": [{"id": c, "name": "f", "arguments": "{}"} for c in calls],
        "tool_call_id": call_id, "name": None, "turn_id": None, "steering": steering,
        "provider_state": state, "created_at": "", "visible": True,
    }
