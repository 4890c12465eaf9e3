"""OpenAI Agents SDK ``Runner`` with ``CompactingSession`` (issue 40): 30 runs with tool
calls on the SDK's own ``ScriptedModel`` (with and without a ``response_id``) and a
window that compacts several times; what the model received, the log, ``pop_item`` /
``clear_session``, a restart, the SDK's own ``SQLiteSession`` beside it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession, function_tool  # noqa: E402
from agents.testing.model import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from context_compaction.integrations._link import SessionLink  # noqa: E402
from context_compaction.integrations.openai_agents import STASH, CompactingSession, from_chat, to_chat  # noqa: E402
from integrations_common import (  # noqa: E402
    MODEL, SMALL_WINDOW, TURNS, WINDOW, assert_tool_pairs, checkpoints, filler, history, is_summary_text, projection,
    tokens,
)


@function_tool
def lookup(n: int) -> str:
    """Look a record up."""
    return "record " + filler(n, 60)


def scripted(calls: list[list[dict[str, Any]]], response_ids: bool) -> ScriptedModel:
    """The SDK's scripted model: a ``lookup`` call per question, then an answer."""

    def respond(call: ModelCall) -> ModelStep:
        items = [dict(i) for i in call.input]
        calls.append(items)
        n = len(calls)
        last = items[-1]
        rid = f"resp_{n}" if response_ids else None
        if last.get("type") == "function_call_output":
            return ModelStep(output=[assistant_message(f"answer {n}: " + filler(n, 20), item_id=f"msg_{n}")],
                             response_id=rid)
        return ModelStep(output=[function_call("lookup", {"n": n}, call_id=f"call_{n}", item_id=f"fc_{n}")],
                         response_id=rid)

    return ScriptedModel([ModelStep.respond(respond) for _ in range(10_000)])


def item_texts(items: list[dict[str, Any]]) -> list[str]:
    out = []
    for item in items:
        content = item.get("content") or item.get("output") or ""
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        out.append(text + (item.get("arguments") or "") + (item.get("name") or ""))
    return out


def kinds(items: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call_output":
            out.append(("result", [item["call_id"]]))
        elif kind == "function_call":
            if out and out[-1][0] == "call":
                out[-1][1].append(item["call_id"])
            else:
                out.append(("call", [item["call_id"]]))
        else:
            out.append(("other", []))
    return out


async def run(agent: Agent, session: Any, start: int, count: int) -> None:
    for n in range(start, start + count):
        await Runner.run(agent, "question " + filler(n, 25), session=session)


# Both item shapes on SQLite, one on PostgreSQL: the session's calls are the same commands
# on either store (ADR 0060's rule).
@pytest.mark.parametrize("backend, response_ids", [
    ("sqlite", True), ("sqlite", False), pytest.param("postgres", False, marks=pytest.mark.postgres),
], ids=["sqlite-response_id", "sqlite-no_response_id", "postgres-no_response_id"], indirect=["backend"])
def test_30_runs_compact_and_the_model_sees_summary_and_raw_tail(make_harness: Any, response_ids: bool) -> None:
    h = make_harness(**SMALL_WINDOW)
    calls: list[list[dict[str, Any]]] = []
    agent = Agent(name="a", instructions="Be brief.", model=scripted(calls, response_ids), tools=[lookup])
    session = CompactingSession(h.bus, "s1", model=MODEL, system_prompt="Be brief.")
    theirs = SQLiteSession("s1")  # the SDK's own session on the same run, for comparison
    asyncio.run(run(agent, session, 0, TURNS))
    their_calls: list[list[dict[str, Any]]] = []
    their_agent = Agent(name="a", instructions="Be brief.", model=scripted(their_calls, response_ids), tools=[lookup])
    asyncio.run(run(their_agent, theirs, 0, TURNS))

    stored = asyncio.run(theirs.get_items())
    assert len(stored) == TURNS * 4  # question, call, output, answer
    assert len(calls) == TURNS * 2
    assert checkpoints(h.bus, "s1") >= 3
    summarized = 0
    for received in calls:
        assert tokens(item_texts(received)) <= WINDOW
        assert_tool_pairs(kinds(received))
        if received[0].get("role") == "user" and is_summary_text(received[0].get("content")):
            summarized += 1
            tail = received[1:]
            # the raw tail is the SDK's own history, item for item
            start = next(i for i, item in enumerate(stored) if _same(item, tail[0]))
            assert all(_same(a, b) for a, b in zip(stored[start:start + len(tail)], tail, strict=False))
    assert summarized >= TURNS
    # The log holds every item, the same ones the SDK's own session stored.
    logged = [i for m in history(h.bus, "s1") for i in from_chat(_as_projected(m))]
    assert len(logged) == len(stored)
    assert all(_same(a, b) for a, b in zip(logged, stored, strict=True))

    before = projection(h.bus, "s1")
    bus = h.reopen()
    assert projection(bus, "s1") == before
    asyncio.run(run(agent, CompactingSession(bus, "s1", model=MODEL, system_prompt="Be brief."), TURNS, 1))
    assert is_summary_text(calls[-2][0]["content"])
    assert len(history(bus, "s1")) == (TURNS + 1) * 4


def test_add_items_again_pop_item_and_clear_session(make_harness: Any) -> None:
    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "s2", model=MODEL)
    items = [{"role": "user", "content": "hi"},
             {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}", "id": "fc1"},
             {"type": "function_call_output", "call_id": "c1", "output": "found"},
             {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
              "content": [{"type": "output_text", "text": "done", "annotations": []}]}]

    async def main() -> None:
        await session.add_items(items)
        await session.add_items(items[1:])  # the SDK sends the same items again: nothing new
        assert await session.get_items() == items
        assert await session.pop_item() == items[-1]
        assert await session.get_items() == items[:-1]
        assert await session.get_items(limit=2) == items[1:3]
        await session.add_items(items[-1:])  # popped, then sent again: it is back
        assert await session.get_items() == items
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None

    asyncio.run(main())
    # Nothing raw is gone: the log keeps what pop and clear took away from the model.
    from context_compaction import commands

    every = h.bus.dispatch(commands.GetHistory(session_id="s2", include_invalidated=True))
    assert len(every.messages) == 5 and all(m.invalidated for m in every.messages)


