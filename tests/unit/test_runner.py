"""TurnRunner through litellm over real HTTP to the local fake provider (spec §11.2-§11.4, §20.5)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from context_compaction.application.agent.runner import TurnRunner
from context_compaction.domain.errors import OverflowRetryExhausted
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider, Reply
from backends import MakeHarness
from helpers import FAKE_MODEL, Harness, ok
from runner_builders import SID, TOOLS, Tools, harness

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)


def runner(h: Harness, tools: Tools) -> TurnRunner:
    return TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), tools)


def run(r: TurnRunner, text: str = "Please run the tests."):
    return asyncio.run(r.run(SID, text, system_prompt="You are an agent.", tools=TOOLS, turn_id="live"))


def test_a_turn_runs_tools_once_and_ends_with_the_answer(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply.calls(("t1", "run", {"cmd": "pytest"}), ("t2", "run", {"cmd": "ruff"})),
                   Reply(text="All green.", prompt_tokens=4321))
    h = harness(make_harness, provider)
    tools = Tools()
    result = run(runner(h, tools))
    assert result.answer == "All green." and result.stopped == "answered"
    assert [c["id"] for c in tools.calls] == ["t1", "t2"]
    assert provider.calls == 2
    second = provider.requests[1].body
    assert second["tools"][0]["function"]["name"] == "run"
    tail = second["messages"][-3:]
    assert [m["role"] for m in tail] == ["assistant", "tool", "tool"]
    history = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    assert [m["role"] for m in history[-5:]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert all(m["turn_id"] == "live" for m in history[-5:])
    usage = ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": "You are an agent.",
                     "tools": TOOLS}))["usage"]
    assert usage["usage_source"] == "measured+estimated"  # the provider's usage was recorded
    h.close()


def test_an_overflow_before_tools_recovers_once_and_retries(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(context_window=8_000), Reply(text="Done."))
    h = harness(make_harness, provider)
    tools = Tools()
    result = run(runner(h, tools))
    assert result.answer == "Done."
    assert provider.calls == 2 and result.overflow_recoveries == 1
    assert len(result.compactions) == 1 and result.compactions[0].trigger_reason == "overflow"
    first, retry = (req.messages for req in provider.requests)
    assert len(retry) < len(first)
    assert retry[1]["content"].startswith("[Historical conversation summary")
    h.close()


def test_a_second_overflow_fails_the_turn_without_looping(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(context_window=8_000), Reply(context_window=8_000), Reply(text="never"))
    h = harness(make_harness, provider)
    with pytest.raises(OverflowRetryExhausted):
        run(runner(h, Tools()))
    assert provider.calls == 2
    h.close()


def test_an_overflow_after_tools_retries_the_step_locally_and_never_reruns_tools(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply.calls(("t1", "run", {"cmd": "pytest"})), Reply(context_window=6_000), Reply(text="Fixed."))
    h = harness(make_harness, provider)
    checkpoints_before = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    tools = Tools()
    result = run(runner(h, tools))
    assert result.answer == "Fixed."
    assert [c["id"] for c in tools.calls] == ["t1"]  # executed exactly once
    assert provider.calls == 3 and result.in_turn_trims == 1
    overflowed, retried = provider.requests[1].messages, provider.requests[2].messages
    assert len(retried) < len(overflowed)
    assert retried[-3]["content"] == "Please run the tests."  # the current turn is whole
    assert retried[-2]["tool_calls"][0]["id"] == "t1" and retried[-1]["tool_call_id"] == "t1"
    assert retried[0]["role"] == "system"
    after = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert after == checkpoints_before  # no mid-turn checkpoint
    h.close()


def test_a_second_in_turn_overflow_fails_without_a_session_retry(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply.calls(("t1", "run", {"cmd": "pytest"})), Reply(context_window=6_000),
                   Reply(context_window=6_000), Reply(text="never"))
    h = harness(make_harness, provider)
    tools = Tools()
    with pytest.raises(OverflowRetryExhausted):
        run(runner(h, tools))
    assert provider.calls == 3 and len(tools.calls) == 1
    assert ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"] == []
    h.close()


def test_manual_compact_during_a_turn_is_refused_not_cancelling_it(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply.calls(("t1", "run", {"cmd": "pytest"})), Reply(text="Finished."))
    h = harness(make_harness, provider)
    seen: list[dict] = []

    async def compact_now(call: dict) -> None:
        seen.append(await asyncio.to_thread(h.bus.dispatch_json, {"type": "compact", "session_id": SID}))

    result = run(runner(h, Tools(during=compact_now)))
    assert result.answer == "Finished."
    assert seen[0]["ok"] is False and seen[0]["error"]["code"] == "turn_in_progress"
    assert "will not interrupt" in seen[0]["error"]["message"]
    assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"  # fine afterwards
    h.close()
