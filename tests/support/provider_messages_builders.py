"""Provider messages and replies (OpenAI, Anthropic) of the provider-message tests and their storage twins."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import litellm
from context_compaction.domain.errors import InvalidMessage
from context_compaction.domain.messages import parse_message
from fakeprovider import FakeProvider, Reply
from helpers import Harness, ok

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


def schema_accepts(schema: dict[str, Any], instance: Any) -> bool:
    try:
        jsonschema.validate(instance, schema)
        return True
    except jsonschema.ValidationError:
        return False


def server_accepts(call: Any) -> bool:
    try:
        parse_message({"role": "assistant", "content": None, "tool_calls": [call]})
        return True
    except InvalidMessage:
        return False
