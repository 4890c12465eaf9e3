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
from provider_messages_builders import ANTHROPIC_REPLY, CLAUDE, GPT, schema_accepts, server_accepts, claude_message, gpt_message, projection, start

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)


# ---------------------------------------------------------- litellm objects
@pytest.mark.parametrize("form", ["object", "model_dump", "dict"])
@pytest.mark.parametrize("api", ["typed", "json"])
def test_a_litellm_message_is_stored_as_it_comes_in_every_form(tmp_path, provider, form: str, api: str) -> None:
    h = Harness(tmp_path / "m.db", summarizer="extractive")  # parsing, not storage: SQLite suffices
    message = claude_message(provider)
    given = {"object": message, "model_dump": message.model_dump(), "dict": dict(message)}[form]
    start(h, "s", CLAUDE)
    messages = [user("Fix a.py"), given, tool("toolu_01A09q90qw90lq917835lq9", "import os\nimport sys")]
    if api == "typed":
        seqs = h.bus.dispatch(c.AppendMessages(session_id="s", messages=messages)).seqs
    else:
        seqs = ok(h.do({"type": "append_messages", "session_id": "s", "messages": messages}))["seqs"]
    assert seqs == [1, 2, 3]
    stored = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"][1]
    assert stored["content"] == "Let me read a.py first." and stored["reasoning"] == "The import of sys looks unused."
    assert stored["tool_calls"] == [{"id": "toolu_01A09q90qw90lq917835lq9", "type": "function",
                                     "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]
    state = stored["provider_state"]
    assert (state["provider"], state["model"]) == ("anthropic", CLAUDE)
    assert state["data"]["thinking_blocks"] == ANTHROPIC_REPLY["content"][:2]


def test_signed_thinking_replays_to_its_own_model_only_and_litellm_sends_it_back(harness: Harness, provider) -> None:
    h = harness
    start(h, "s", CLAUDE)
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("Fix a.py")]}))
    h.bus.dispatch(c.AppendMessages(session_id="s", messages=[claude_message(provider)]))
    ok(h.do({"type": "append_messages", "session_id": "s",
             "messages": [tool("toolu_01A09q90qw90lq917835lq9", "import os\nimport sys")]}))
    own = projection(h, "s", CLAUDE)[1]
    assert own["thinking_blocks"] == ANTHROPIC_REPLY["content"][:2]
    assert own["reasoning_content"] == "The import of sys looks unused."
    other = projection(h, "s", GPT)[1]
    assert set(other) == {"role", "content", "tool_calls"}  # no thinking, no signature, no provider fields
    assert other["tool_calls"][0]["function"]["name"] == "read_file"
    # Through litellm's own Anthropic transformation the signed blocks go back intact.
    provider.queue(Reply(raw=json.dumps({**ANTHROPIC_REPLY, "content": [{"type": "text", "text": "Done."}],
                                         "stop_reason": "end_turn"})))
    litellm.completion(model=CLAUDE, api_base=provider.base_url.removesuffix("/v1"), api_key="k",
                       messages=projection(h, "s", CLAUDE), max_tokens=1024)
    sent = provider.requests[-1].body["messages"][1]["content"]
    assert sent[:2] == ANTHROPIC_REPLY["content"][:2]
    assert sent[3]["type"] == "tool_use" and sent[3]["input"] == {"path": "a.py"}


def test_provider_output_is_bound_to_the_model_the_host_names(harness: Harness, provider) -> None:
    h = harness
    start(h, "s", GPT)  # the session's model is GPT, this reply came from Claude
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("Fix a.py")]}))
    h.bus.dispatch(c.AppendMessages(session_id="s", messages=[claude_message(provider)], model=CLAUDE))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [tool("toolu_01A09q90qw90lq917835lq9", "x")]}))
    assert "thinking_blocks" in projection(h, "s", CLAUDE)[1]
    assert "thinking_blocks" not in projection(h, "s", GPT)[1]


def test_openai_refusal_annotations_and_audio_are_kept_and_only_input_fields_go_back(harness: Harness, provider) -> None:
    h = harness
    refusal = gpt_message(provider, content=None, refusal="I'm sorry, I can't help with that.")
    cited = gpt_message(provider, content="See the docs.", refusal=None, annotations=[
        {"type": "url_citation", "url_citation": {"end_index": 12, "start_index": 4, "title": "Docs",
                                                  "url": "https://example.com/docs"}}])
    spoken = gpt_message(provider, content=None, audio={
        "id": "audio_abc123", "expires_at": 1729018505, "data": "UklGRiQAAABXQVZF", "transcript": "Yes, it is."})
    start(h, "s", GPT)
    ok(h.do({"type": "append_messages", "session_id": "s",
             "messages": [user("q1"), refusal, user("q2"), cited, user("q3"), spoken, user("q4")]}))
    history = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"]
    assert history[1]["provider_state"]["data"]["refusal"] == "I'm sorry, I can't help with that."
    assert history[3]["provider_state"]["data"]["annotations"][0]["url_citation"]["title"] == "Docs"
    assert history[5]["provider_state"]["data"]["audio"]["id"] == "audio_abc123"
    own = projection(h, "s", GPT)
    assert own[1] == {"role": "assistant", "content": "", "refusal": "I'm sorry, I can't help with that."}
    assert own[3] == {"role": "assistant", "content": "See the docs."}  # annotations are output only
    assert own[5] == {"role": "assistant", "content": "Yes, it is."}  # an audio id expires: the transcript
    other = projection(h, "s", CLAUDE)
    assert other[1] == {"role": "assistant", "content": "I'm sorry, I can't help with that."}
    provider.queue(Reply(text="ok"))
    litellm.completion(model=f"openai/{GPT}", api_base=provider.base_url, api_key="k", messages=own)
    assert provider.requests[-1].body["messages"] == own


