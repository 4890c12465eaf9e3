"""The TurnRunner's budget tools (issue 43): ``context_remaining`` and ``compact_now``,
off by default, over real HTTP to the fake provider."""

from __future__ import annotations

import asyncio
import json

from backends import MakeHarness
from context_compaction.application.agent.runner import TurnRunner
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from fakeprovider import Reply
from helpers import ok
from runner_builders import SID, TOOLS, Tools, harness

BACKENDS = ("memory",)


def _run(h, **options):
    r = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), Tools())
    return asyncio.run(r.run(SID, "go on", tools=TOOLS, turn_id="t", **options))


def _names(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools") or []]


def test_the_tools_are_off_by_default(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text="done"))
    h = harness(make_harness, provider)
    _run(h)
    assert _names(provider.requests[0]) == ["run"]
    h.close()


def test_context_remaining_answers_with_the_budget_and_forecast(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply.calls(("b1", "context_remaining", {})), Reply(text="plenty left"))
    h = harness(make_harness, provider)
    result = _run(h, budget_tools=True)
    assert _names(provider.requests[0]) == ["run", "context_remaining"]
    answer = json.loads(provider.requests[1].messages[-1]["content"])
    assert answer["tokens_until_window_full"] > 0 and answer["used_tokens"] > 0
    assert answer["tokens_until_compaction"] > 0
    # Asked mid-turn: six complete turns of history (the current one is not complete yet).
    assert answer["forecast_method"] == "median tokens added per turn over the last 6 of up to 8 complete turns"
    assert answer["turns_until_compaction"] >= 1
    assert answer["last_compaction"] is None and result.compactions == []
    h.close()


def test_compact_now_compacts_when_the_turn_ends(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply.calls(("b1", "compact_now", {})), Reply(text="ok, compacting"))
    h = harness(make_harness, provider)
    assert ok(h.do({"type": "get_projection", "session_id": SID}))["checkpoint_id"] is None
    result = _run(h, compact_tool=True)
    assert _names(provider.requests[0]) == ["run", "compact_now"]
    assert json.loads(provider.requests[1].messages[-1]["content"])["scheduled"] is True
    (outcome,) = result.compactions
    assert ok(h.do({"type": "get_projection", "session_id": SID}))["checkpoint_id"] == outcome.checkpoint_id
    # The turn itself is whole in the raw log: the compaction came after its answer.
    assert ok(h.do({"type": "get_history", "session_id": SID}))["messages"][-1]["content"] == "ok, compacting"
    h.close()


def test_a_failed_compact_now_is_a_warning_not_a_lost_turn(make_harness: MakeHarness, provider) -> None:
    from helpers import RecordingSummarizer

    provider.queue(Reply.calls(("b1", "compact_now", {})), Reply(text="fine"))
    h = harness(make_harness, provider)
    h.bus.services.summarizer = RecordingSummarizer(fail=True)
    result = _run(h, compact_tool=True)
    assert result.answer == "fine" and result.compactions == []
    assert result.warnings == ["compact_now: the compaction failed (summary_failed)"]
    h.close()


def test_a_compact_now_of_a_failed_turn_is_not_carried_into_the_next(make_harness: MakeHarness, provider) -> None:
    """The turn that asked for it failed before it ended: no compaction then, and none
    in a later turn that did not ask."""
    import pytest

    provider.queue(Reply.calls(("b1", "compact_now", {})), Reply(status=400, text="bad request"))
    h = harness(make_harness, provider)
    r = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), Tools())
    with pytest.raises(Exception):
        asyncio.run(r.run(SID, "go on", tools=TOOLS, turn_id="t", compact_tool=True))
    provider.queue(Reply(text="fine"))
    result = asyncio.run(r.run(SID, "and now", tools=TOOLS, turn_id="t2"))
    assert result.answer == "fine" and result.compactions == []
    assert ok(h.do({"type": "get_projection", "session_id": SID}))["checkpoint_id"] is None
    h.close()


def test_context_remaining_counts_the_turns_own_system_prompt_and_tools(make_harness: MakeHarness, provider) -> None:
    """The tokens left are those of the request the agent is in: its system prompt and
    tools take room too."""
    h = harness(make_harness, provider)
    bare = ok(h.do({"type": "get_context_usage", "session_id": SID}))["used_tokens"]
    prompt = "Follow the house rules carefully. " * 300
    with_prompt = ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": prompt,
                           "tools": TOOLS}))["used_tokens"]
    assert with_prompt - bare > 1_000
    # The provider measures the request (the turn's input on top of what /info counted).
    ask = Reply.calls(("b1", "context_remaining", {}))
    ask.prompt_tokens = with_prompt + 200
    provider.queue(ask, Reply(text="ok"))
    r = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), Tools())
    asyncio.run(r.run(SID, "go on", tools=TOOLS, turn_id="t", system_prompt=prompt, budget_tools=True))
    answer = json.loads(provider.requests[1].messages[-1]["content"])
    assert answer["used_tokens"] >= with_prompt  # (the turn's own messages on top)
    h.close()
