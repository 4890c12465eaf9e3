"""LangChain v1 ``create_agent`` with ``CompactionMiddleware`` (issue 40): 30 turns with
tool calls on LangChain's fake chat model and a window that compacts several times; what
the model received, the log, the graph's own checkpointer, a restart; sync and async."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from context_compaction.integrations.langchain import CompactionMiddleware, from_chat, message_key, to_chat  # noqa: E402
from context_compaction.integrations._link import SessionLink  # noqa: E402
from integrations_common import (  # noqa: E402
    MODEL, SMALL_WINDOW, TURNS, WINDOW, assert_tool_pairs, checkpoints, filler, history, is_summary_text, projection,
    tokens,
)


class ScriptedChatModel(FakeMessagesListChatModel):
    """LangChain's fake chat model that calls ``lookup`` once per question, then answers;
    it keeps every message list it was given."""

    received: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        # (the system message first, as create_agent sends it)
        self.received.append([m for m in messages if m.type != "system"])
        last = messages[-1]
        n = len(self.received)
        if isinstance(last, HumanMessage):
            reply = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"n": n}, "id": f"call_{n}"}])
        else:
            reply = AIMessage(content=f"answer {n}: " + filler(n, 20))
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def lookup(n: int) -> str:
    """Look a record up."""
    return "record " + filler(n, 60)


def kinds(messages: list[BaseMessage]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            out.append(("result", [m.tool_call_id]))
        elif isinstance(m, AIMessage) and m.tool_calls:
            out.append(("call", [c["id"] for c in m.tool_calls]))
        else:
            out.append(("other", []))
    return out


def run_turns(agent: Any, thread: str, start: int, count: int, *, use_async: bool) -> None:
    config = {"configurable": {"thread_id": thread}}
    for n in range(start, start + count):
        message = {"messages": [HumanMessage(content="question " + filler(n, 25))]}
        if use_async:
            asyncio.run(agent.ainvoke(message, config))
        else:
            agent.invoke(message, config)


def texts(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) + "".join(json.dumps(c["args"]) + c["name"] for c in getattr(m, "tool_calls", []))
            for m in messages]


def check_received(model: ScriptedChatModel, state: list[BaseMessage]) -> int:
    """Every request: tool pairs intact, never over the window; after a compaction a
    summary block and then a raw tail that is the graph state's own suffix."""
    summarized = 0
    for received in model.received:
        assert tokens(texts(received)) <= WINDOW
        assert_tool_pairs(kinds(received))
        if is_summary_text(received[0].content):
            summarized += 1
            tail = received[1:]
            assert tail, "a summary with no raw tail"
            start = next(i for i, m in enumerate(state) if m.id == tail[0].id)
            assert [m.model_dump() for m in state[start:start + len(tail)]] == [m.model_dump() for m in tail]
    return summarized


# Sync and async on SQLite, one of them on PostgreSQL: the middleware's calls are the same
# commands on either store (ADR 0060's rule; each PostgreSQL run was ~15 s of the suite).
@pytest.mark.parametrize("backend, use_async", [
    ("sqlite", False), ("sqlite", True), pytest.param("postgres", True, marks=pytest.mark.postgres),
], ids=["sqlite-sync", "sqlite-async", "postgres-async"], indirect=["backend"])
def test_a_30_turn_agent_compacts_without_rewriting_its_graph_state(make_harness: Any, use_async: bool) -> None:
    h = make_harness(**SMALL_WINDOW)
    model = ScriptedChatModel(responses=[])
    model.received = []
    saver = InMemorySaver()
    middleware = CompactionMiddleware(h.bus, model=MODEL)
    agent = create_agent(model, [lookup], middleware=[middleware], checkpointer=saver, system_prompt="Be brief.")
    run_turns(agent, "t1", 0, TURNS, use_async=use_async)

    # The graph's own persistence keeps every message, nothing removed.
    state = agent.get_state({"configurable": {"thread_id": "t1"}}).values["messages"]
    assert len(state) == TURNS * 4
    assert len(model.received) == TURNS * 2
    assert checkpoints(h.bus, "t1") >= 3
    assert check_received(model, state) >= TURNS  # most requests after the first compaction
    # The log holds every message the agent produced, the final answer included.
    logged = history(h.bus, "t1")
    assert [json.loads(m.provider_state["data"]["x_langchain"])["key"] for m in logged] == [m.id for m in state]

    # A restarted process (a new bus on the same database) sees the same projection and
    # goes on without appending anything twice.
    before = projection(h.bus, "t1")
    bus = h.reopen()
    assert projection(bus, "t1") == before
    model.received = []
    again = create_agent(model, [lookup], middleware=[CompactionMiddleware(bus, model=MODEL)], checkpointer=saver,
                         system_prompt="Be brief.")
    run_turns(again, "t1", TURNS, 1, use_async=use_async)
    assert is_summary_text(model.received[0][0].content)
    assert len(history(bus, "t1")) == (TURNS + 1) * 4