def test_a_gemini_thought_signature_on_a_tool_call_goes_back_to_gemini_only(harness: Harness) -> None:
    h = harness
    start(h, "s", "gemini/gemini-2.5-pro")
    call = {"id": "call_9", "type": "function", "index": 0,
            "function": {"name": "grep", "arguments": '{"q": "port"}'},
            "provider_specific_fields": {"thought_signature": "CiQB0e2Kb3dRh"}}
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        user("find the port"), {"role": "assistant", "content": None, "tool_calls": [call]},
        tool("call_9", "8443")]}))
    gemini = projection(h, "s", "gemini/gemini-2.5-pro")[1]["tool_calls"][0]
    assert gemini == {"id": "call_9", "type": "function", "function": {"name": "grep", "arguments": '{"q": "port"}'},
                      "provider_specific_fields": {"thought_signature": "CiQB0e2Kb3dRh"}}
    assert projection(h, "s", GPT)[1]["tool_calls"][0] == {
        "id": "call_9", "type": "function", "function": {"name": "grep", "arguments": '{"q": "port"}'}}


def test_the_developer_role_is_kept_and_projected(harness: Harness) -> None:
    h = harness
    start(h, "s", "o3")
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        {"role": "developer", "content": "Answer in French."}, user("hello")]}))
    assert projection(h, "s", "o3")[0] == {"role": "developer", "content": "Answer in French."}
    err(h.do({"type": "append_messages", "session_id": "s", "messages": [{"role": "developer", "content": ""}]}),
        "invalid_message")


# ------------------------------------------------------------ field policy
def test_unknown_fields_of_an_assistant_message_are_dropped_other_roles_refuse_them(harness: Harness) -> None:
    h = harness
    start(h, "s", GPT)
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        user("q"), {"role": "assistant", "content": "a", "service_tier_hint": "x", "logprobs": None}]}))
    stored = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"][1]
    assert "service_tier_hint" not in json.dumps(stored) and stored["provider_state"] is None
    e = err(h.do({"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "x", "contnet": 1}]}),
            "invalid_message")
    assert "contnet" in e["message"]
    err(h.do({"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "x", "refusal": "no"}]}),
        "invalid_message")


def test_an_empty_assistant_reply_is_accepted() -> None:
    # e.g. a reasoning model that spent max_tokens thinking: content "" and nothing else
    assert parse_message({"role": "assistant", "content": ""}).to_record()["content"] == ""
    assert parse_message({"role": "assistant", "content": None, "function_call": None, "tool_calls": None,
                          "provider_specific_fields": None}).to_record()["provider_state"] is None


# ------------------------------------------------------- one tool-call shape
FLAT = {"id": "c1", "name": "read_file", "arguments": '{"path": "a.py"}'}
NESTED = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}


@pytest.mark.parametrize("shape", [FLAT, NESTED], ids=["flat", "nested"])
def test_tool_calls_come_out_nested_from_history_projection_and_prepare_turn(harness: Harness, shape) -> None:
    h = harness
    start(h, "s", GPT)
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        user("read a.py"), {"role": "assistant", "content": None, "tool_calls": [shape]}, tool("c1", "x = 1")]}))
    history = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"]
    request = ok(h.do({"type": "prepare_turn", "session_id": "s"}))
    replay = ok(h.do({"type": "replay_session", "session_id": "s"}))["projection"]["messages"]
    for calls in (history[1]["tool_calls"], projection(h, "s", GPT)[1]["tool_calls"],
                  request["messages"][1]["tool_calls"], replay[1]["tool_calls"]):
        assert calls == [NESTED]


@functools.cache
def _command_schema() -> dict[str, Any]:
    return COMMAND_ADAPTER.json_schema()  # what the HTTP server's OpenAPI document is made of


@pytest.mark.parametrize("call", [
    NESTED, FLAT, {**FLAT, "type": "function"}, {**NESTED, "index": 3},
    {**NESTED, "provider_specific_fields": {"thought_signature": "x"}},
    {**NESTED, "function": {"name": "f", "arguments": None}},
    {"id": "c1", "function": {"name": "f"}},
    {"id": "c1"}, {"id": "", "name": "f"}, {"id": "c1", "type": "custom", "custom": {"name": "f"}},
    {"name": "f", "arguments": "{}"}, {"id": "c1", "function": "read_file"},
])
def test_the_openapi_tool_call_schema_accepts_what_the_server_accepts(call) -> None:
    document = _command_schema()
    schema = {**document["$defs"]["ToolCall"], "$defs": document["$defs"]}
    assert schema_accepts(schema, call) == server_accepts(call)
    assert document["$defs"]["ToolCall"]["anyOf"][0]["required"] == ["id", "function"]  # nested first
