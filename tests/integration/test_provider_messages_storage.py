"""What a provider returns is stored as it comes and replayed only where it belongs (issue 12).

Real litellm objects: each reply is produced by ``litellm.completion`` against the local
fake server (OpenAI's chat format, Anthropic's messages format), never built by hand.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import litellm
import pytest

from context_compaction.application.contracts import commands as c
from context_compaction.application.contracts.commands import COMMAND_ADAPTER
from context_compaction.domain.errors import InvalidMessage
from context_compaction.domain.messages import parse_message
from fakeprovider import FakeProvider, Reply
from helpers import Harness, err, ok, tool, user
from provider_messages_builders import ANTHROPIC_REPLY, CLAUDE, GPT, openai_reply, claude_message, gpt_message, start, projection, schema_accepts, server_accepts


# ---------------------------------------------------------- litellm objects


# ------------------------------------------------------------ field policy


# ------------------------------------------------------- one tool-call shape
FLAT = {"id": "c1", "name": "read_file", "arguments": '{"path": "a.py"}'}
NESTED = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}


def test_stored_events_keep_the_flat_shape_they_were_written_with(harness: Harness) -> None:
    """Nothing rewrites an event: the nested form is a rendering of the stored flat one."""
    h = harness
    start(h, "s", GPT)
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        user("read a.py"), {"role": "assistant", "content": None, "tool_calls": [NESTED]}]}))
    _, app = h._db()
    table = app.projector.events_table.qualified
    states = [bytes(r[0]) for r in h.query(f"SELECT state FROM {table} WHERE topic = ? ORDER BY originator_version",
                                           ("context_compaction:Session.MessageAppended",))]
    assert json.loads(states[1])["tool_calls"] == [FLAT]
    h.reopen()
    assert ok(h.do({"type": "get_history", "session_id": "s"}))["messages"][1]["tool_calls"] == [NESTED]


@functools.cache
def _command_schema() -> dict[str, Any]:
    return COMMAND_ADAPTER.json_schema()  # what the HTTP server's OpenAPI document is made of

