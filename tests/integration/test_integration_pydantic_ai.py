"""pydantic-ai ``Agent`` with ``CompactionProcessor`` (issue 40): 30 runs with tool calls
on pydantic-ai's ``FunctionModel`` and a window that compacts several times; what the
model received, the log, the run's own ``all_messages()``, a restart; sync and async."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    BinaryContent, ImageUrl, ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse,
    SystemPromptPart, TextPart, ThinkingPart, ToolCallPart, ToolReturnPart, UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

from context_compaction.integrations._link import SessionLink  # noqa: E402
from context_compaction.integrations.pydantic_ai import STASH, CompactionProcessor, from_chat, message_key, to_chat  # noqa: E402
from integrations_common import (  # noqa: E402
    MODEL, SMALL_WINDOW, TURNS, WINDOW, assert_tool_pairs, checkpoints, filler, history, is_summary_text, projection,
    tokens,
)


def scripted(received: list[list[ModelMessage]]) -> FunctionModel:
    """pydantic-ai's function model: a ``lookup`` call per question, then an answer; its
    usage counts the prompt with tiktoken, as a provider would (``FunctionModel``'s own
    estimate counts words, and the measured count steers our budget)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(list(messages))
        n = len(received)
        usage = RequestUsage(input_tokens=tokens(texts(messages)), output_tokens=20)
        if messages[-1].parts[-1].part_kind == "tool-return":
            return ModelResponse(parts=[TextPart(f"answer {n}: " + filler(n, 20))], usage=usage)
        return ModelResponse(parts=[ToolCallPart("lookup", {"n": n}, tool_call_id=f"call_{n}")], usage=usage)

    return FunctionModel(respond)


def make_agent(bus: Any, received: list[list[ModelMessage]]) -> Agent:
    agent = Agent(scripted(received), instructions="Be brief.",
                  capabilities=[CompactionProcessor(bus, session_id="s1", model=MODEL)])

    @agent.tool_plain
    def lookup(n: int) -> str:
        """Look a record up."""
        return "record " + filler(n, 250)

    return agent


def run(agent: Agent, start: int, count: int, past: list[ModelMessage], use_async: bool) -> list[ModelMessage]:
    for n in range(start, start + count):
        prompt = "question " + filler(n, 25)
        if use_async:
            result = asyncio.run(agent.run(prompt, message_history=past))
        else:
            result = agent.run_sync(prompt, message_history=past)
        past = result.all_messages()
    return past


def texts(messages: list[ModelMessage]) -> list[str]:
    out = []
    for m in messages:
        for p in m.parts:
            content = getattr(p, "content", "")
            out.append((content if isinstance(content, str) else json.dumps(content, default=str))
                       + json.dumps(getattr(p, "args", "") or ""))
    return out