def test_the_session_can_be_named_and_usage_reaches_the_log(make_harness: Any) -> None:
    h = make_harness(**SMALL_WINDOW)

    class Measured(ScriptedChatModel):
        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            result = super()._generate(messages, stop, run_manager, **kwargs)
            message = result.generations[0].message
            message.usage_metadata = {"input_tokens": 321, "output_tokens": 12, "total_tokens": 333}
            return result

    model = Measured(responses=[])
    model.received = []
    agent = create_agent(model, [lookup], middleware=[CompactionMiddleware(h.bus, model=MODEL, session_id="named")])
    agent.invoke({"messages": [HumanMessage(content="hello")]})
    from context_compaction import commands
    from context_compaction.integrations.langchain import _tool_schemas

    # (the same tools as the agent's requests: the measured count applies to what extends them)
    usage = h.bus.dispatch(commands.GetContextUsage(session_id="named", tools=_tool_schemas([lookup])))
    assert usage.usage_source == "measured+estimated"
    assert len(history(h.bus, "named")) == 4


def test_a_run_without_a_thread_or_session_is_refused_before_the_model_is_called(make_harness: Any) -> None:
    h = make_harness(**SMALL_WINDOW)
    model = ScriptedChatModel(responses=[])
    model.received = []
    agent = create_agent(model, [lookup], middleware=[CompactionMiddleware(h.bus, model=MODEL)])
    with pytest.raises(Exception, match="thread_id"):
        agent.invoke({"messages": [HumanMessage(content="hello")]})
    assert model.received == []


# ---------------------------------------------------------------- lossless round trip
_text = st.text(min_size=1, max_size=40)
_json = st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=6)
_blocks = st.one_of(
    _text,
    st.builds(lambda t: {"type": "text", "text": t}, _text),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": "https://x/" + u}}, _text),
    st.builds(lambda b, m: {"type": "image", "base64": b, "mime_type": m}, st.text("ABCD", min_size=4, max_size=8),
              st.sampled_from(["image/png", "image/jpeg"])),
    st.builds(lambda u: {"type": "image", "url": "https://x/" + u}, _text),
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, _text, _text),
    st.builds(lambda t: {"type": "reasoning", "reasoning": t, "extras": {"k": 1}}, _text),
)
_content = st.one_of(_text, st.lists(_blocks, min_size=1, max_size=4))
_kwargs = st.dictionaries(st.sampled_from(["reasoning_content", "refusal", "vendor"]), _json, max_size=2)


@st.composite
def conversations(draw: Any) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(draw(st.integers(1, 4))):
        out.append(HumanMessage(content=draw(_content), id=f"h{n}", name=draw(st.none() | st.just("ann")),
                                additional_kwargs=draw(_kwargs)))
        ids = [f"c{n}_{i}" for i in range(draw(st.integers(0, 2)))]
        calls = [{"name": "lookup", "args": draw(st.dictionaries(st.text(max_size=5), _json, max_size=3)), "id": i}
                 for i in ids]
        out.append(AIMessage(content=draw(_content) if not calls or draw(st.booleans()) else "", tool_calls=calls,
                             id=f"a{n}", additional_kwargs=draw(_kwargs),
                             response_metadata=draw(st.dictionaries(st.sampled_from(["model", "id"]), _json)),
                             usage_metadata=draw(st.none() | st.just(
                                 {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}))))
        for i in ids:
            out.append(ToolMessage(content=draw(_content), tool_call_id=i, id=f"t{i}",
                                   status=draw(st.sampled_from(["success", "error"])),
                                   artifact=draw(_json)))
    return out


@settings(max_examples=60, deadline=None)
@given(conversation=conversations())
def test_messages_survive_the_log_both_ways(conversation: list[BaseMessage], rt_bus: Any) -> None:
    """LangChain → our log → projection → LangChain gives the same messages: text,
    images, tool calls and results, reasoning blocks, provider fields, ids."""
    for m in conversation:
        assert from_chat(json.loads(json.dumps(to_chat(m)))) == m
    link = SessionLink(rt_bus, f"rt{len(_count)}", MODEL, "x_langchain")
    _count.append(1)
    link.append([(message_key(m), to_chat(m)) for m in conversation])
    back = [from_chat(m) for m in link.prepare("sys").messages[1:]]
    assert [m.model_dump() for m in back] == [m.model_dump() for m in conversation]


_count: list[int] = []


class _Fake(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def test_a_stateless_host_resending_its_history_as_dicts_appends_only_the_new_messages(make_harness: Any) -> None:
    """Without a checkpointer a host sends its whole history each run; as dicts, LangGraph
    gives them fresh ids every run. The log's visible history, message for message, at the
    start of the list is recognised: the model does not see it twice."""
    h = make_harness(**SMALL_WINDOW)
    model = _Fake(responses=[AIMessage("a1"), AIMessage("a2"), AIMessage("a3")])
    seen: list[list[BaseMessage]] = []
    original = _Fake._generate

    def spy(self: Any, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        seen.append(list(messages))
        return original(self, messages, *args, **kwargs)

    _Fake._generate = spy  # type: ignore[method-assign]
    try:
        agent = create_agent(model, [], middleware=[CompactionMiddleware(h.bus, model=MODEL, session_id="d1")])
        sent: list[dict[str, Any]] = []
        for n in range(3):
            sent.append({"role": "user", "content": f"q{n}"})
            answer = agent.invoke({"messages": list(sent)})["messages"][-1]
            sent.append({"role": "assistant", "content": answer.content})
    finally:
        _Fake._generate = original  # type: ignore[method-assign]
    assert [m.content for m in history(h.bus, "d1")] == [m["content"] for m in sent]
    assert [m.content for m in seen[-1]] == ["q0", "a1", "q1", "a2", "q2"]
