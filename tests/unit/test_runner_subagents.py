"""TurnRunner runs a tool as a sub-agent session (issue 42): the child's turn, then its
answer as the parent's tool result, the parent's lease held throughout."""

from __future__ import annotations

import asyncio

from context_compaction.application.agent.runner import TurnRunner
from context_compaction.application.agent.subagents import SubagentSpec
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from fakeprovider import FakeProvider, Reply
from backends import MakeHarness
from helpers import FAKE_MODEL, ok

BACKENDS = ("memory",)
SID = "boss"
TOOLS = [{"type": "function", "function": {"name": "research", "description": "Ask a sub-agent",
                                            "parameters": {"type": "object",
                                                           "properties": {"task": {"type": "string"}}}}}]


def test_a_subagent_tool_runs_the_child_turn_and_answers_the_parents_call(
    make_harness: MakeHarness, provider: FakeProvider
) -> None:
    h = make_harness("sub", summarizer="extractive",
                     models={FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k", "token_limit": 100_000}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    held_during_child: list[bool] = []

    async def no_tools(call: dict) -> str:
        raise AssertionError("the sub-agent tool must not reach the host's executor")

    provider.queue(
        Reply.calls(("call_r", "research", {"task": "find the flaky test"})),  # the parent asks
        lambda req: (held_during_child.append(SID in runner._leases), Reply(text="it is test_refund"))[1],
        Reply(text="The sub-agent found test_refund."),  # the parent's final answer
    )
    runner = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), no_tools,
                        subagents={"research": SubagentSpec(model=FAKE_MODEL, system_prompt="You research.")})
    result = asyncio.run(runner.run(SID, "Which test is flaky?", tools=TOOLS))
    assert result.answer == "The sub-agent found test_refund."
    assert held_during_child == [True]
    child = f"{SID}/call_r"
    child_history = ok(h.do({"type": "get_history", "session_id": child}))["messages"]
    assert [m["content"] for m in child_history] == ["find the flaky test", "it is test_refund"]
    parent = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    answer = [m for m in parent if m["role"] == "tool"]
    assert answer[0]["tool_call_id"] == "call_r" and answer[0]["content"] == "it is test_refund"
    listed = {s["session_id"]: s for s in ok(h.do({"type": "list_sessions"}))["sessions"]}
    assert listed[child]["parent_session_id"] == SID