def test_run_compaction_compacts_when_forced_and_when_the_trigger_says_so(make_harness: Any) -> None:
    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "s3", model=MODEL)

    async def main() -> None:
        await session.add_items([{"role": "user", "content": "question " + filler(n, 60)} for n in range(40)])
        await session.run_compaction()
        assert checkpoints(h.bus, "s3") == 0  # far below the threshold
        await session.run_compaction({"force": True})
        assert checkpoints(h.bus, "s3") == 1

    asyncio.run(main())


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _as_projected(record: Any) -> dict[str, Any]:
    from context_compaction.integrations.openai_agents import _record_message

    return _record_message(record.model_dump())


# ---------------------------------------------------------------- lossless round trip
_text = st.text(min_size=1, max_size=30)
_json = st.recursive(st.none() | st.booleans() | st.integers(-9, 9) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=5)
_input_parts = st.lists(st.one_of(
    st.builds(lambda t: {"type": "input_text", "text": t}, _text),
    st.builds(lambda u, d: {"type": "input_image", "image_url": "https://x/" + u, "detail": d}, _text,
              st.sampled_from(["auto", "low"])),
    st.builds(lambda f: {"type": "input_file", "file_id": f}, _text),
), min_size=1, max_size=3)


@st.composite
def turns(draw: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 3))):
        items.append({"role": "user", "content": draw(_text | _input_parts)})
        if draw(st.booleans()):
            items.append({"type": "reasoning", "id": f"rs{n}", "summary": [{"type": "summary_text", "text": draw(_text)}],
                          "encrypted_content": draw(_text)})
        ids = [f"c{n}_{i}" for i in range(draw(st.integers(0, 2)))]
        for i in ids:
            items.append({"type": "function_call", "id": f"fc{i}", "call_id": i, "name": "lookup",
                          "arguments": json.dumps(draw(_json)), "status": "completed"})
        for i in ids:
            items.append({"type": "function_call_output", "call_id": i, "output": draw(_text | _input_parts)})
        items.append({"type": "message", "role": "assistant", "id": f"m{n}", "status": "completed",
                      "content": [{"type": "output_text", "text": draw(_text), "annotations": draw(st.just([])),
                                   "logprobs": []}]})
    return items


@settings(max_examples=60, deadline=None)
@given(items=turns())
def test_items_survive_the_log_both_ways(items: list[dict[str, Any]], rt_bus: Any) -> None:
    """Agents SDK items → our log → projection → items: text, images, files, function
    calls and outputs, reasoning items with their encrypted content, item ids."""
    bus = rt_bus
    link = SessionLink(bus, f"rt{len(_count)}", MODEL, STASH)
    _count.append(1)
    link.append(to_chat(items))
    back = [i for m in link.prepare().messages for i in from_chat(m)]
    assert back == items


_count: list[int] = []


def test_usage_hooks_record_the_first_model_calls_prompt_count(make_harness: Any) -> None:
    from agents import Usage

    from context_compaction import commands

    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "s4", model=MODEL, system_prompt="Be brief.")
    calls: list[list[dict[str, Any]]] = []
    model = scripted(calls, True)
    model.set_default_usage(Usage(requests=1, input_tokens=777, output_tokens=9, total_tokens=786))
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=[lookup])
    asyncio.run(Runner.run(agent, "question", session=session, hooks=session.usage_hooks()))
    assert asyncio.run(session.get_items())  # a new request, extending the measured one
    usage = h.bus.dispatch(commands.GetContextUsage(session_id="s4", system_prompt="Be brief."))
    assert usage.usage_source == "measured+estimated"
    assert usage.used_tokens > 777


