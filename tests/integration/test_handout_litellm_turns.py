"""A host's turn loop through litellm, editing every request in place before it sends
it, must never change the next request (issue 38, "the hand-out copy stays"; ADR 0058,
ADR 0098): the hand-out copy, on both of its paths, over many turns of real litellm
replies (tool calls, text) from the local fake provider appended back as litellm's own
message objects.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import litellm
import pytest

from fakeprovider import FakeProvider, Reply
from helpers import Harness

from context_compaction.application.contracts.commands import AppendMessages, PrepareTurn, StartSession

BACKENDS = ("memory",)
SID = "litellm-loop"
#: Every test on both of the hand-out copy's paths (``handout_path``, issue 38).
pytestmark = pytest.mark.usefixtures("handout_path")


def _tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {
        "name": "read", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }}]


def _edit_deeply(request: Any) -> None:
    """What a host does before sending: cache breakpoints on every block, an image's
    detail raised, tool-call fields and provider fields added, schemas tightened."""
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str) and content:
            message["content"] = [{"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}]
        elif isinstance(content, list):
            for part in content:
                part["cache_control"] = {"type": "ephemeral"}
                if isinstance(part.get("image_url"), dict):
                    part["image_url"]["detail"] = "high"
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.dumps({"edited": call["function"]["arguments"]})
            call["function"]["name"] += "_edited"
    for tool in request.tools:
        tool["function"]["parameters"]["additionalProperties"] = False
        tool["function"]["parameters"]["required"].append("path_edited")


@pytest.mark.parametrize("session_model", ["gpt-4o", "anthropic/claude-3-5-sonnet-20240620"])
def test_a_litellm_turn_loop_editing_every_request_never_changes_the_next_one(
    harness: Harness, provider: FakeProvider, session_model: str
) -> None:
    bus = harness.bus
    bus.dispatch(StartSession(session_id=SID, model=session_model))
    bus.dispatch(AppendMessages(session_id=SID, messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is in a.py?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]}]))
    TOOLS = _tools()
    sent: list[list[dict[str, Any]]] = []
    for turn in range(8):
        request = bus.dispatch(PrepareTurn(session_id=SID, system_prompt="Be brief.", tools=TOOLS))
        sent.append(copy.deepcopy(request.messages))
        if len(sent) > 1:
            # (the last one may lose its prompt-cache breakpoint to the newer last one)
            kept = len(sent[-2]) - 1
            assert request.messages[:kept] == sent[-2][:kept], f"turn {turn}: an earlier edit reached the cache"
        assert request.tools == _tools()
        _edit_deeply(request)
        provider.queue(Reply.calls((f"call_{turn}", "read", {"path": f"f{turn}.py"})) if turn % 2 == 0
                       else Reply(text=f"answer {turn}"))
        reply = litellm.completion(model="openai/gpt-4o", api_base=provider.base_url, api_key="k",
                                   **{k: v for k, v in request.completion_kwargs().items() if k != "model"})
        message = reply.choices[0].message
        appended: list[Any] = [message]
        if message.tool_calls:
            appended.append({"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": f"text {turn}"})
        appended.append({"role": "user", "content": f"and then {turn}?"})
        bus.dispatch(AppendMessages(session_id=SID, messages=appended, model="gpt-4o"))
    assert TOOLS == _tools(), "editing the request changed the host's tools"
    assert provider.requests[-1].body["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}