def _unshortened(mine: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """``sent`` as stored, where a request trimmed within its turn shortened an older
    tool output (request-local; the log keeps it whole)."""
    if sent["part_kind"] == "tool-return" and sent["content"] != mine["content"]:
        assert len(sent["content"]) < len(mine["content"])
        return {**sent, "content": mine["content"]}
    return sent


def kinds(messages: list[ModelMessage]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for m in messages:
        if isinstance(m, ModelResponse):
            ids = [p.tool_call_id for p in m.parts if isinstance(p, ToolCallPart)]
            out.append(("call", ids) if ids else ("other", []))
        else:
            for p in m.parts:
                out.append(("result", [p.tool_call_id]) if isinstance(p, ToolReturnPart) else ("other", []))
    return out


# Sync and async on SQLite, one of them on PostgreSQL: the processor's calls are the same
# commands on either store (ADR 0060's rule).
@pytest.mark.parametrize("backend, use_async", [
    ("sqlite", False), ("sqlite", True), pytest.param("postgres", True, marks=pytest.mark.postgres),
], ids=["sqlite-sync", "sqlite-async", "postgres-async"], indirect=["backend"])
def test_30_runs_compact_and_the_runs_history_stays_whole(make_harness: Any, use_async: bool) -> None:
    h = make_harness(**SMALL_WINDOW)
    received: list[list[ModelMessage]] = []
    agent = make_agent(h.bus, received)
    past = run(agent, 0, TURNS, [], use_async)

    assert len(past) == TURNS * 4  # the run's own history: nothing replaced, nothing lost
    assert len(received) == TURNS * 2
    assert checkpoints(h.bus, "s1") >= 3
    dumped = ModelMessagesTypeAdapter.dump_python(past, mode="json")
    summarized = 0
    for request in received:
        assert tokens(texts(request)) <= WINDOW
        assert_tool_pairs(kinds(request))
        first = request[0].parts[0]
        if isinstance(first, UserPromptPart) and is_summary_text(first.content):
            summarized += 1
            tail = ModelMessagesTypeAdapter.dump_python(request[1:], mode="json")
            start = next(i for i, m in enumerate(dumped) if message_key(m) == message_key(tail[0]))
            for mine, sent in zip(dumped[start:start + len(tail)], tail, strict=True):
                assert [_unshortened(p, q) for p, q in zip(mine["parts"], sent["parts"], strict=True)] == mine["parts"]
    assert summarized >= TURNS
    logged = history(h.bus, "s1")
    keys = [json.loads(m.provider_state["data"][STASH])["mkey"] for m in logged]
    assert list(dict.fromkeys(keys)) == [message_key(m) for m in dumped]

    before = projection(h.bus, "s1")
    bus = h.reopen()
    assert projection(bus, "s1") == before
    again = make_agent(bus, received)
    after = run(again, TURNS, 1, past, use_async)
    assert len(after) == (TURNS + 1) * 4
    first = received[-2][0].parts[0]
    assert isinstance(first, UserPromptPart) and is_summary_text(first.content)
    assert len(history(bus, "s1")) == (TURNS + 1) * 4


# ---------------------------------------------------------------- lossless round trip
_text = st.text(min_size=1, max_size=30)
_json = st.recursive(st.none() | st.booleans() | st.integers(-9, 9) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=5)
# Distinct timestamps, as a run gives them (two messages alike to the microsecond are
# one message to ``message_key``).
_clock = iter(range(10**9))
_stamp = st.builds(lambda: datetime.fromtimestamp(1.7e9 + next(_clock) / 1000, UTC))
_user = st.one_of(_text, st.lists(st.one_of(
    _text, st.builds(lambda u: ImageUrl("https://x/" + u + ".png"), st.text("abc", min_size=1, max_size=5)),
    st.builds(lambda b: BinaryContent(b, media_type="image/png"), st.binary(min_size=1, max_size=8))),
    min_size=1, max_size=3))


@st.composite
def conversations(draw: Any) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for n in range(draw(st.integers(1, 3))):
        parts: list[Any] = [UserPromptPart(draw(_user), timestamp=draw(_stamp))]
        if n == 0 and draw(st.booleans()):
            parts.insert(0, SystemPromptPart(draw(_text), timestamp=draw(_stamp)))
        out.append(ModelRequest(parts=parts, timestamp=draw(_stamp), instructions=draw(st.none() | _text)))
        ids = [f"c{n}_{i}" for i in range(draw(st.integers(0, 2)))]
        response: list[Any] = []
        if draw(st.booleans()):
            response.append(ThinkingPart(draw(_text), signature=draw(st.none() | _text), provider_name="anthropic"))
        if draw(st.booleans()) or not ids:
            response.append(TextPart(draw(_text)))
        response += [ToolCallPart("lookup", draw(st.dictionaries(st.text(max_size=4), _json, max_size=2)
                                               | st.just('{"raw": 1}')), tool_call_id=i) for i in ids]
        out.append(ModelResponse(parts=response, model_name="m", timestamp=draw(_stamp),
                                 provider_details=draw(st.none() | st.just({"k": [1]}))))
        if ids:
            returns: list[Any] = [ToolReturnPart("lookup", draw(_json | _text), tool_call_id=ids[0],
                                                 timestamp=draw(_stamp))]
            # (a retry answering a call: pydantic-ai 2.x deprecates RetryPromptPart for this)
            returns += [ToolReturnPart("lookup", draw(_text), tool_call_id=i, outcome="retried",
                                       timestamp=draw(_stamp)) for i in ids[1:]]
            out.append(ModelRequest(parts=returns, timestamp=draw(_stamp)))
            out.append(ModelResponse(parts=[TextPart(draw(_text))], timestamp=draw(_stamp)))
    return out


@settings(max_examples=60, deadline=None)
@given(conversation=conversations())
def test_messages_survive_the_log_both_ways(conversation: list[ModelMessage], rt_bus: Any) -> None:
    """pydantic-ai → our log → projection → pydantic-ai: text, images (URLs, bytes),
    tool calls (dict or JSON-text args), returns, retried returns, thinking with signatures,
    system prompts, instructions, timestamps, provider details."""
    bus = rt_bus
    link = SessionLink(bus, f"rt{len(_count)}", MODEL, STASH)
    _count.append(1)
    link.append(to_chat(conversation))
    back = from_chat(link.prepare().messages)
    dump = ModelMessagesTypeAdapter.dump_python
    assert dump(back, mode="json") == dump(conversation, mode="json")


_count: list[int] = []


def test_tool_definitions_count_against_the_window(make_harness: Any) -> None:
    """Large tool definitions reach the model beside the messages: the
    projection leaves room for them, so no request is over the window (with no measured
    count to steer the budget: the provider reports none)."""
    h = make_harness(**SMALL_WINDOW)
    received: list[tuple[list[ModelMessage], AgentInfo]] = []
    instructions = "Be brief."

    def sent(messages: list[ModelMessage], info: AgentInfo) -> int:
        tools = [json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters_json_schema})
                 for t in info.function_tools]
        return tokens([*texts(messages), info.instructions or "", *tools])

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append((list(messages), info))
        n = len(received)
        # a provider that reports no counts: the budget is our estimate alone
        usage = RequestUsage(output_tokens=20)
        if messages[-1].parts[-1].part_kind == "tool-return":
            return ModelResponse(parts=[TextPart(f"answer {n}: " + filler(n, 20))], usage=usage)
        return ModelResponse(parts=[ToolCallPart("lookup", {"n": n}, tool_call_id=f"call_{n}")], usage=usage)

    processor = CompactionProcessor(h.bus, session_id="w1", model=MODEL)
    agent = Agent(FunctionModel(respond), instructions=instructions, capabilities=[processor])

    def lookup(n: int) -> str:
        return "record " + filler(n, 120)

    lookup.__doc__ = "Look a record up. " + " ".join(filler(n, 40) for n in range(45))  # ~2,700 tokens
    agent.tool_plain(lookup)
    past: list[ModelMessage] = []
    for n in range(TURNS):
        past = agent.run_sync("question " + filler(n, 25), message_history=past).all_messages()
    assert checkpoints(h.bus, "w1") >= 1
    for messages, info in received:
        assert sent(messages, info) <= WINDOW
    # the tool definitions were in the budget (what the window check alone cannot show:
    # the stash makes the estimate of the messages high)
    agent.run_sync("one more", message_history=past)
    assert processor.link.last_request is not None
    assert processor.link.last_request.usage.breakdown["tools"] >= tokens([lookup.__doc__])


def test_the_stash_leaves_out_default_values(make_harness: Any) -> None:
    """The stash is counted in the budget: a response's fields at their defaults (a
    dozen zero usage counters, empty details) would cost ~200 tokens per message that
    the model never receives, and compaction would come far too early."""
    import tiktoken

    h = make_harness(**SMALL_WINDOW)
    agent = make_agent(h.bus, [])
    past = run(agent, 0, 2, [], False)
    encoding = tiktoken.get_encoding("o200k_base")
    logged = history(h.bus, "s1")
    assert len(logged) == len(to_chat(past))
    for record in logged:
        stash = record.provider_state["data"][STASH]
        assert len(encoding.encode(json.dumps(stash, ensure_ascii=False))) <= 300
        assert "cache_write_tokens" not in stash
    back = from_chat(projection(h.bus, "s1"))
    assert ModelMessagesTypeAdapter.dump_python(back, mode="json") == ModelMessagesTypeAdapter.dump_python(
        past, mode="json")
