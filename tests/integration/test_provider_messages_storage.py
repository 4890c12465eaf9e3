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

from context_compaction.application import commands as c
from context_compaction.application.commands import COMMAND_ADAPTER
from context_compaction.domain.errors import InvalidMessage
from context_compaction.domain.messages import parse_message
from fakeprovider import FakeProvider, Reply
from helpers import Harness, err, ok, tool, user


CLAUDE = "anthropic/claude-sonnet-4-5"
GPT = "gpt-4o"

ANTHROPIC_REPLY = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "The import of sys looks unused.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
        {"type": "text", "text": "Let me read a.py first."},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "read_file", "input": {"path": "a.py"}},
    ],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 412, "output_tokens": 96},
}


def openai_reply(message: dict[str, Any]) -> str:
    return json.dumps({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion", "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "logprobs": None,
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163},
    })


def claude_message(provider: FakeProvider) -> Any:
    """A real litellm Message from litellm's Anthropic path (signed thinking, tool use)."""
    provider.queue(Reply(raw=json.dumps(ANTHROPIC_REPLY)))
    response = litellm.completion(model=CLAUDE, api_base=provider.base_url.removesuffix("/v1"), api_key="k",
                                  messages=[{"role": "user", "content": "Fix a.py"}], max_tokens=1024)
    return response.choices[0].message


def gpt_message(provider: FakeProvider, **fields: Any) -> Any:
    provider.queue(Reply(raw=openai_reply(fields)))
    response = litellm.completion(model=f"openai/{GPT}", api_base=provider.base_url, api_key="k",
                                  messages=[{"role": "user", "content": "hi"}])
    return response.choices[0].message


def start(h: Harness, sid: str, model: str) -> None:
    ok(h.do({"type": "start_session", "session_id": sid, "model": model}))


def projection(h: Harness, sid: str, model: str) -> list[dict[str, Any]]:
    return ok(h.do({"type": "get_projection", "session_id": sid, "model": model}))["messages"]


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


def _schema_accepts(schema: dict[str, Any], instance: Any) -> bool:
    try:
        jsonschema.validate(instance, schema)
        return True
    except jsonschema.ValidationError:
        return False


def _server_accepts(call: Any) -> bool:
    try:
        parse_message({"role": "assistant", "content": None, "tool_calls": [call]})
        return True
    except InvalidMessage:
        return False


