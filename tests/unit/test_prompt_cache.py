"""Prompt-cache awareness (issue 17, ADR 0035).

Between compactions the request is append-only (request N+1 starts with request N's
messages), so a provider's prompt cache stays warm; ``record_usage`` takes the cached
figures providers report and ``get_context_usage`` shows the cached share; for
Anthropic, ``prepare_turn`` marks the cache breakpoints.
"""

from __future__ import annotations

import json
from typing import Any

from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import FAKE_MODEL, Harness, assistant, ok, tool, user

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

SID = "s"
SYSTEM = "You are a careful coding agent."


def prepare(h: Harness, **extra: Any) -> dict[str, Any]:
    return ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM, **extra}))


def append(h: Harness, *messages: dict[str, Any]) -> None:
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": list(messages)}))


def test_between_compactions_each_request_starts_with_the_previous_one(make_harness) -> None:
    h = make_harness("a")
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    previous: list[dict[str, Any]] | None = None
    sent = 0
    for t in coding_session(5, big_output_chars=3_000):
        messages = t.messages()
        for index, message in enumerate(messages):
            append(h, message)
            following = messages[index + 1]["role"] if index + 1 < len(messages) else None
            if message["role"] == "assistant" or following == "tool":
                continue  # a request follows the user's message, or all results of a tool group
            request = prepare(h)
            assert request["compaction"] is None
            if previous is not None:
                assert request["messages"][: len(previous)] == previous
                assert len(request["messages"]) > len(previous)
            previous = request["messages"]
            sent += 1
    assert sent > 10


def test_record_usage_takes_the_cached_figures_and_info_shows_the_cached_share(make_harness) -> None:
    h = make_harness("u")
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    append(h, user("Fix the flaky test.", turn_id="t1"))
    assert prepare(h)["usage"]["prompt_cache"] is None
    shares = [(1_000, 0, 900), (1_200, 900, 100), (1_400, 1_100, 200)]
    for prompt, cached, created in shares:
        request = prepare(h)
        result = ok(h.do({"type": "record_usage", "session_id": SID, "request_id": request["request_id"],
                          "prompt_tokens": prompt, "cached_tokens": cached,
                          "cache_creation_tokens": created, "completion_tokens": 50}))
        assert (result["cached_tokens"], result["cache_creation_tokens"], result["completion_tokens"]) == (cached, created, 50)
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    cache = info["prompt_cache"]
    assert cache["requests"] == 3 and cache["prompt_tokens"] == 3_600
    assert (cache["cached_tokens"], cache["cache_creation_tokens"]) == (2_000, 1_200)
    assert cache["cached_share"] == round(2_000 / 3_600, 4)
    assert "Prompt cache" in info["text"] and "56% cached over the last 3 requests" in info["text"]
    for wrong in ({"cached_tokens": -1}, {"cached_tokens": 8, "cache_creation_tokens": 3}):
        bad = h.do({"type": "record_usage", "session_id": SID, "request_id": request["request_id"],
                    "prompt_tokens": 10, **wrong})
        assert not bad["ok"] and bad["error"]["code"] == "invalid_command", bad
    assert ok(h.do({"type": "get_context_usage", "session_id": SID}))["prompt_cache"]["requests"] == 3


def _marks(messages: list[dict[str, Any]]) -> list[int]:
    found = []
    for index, m in enumerate(messages):
        blocks = m["content"] if isinstance(m.get("content"), list) else []
        if m.get("cache_control") or any(isinstance(b, dict) and b.get("cache_control") for b in blocks):
            found.append(index)
    return found


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else "".join(b["text"] for b in content or [])


def test_anthropic_requests_carry_breakpoints_on_system_summary_and_last_message(make_harness) -> None:
    model = "anthropic/claude-3-5-sonnet-20241022"
    h = make_harness("b", context_compaction={"keep_recent_tokens": 200})
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    for t in coding_session(3, big_output_chars=2_000):
        append(h, *t.messages())
    ok(h.do({"type": "compact", "session_id": SID}))
    append(h, user("Next step.", turn_id="n"))
    request = prepare(h)
    messages = request["messages"]
    assert _marks(messages) == [0, 1, len(messages) - 1]
    assert messages[0]["content"][0] == {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    assert _text(messages[1]).startswith("[Historical conversation summary")
    assert _text(messages[-1]) == "Next step."
    # the marks are the only difference from the same request without them
    plain = ok(h.new_bus(context_compaction={"keep_recent_tokens": 200, "prompt_cache": "off"}).dispatch_json(
        {"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM}))["messages"]
    assert _marks(plain) == [] and [_text(m) for m in plain] == [_text(m) for m in messages]
    # the stored history is untouched, and the next request re-marks only its own last message
    append(h, assistant(None, calls=[("c1", "grep", "{}")], turn_id="n"), tool("c1", "no match"))
    after = prepare(h)["messages"]
    assert after[-1]["role"] == "tool" and after[-1]["cache_control"] == {"type": "ephemeral"}
    assert len(_marks(after)) == 3
    history = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    assert "cache_control" not in json.dumps(history)


def test_openai_requests_carry_no_breakpoints(make_harness) -> None:
    h = make_harness("o")
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    append(h, user("Hello.", turn_id="t"))
    assert _marks(prepare(h)["messages"]) == []


def test_the_turn_runner_records_the_cached_tokens_the_provider_reports(make_harness, provider) -> None:
    """Over real HTTP through litellm: ``usage.prompt_tokens_details.cached_tokens``."""
    import asyncio

    from context_compaction.application.agent.runner import TurnRunner
    from context_compaction.infrastructure.providers import LiteLLMChatProvider
    from fakeprovider import Reply

    model = FAKE_MODEL
    h = make_harness("r", models={model: {"api_base": provider.base_url, "api_key": "k", "token_limit": 100_000}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    provider.queue(Reply(text="Done.", prompt_tokens=4_000, cached_tokens=3_000))
    runner = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), lambda call: "")
    result = asyncio.run(runner.run(SID, "Hello.", system_prompt=SYSTEM, turn_id="t1"))
    assert result.answer == "Done."
    cache = ok(h.do({"type": "get_context_usage", "session_id": SID}))["prompt_cache"]
    assert (cache["requests"], cache["prompt_tokens"], cache["cached_tokens"]) == (1, 4_000, 3_000)
    assert cache["cached_share"] == 0.75
