"""A host's litellm replies: real litellm objects from the local fake provider over HTTP, the texts providers send.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import litellm
import pytest

from context_compaction.application.contracts.commands import COMMAND_ADAPTER
from context_compaction.application.agent.runner import TurnRunner
from context_compaction.domain.overflow import is_overflow
from context_compaction.infrastructure.legacy import import_legacy
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import Reply
from helpers import FAKE_MODEL, Harness, ok, user
from legacy_fixture import BASE_MS, build_legacy_db
from overflow_texts import REAL_TEXTS, wrapped

DEEPSEEK = "deepseek/deepseek-reasoner"


def chat_completion(model: str, message: dict[str, Any]) -> str:
    """An OpenAI-format chat completion body, as OpenAI-compatible providers send it."""
    return json.dumps({
        "id": "chatcmpl-7a1", "object": "chat.completion", "created": 1741570283, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 41, "completion_tokens": 12, "total_tokens": 53},
    })


def overflow_body(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": "input",
                                 "code": "context_length_exceeded"}})


# ----------------------------------------------------------------- overflow
def test_the_turn_runner_recovers_from_an_overflow_whose_text_gives_no_window(tmp_path: Path, provider) -> None:
    """OpenAI's "Your input exceeds the context window of this model" reaches the host as
    litellm's ``BadRequestError`` (not ``ContextWindowExceededError``): still an overflow,
    recovered once with the configured window (spec §11.3)."""
    text = "Your input exceeds the context window of this model. Please adjust your input and try again."
    provider.queue(Reply(raw=overflow_body(text), status=400), Reply(text="Done."))
    h = Harness(tmp_path / "r.db", summarizer="extractive", context_compaction={"keep_recent_tokens": 3_000},
                models={FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k", "token_limit": 100_000}})
    ok(h.do({"type": "start_session", "session_id": "s", "model": FAKE_MODEL}))
    for t in coding_session(6, big_output_chars=3_000):
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": t.messages()}))

    async def no_tools(call: dict) -> str:
        return ""

    runner = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), no_tools)
    result = asyncio.run(runner.run("s", "Please run the tests.", system_prompt="You are an agent.", turn_id="live"))
    assert result.answer == "Done." and result.overflow_recoveries == 1
    first, retry = (r.messages for r in provider.requests)
    assert len(retry) < len(first)
    h.close()


NOT_OVERFLOWS = [
    "Rate limit reached for gpt-4o in organization org-2bX on tokens per min (TPM): Limit 30000, Used 29410, "
    "Requested 1200. Please try again in 1.22s.",
    "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got a "
    "string with length 10485761 instead.",
    "max_tokens is too large: 50000. This model supports at most 16384 completion tokens, whereas you provided 50000.",
    "Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.",
]


@pytest.mark.parametrize("text", [t[1] for t in REAL_TEXTS] + ["Input is too long for requested model."])
def test_every_providers_overflow_text_is_an_overflow_also_wrapped_by_litellm(text: str) -> None:
    assert is_overflow(text) and is_overflow(wrapped(text))
    assert is_overflow(str(litellm.BadRequestError(message=text, model="gpt-4o", llm_provider="openai")))


@pytest.mark.parametrize("text", NOT_OVERFLOWS)
def test_other_bad_requests_are_not_taken_for_an_overflow(text: str) -> None:
    assert not is_overflow(str(litellm.BadRequestError(message=text, model="gpt-4o", llm_provider="openai")))


# ---------------------------------------------------------- provider output
def test_reasoning_content_goes_back_to_the_model_that_produced_it_only(tmp_path: Path, provider) -> None:
    """ADR 0017: litellm's ``reasoning_content`` is replayed to its producer (DeepSeek's
    thinking mode needs it back; litellm otherwise sends a blank placeholder)."""
    provider.queue(Reply(raw=chat_completion("deepseek-reasoner", {
        "content": "Use a lock around the ledger update.", "reasoning_content": "The test races on the ledger."})))
    reply = litellm.completion(model=DEEPSEEK, api_base=provider.base_url, api_key="k",
                               messages=[{"role": "user", "content": "Why is the refund test flaky?"}])
    h = Harness(tmp_path / "d.db", summarizer="extractive")
    ok(h.do({"type": "start_session", "session_id": "s", "model": DEEPSEEK}))
    ok(h.do({"type": "append_messages", "session_id": "s",
             "messages": [user("Why is the refund test flaky?"), reply.choices[0].message, user("Fix it.")]}))
    own = ok(h.do({"type": "get_projection", "session_id": "s"}))["messages"]
    assert own[1]["reasoning_content"] == "The test races on the ledger."
    other = ok(h.do({"type": "get_projection", "session_id": "s", "model": "gpt-4o"}))["messages"]
    assert other[1] == {"role": "assistant", "content": "Use a lock around the ledger update."}
    provider.queue(Reply(text="ok"))
    litellm.completion(model=DEEPSEEK, api_base=provider.base_url, api_key="k", messages=own)
    assert provider.requests[-1].body["messages"][1]["reasoning_content"] == "The test races on the ledger."
    # Either spelling of the same reasoning is the same payload for a command id.
    message = reply.choices[0].message
    ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "k1", "messages": [message]}))
    spelled = {"role": "assistant", "content": message.content, "reasoning": message.reasoning_content}
    assert ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "k1",
                    "messages": [spelled]}))["duplicate"] is True
    h.close()


def test_an_audio_reply_is_budgeted_as_what_is_sent_back_not_as_its_audio_data(tmp_path: Path, provider) -> None:
    """A three-second spoken reply (gpt-4o-audio-preview) carries ~190,000 characters of
    base64 audio that no request ever sends again: counting them broke the session."""
    wav = b"RIFF" + bytes((i * 7919) % 251 for i in range(3 * 24_000 * 2))
    audio = {"id": "audio_67c1", "expires_at": 1729018505, "data": base64.b64encode(wav).decode(),
             "transcript": "Yes, the build is green."}
    provider.queue(Reply(raw=chat_completion("gpt-4o-audio-preview", {"content": None, "refusal": None,
                                                                      "audio": audio})))
    reply = litellm.completion(model="openai/gpt-4o-audio-preview", api_base=provider.base_url, api_key="k",
                               messages=[{"role": "user", "content": "Is the build green?"}])
    h = Harness(tmp_path / "a.db", summarizer="extractive")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o-audio-preview"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        user("Is the build green?"), reply.choices[0].message, user("Thanks. And the docs?")]}))
    request = ok(h.do({"type": "prepare_turn", "session_id": "s"}))
    assert request["messages"][1] == {"role": "assistant", "content": "Yes, the build is green."}
    assert request["compaction"] is None and request["usage"]["used_tokens"] < 100
    stored = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"][1]
    assert stored["provider_state"]["data"]["audio"] == audio  # kept as it came
    h.close()


def _append_schema() -> dict[str, Any]:
    document = COMMAND_ADAPTER.json_schema()  # what the HTTP server's OpenAPI document is made of
    return {**document["$defs"]["AppendMessages"], "$defs": document["$defs"]}


def test_the_openapi_message_schema_accepts_the_json_of_a_litellm_message(tmp_path: Path, provider) -> None:
    """What the server stores as it comes, its schema must not refuse: a litellm message's
    JSON has ``tool_calls: null`` and litellm's ``reasoning_content``."""
    provider.queue(Reply(raw=chat_completion("gpt-4o", {"content": "Hello."})),
                   Reply(raw=chat_completion("deepseek-reasoner", {"content": "Hi.", "reasoning_content": "Greet."})))
    plain = litellm.completion(model="openai/gpt-4o", api_base=provider.base_url, api_key="k",
                               messages=[{"role": "user", "content": "hi"}]).choices[0].message
    thought = litellm.completion(model=DEEPSEEK, api_base=provider.base_url, api_key="k",
                                 messages=[{"role": "user", "content": "hi"}]).choices[0].message
    schema = _append_schema()
    for message in (plain, thought):
        command = {"type": "append_messages", "session_id": "s",
                   "messages": [user("hi"), json.loads(message.model_dump_json())]}
        jsonschema.validate(command, schema)
    h = Harness(tmp_path / "o.db", summarizer="extractive")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do(command))
    # still as strict as the server where the server is strict: a host's typo
    refused = {"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "x", "contnet": 1}]}
    assert not h.do(refused)["ok"]
    try:
        jsonschema.validate(refused, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("the schema accepts a user message the server refuses")
    h.close()


# ------------------------------------------------------------------- legacy
def test_a_legacy_session_id_near_the_length_limit_imports_and_never_stops_the_others(
    tmp_path: Path, harness: Harness
) -> None:
    legacy = tmp_path / "picobot.db"
    build_legacy_db(legacy)
    conn = sqlite3.connect(legacy)
    near, over = "a" * 250, "b" * 300  # both sort before the fixture's sessions
    for sid in (near, over):
        conn.execute("INSERT INTO sessions VALUES (?, 'gpt-4o', ?, ?, NULL)", (sid, BASE_MS, BASE_MS))
        conn.execute("INSERT INTO messages (session_id, seq, role, content, created_at) VALUES (?, 1, 'user', 'hi', ?)",
                     (sid, BASE_MS))
    conn.commit()
    conn.close()
    report = import_legacy(harness.bus, legacy)
    per = {s["session_id"]: s for s in report.to_dict()["per_session"]}
    assert per[near]["status"] == "imported" and per[near]["imported"] == 1
    assert per[over]["status"] == "refused" and "session_id" in per[over]["refused"]
    assert per["feishu:oc:dialog-1"]["imported"] == 6 and per["cli:local"]["imported"] == 2
    again = import_legacy(harness.bus, legacy)  # a second run finds the long one's import
    assert {s["session_id"]: s["already_present"] for s in again.to_dict()["per_session"]}[near] == 1