def test_chat_completions_items_with_the_sdks_placeholder_id_are_all_kept(make_harness: Any) -> None:
    """Chat-completions and LiteLLM models give every item the SDK's ``__fake_id__``:
    it names no item, so a second answer is not taken for the first one sent again."""
    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "f1", model=MODEL)
    theirs = SQLiteSession("f1")

    def respond(call: ModelCall) -> ModelStep:
        n = len(call.input)
        if call.input[-1].get("type") == "function_call_output":
            return ModelStep(output=[assistant_message(f"answer {n}", item_id="__fake_id__")])
        return ModelStep(output=[function_call("lookup", {"n": n}, call_id=f"call_{n}", item_id="__fake_id__")])

    async def main() -> None:
        for target in (session, theirs):
            agent = Agent(name="a", model=ScriptedModel([ModelStep.respond(respond) for _ in range(20)]),
                          tools=[lookup])
            for n in range(3):
                await Runner.run(agent, f"question {n}", session=target)

    asyncio.run(main())
    stored = asyncio.run(theirs.get_items())
    assert len(stored) == 12
    assert asyncio.run(session.get_items()) == stored


def test_empty_user_text_survives() -> None:
    items = [{"role": "user", "content": ""}]
    assert [i for _, m in to_chat(items) for i in from_chat({**m, STASH: json.dumps(m[STASH])})] == items


def test_pop_item_takes_one_item_of_a_tool_group_and_the_sdk_can_put_it_back(make_harness: Any) -> None:
    """The SDK's retry rewind pops the tail item by item and may add them back: popping
    a tool output leaves its call in place, popping the call next takes the call."""
    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "p1", model=MODEL)
    items = [{"role": "user", "content": "hi"},
             {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}", "id": "fc1"},
             {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": "{}", "id": "fc2"},
             {"type": "function_call_output", "call_id": "c1", "output": "one"},
             {"type": "function_call_output", "call_id": "c2", "output": "two"}]

    async def main() -> None:
        await session.add_items(items)
        assert await session.pop_item() == items[4]
        await session.add_items([items[4]])  # put back
        assert await session.get_items() == items
        assert await session.pop_item() == items[4]
        assert await session.pop_item() == items[3]
        assert await session.pop_item() == items[2]
        assert await session.pop_item() == items[1]
        assert await session.get_items() == items[:1]
        await session.add_items(items[1:])
        assert await session.get_items() == items

    asyncio.run(main())


def test_two_tasks_adding_the_same_items_at_once_append_them_once(make_harness: Any) -> None:
    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "c1", model=MODEL)
    items = [{"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}", "id": "fc1"},
             {"type": "function_call_output", "call_id": "c1", "output": "found"},
             {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
              "content": [{"type": "output_text", "text": "done", "annotations": []}]}]

    async def main() -> list[Any]:
        await session.add_items([{"role": "user", "content": "hi"}])
        await asyncio.gather(session.add_items(items), session.add_items(items))
        return await session.get_items()

    assert asyncio.run(main()) == [{"role": "user", "content": "hi"}, *items]
    assert len(history(h.bus, "c1")) == 4


def test_the_agents_tools_given_to_the_session_count_against_the_window(make_harness: Any) -> None:
    """The SDK sends the agent's tool definitions beside the items; a session given them
    (``tools=agent.tools``) leaves room for them."""
    h = make_harness(**SMALL_WINDOW)

    @function_tool(name_override="lookup",
                   description_override="Look a record up. " + " ".join(filler(n, 40) for n in range(20)))
    def big_lookup(n: int) -> str:
        return "record " + filler(n, 60)

    calls: list[list[dict[str, Any]]] = []
    agent = Agent(name="a", instructions="Be brief.", model=scripted(calls, False), tools=[big_lookup])
    session = CompactingSession(h.bus, "t1", model=MODEL, system_prompt="Be brief.", tools=agent.tools)
    asyncio.run(Runner.run(agent, "question", session=session))
    request = session.link.last_request
    assert request is not None
    assert request.usage.breakdown["tools"] >= tokens([big_lookup.description])


def test_two_tasks_on_a_fresh_session_append_the_same_items_once(make_harness: Any) -> None:
    """Both tasks start the session and read the log; the slower read must not forget
    the keys the faster task reserved meanwhile."""
    h = make_harness(**SMALL_WINDOW)
    session = CompactingSession(h.bus, "c2", model=MODEL)
    items = [{"role": "user", "content": "hi"},
             {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
              "content": [{"type": "output_text", "text": "done", "annotations": []}]},
             {"type": "message", "role": "assistant", "id": "m2", "status": "completed",
              "content": [{"type": "output_text", "text": "more", "annotations": []}]}]

    async def main() -> None:
        await asyncio.gather(session.add_items(items[1:]), session.add_items(items[1:]))

    asyncio.run(main())
    assert len(history(h.bus, "c2")) == 1  # one assistant message (both items of one response)
