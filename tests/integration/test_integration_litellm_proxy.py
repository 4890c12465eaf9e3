"""The LiteLLM proxy hook ``CompactionHook`` (issue 40): a chat client that re-sends its
whole growing message list for 30 turns with tool calls, through the hook and
``litellm.acompletion`` to the local fake provider over HTTP, on a window that compacts
several times; what the provider received, the log, usage, a restart."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import litellm
import pytest

from context_compaction import commands
from context_compaction.integrations.litellm_proxy import CompactionHook
from fakeprovider import FakeProvider, Recorded, Reply
from helpers import FAKE_MODEL
from integrations_common import (
    TURNS, WINDOW, assert_tool_pairs, checkpoints, filler, history, is_summary_text, same_or_shortened, tokens,
)

SYSTEM = "You are a careful agent."


def settings_for(provider: FakeProvider) -> dict[str, Any]:
    return {"summarizer": "extractive",
            "models": {FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k", "token_limit": WINDOW}},
            "context_compaction": {"reserve_tokens": 1_000, "keep_recent_tokens": 1_200}}


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content") or "") + "".join(c["function"]["arguments"] + c["function"]["name"]
                                                  for c in m.get("tool_calls") or ()) for m in messages]


def kinds(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    return [("result", [m["tool_call_id"]]) if m["role"] == "tool" else
            ("call", [c["id"] for c in m["tool_calls"]]) if m.get("tool_calls") else ("other", [])
            for m in messages]


def script(provider: FakeProvider, count: int) -> None:
    """Per turn: a ``lookup`` call, then an answer; usage is the prompt counted with
    tiktoken, as a provider would count it."""
    def reply(n: int, call: bool) -> Any:
        def make(request: Recorded) -> Reply:
            used = tokens(texts(request.body["messages"]))
            if call:
                return Reply(text=None, tool_calls=[{"id": f"call_{n}", "type": "function", "function": {
                    "name": "lookup", "arguments": json.dumps({"n": n})}}], finish_reason="tool_calls",
                    prompt_tokens=used)
            return Reply(text=f"answer {n}: " + filler(n, 20), prompt_tokens=used)
        return make

    for n in range(count):
        provider.queue(reply(n, True), reply(n, False))


async def client_turns(hook: CompactionHook, provider: FakeProvider, sent: list[dict[str, Any]], start: int,
                       count: int) -> None:
    """A chat client: it keeps its own list and sends all of it each time."""
    for n in range(start, start + count):
        sent.append({"role": "user", "content": "question " + filler(n, 25)})
        for _ in range(2):
            data = {"model": FAKE_MODEL, "messages": [{"role": "system", "content": SYSTEM}, *sent],
                    "metadata": {"session_id": "s1"}}
            data = await hook.async_pre_call_hook(None, None, data, "acompletion")
            response = await litellm.acompletion(model=data["model"], messages=data["messages"],
                                                 api_base=provider.base_url, api_key="k", metadata=data["metadata"])
            message = response.choices[0].message
            if message.tool_calls:
                sent.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                                  "arguments": c.function.arguments}}
                    for c in message.tool_calls]})
                sent.append({"role": "tool", "tool_call_id": message.tool_calls[0].id,
                             "content": "record " + filler(n, 250)})
            else:
                sent.append({"role": "assistant", "content": message.content})


async def settle(bus: Any, count: int) -> list[Any]:
    """The log once litellm's success logging (a background task after each response)
    has appended the last answer: at most a few seconds, never a timing assertion."""
    for _ in range(500):
        logged = (await bus.adispatch(commands.GetHistory(session_id="s1"))).messages
        if len(logged) >= count:
            return logged
        await asyncio.sleep(0.01)
    return logged


class Callbacks:
    """Hooks registered with litellm for one test, as the proxy registers its
    ``callbacks:``; removed from every litellm list afterwards."""

    def __init__(self) -> None:
        self.hooks: list[CompactionHook] = []

    def register(self, hook: CompactionHook) -> None:
        for old in self.hooks:
            litellm.logging_callback_manager.remove_callback_from_all_lists(old)
        litellm.logging_callback_manager.add_litellm_callback(hook)
        self.hooks.append(hook)

    def close(self) -> None:
        for hook in self.hooks:
            litellm.logging_callback_manager.remove_callback_from_all_lists(hook)


@pytest.fixture
def callbacks() -> Any:
    registry = Callbacks()
    yield registry
    registry.close()


def test_a_client_resending_its_list_gets_summary_and_tail_and_the_log_gets_each_message_once(
    make_harness: Any, provider: FakeProvider, callbacks: Callbacks
) -> None:
    h = make_harness(**settings_for(provider))
    hook = CompactionHook(h.bus)
    callbacks.register(hook)
    script(provider, TURNS + 1)
    sent: list[dict[str, Any]] = []

    async def first() -> list[Any]:
        await client_turns(hook, provider, sent, 0, TURNS)
        return await settle(h.bus, len(sent))

    logged = asyncio.run(first())

    assert provider.calls == TURNS * 2
    assert checkpoints(h.bus, "s1") >= 3
    summarized = 0
    for request in provider.requests:
        messages = request.body["messages"]
        assert messages[0] == {"role": "system", "content": SYSTEM}  # the client's system prompt
        assert tokens(texts(messages)) <= WINDOW
        assert_tool_pairs(kinds(messages[1:]))
        if is_summary_text(messages[1]["content"]):
            summarized += 1
            tail = messages[2:]
            start = next(i for i, m in enumerate(sent) if m.get("content") == tail[0].get("content"))
            assert len(sent[start:start + len(tail)]) == len(tail)
            assert all(same_or_shortened(a.get("content"), b.get("content"), a["role"] == "tool")
                       for a, b in zip(sent[start:], tail, strict=False))
    assert summarized >= TURNS
    # every message once: the final answer from the success hook, as the provider sent it
    assert [m.content for m in logged] == [m["content"] for m in sent]

    # The success hook recorded the provider's count (litellm calls it after the response).
    async def measured() -> bool:
        for _ in range(200):
            usage = await h.bus.adispatch(commands.GetContextUsage(session_id="s1", system_prompt=SYSTEM))
            if usage.usage_source == "measured+estimated":
                return True
            await asyncio.sleep(0.02)
        return False

    assert asyncio.run(measured())

    # A restarted proxy recognises the client's list as the log's prefix.
    bus = h.reopen()
    again = CompactionHook(bus)
    callbacks.register(again)

    async def second() -> list[Any]:
        await client_turns(again, provider, sent, TURNS, 1)
        return await settle(bus, len(sent))

    assert len(asyncio.run(second())) == len(sent) == (TURNS + 1) * 4
    assert is_summary_text(provider.requests[-2].body["messages"][1]["content"])


def test_a_request_without_a_session_passes_through_and_a_changed_history_rewinds(
    make_harness: Any, provider: FakeProvider
) -> None:
    h = make_harness(**settings_for(provider))
    hook = CompactionHook(h.bus)
    data = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    assert asyncio.run(hook.async_pre_call_hook(None, None, dict(data), "acompletion")) == data
    sent = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]

    async def send(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = await hook.async_pre_call_hook(None, None, {"model": FAKE_MODEL, "messages": messages,
                                                          "litellm_metadata": {"session_id": "s2"}}, "acompletion")
        return list(out["messages"])

    assert asyncio.run(send(sent)) == sent
    assert asyncio.run(send([*sent, {"role": "user", "content": "three"}]))[-1]["content"] == "three"
    # The client edited its second message: the log rewinds to where they agree.
    edited = [sent[0], {"role": "assistant", "content": "TWO"}]
    assert asyncio.run(send(edited)) == edited
    every = h.bus.dispatch(commands.GetHistory(session_id="s2", include_invalidated=True)).messages
    assert [(m.content, m.invalidated) for m in every] == [("one", False), ("two", True), ("three", True),
                                                           ("TWO", False)]


def test_two_proxy_workers_on_one_database_keep_one_history(make_harness: Any, provider: FakeProvider) -> None:
    """Worker B rewinds what worker A saw (its client edited a message); A's next request
    reads the log again instead of rewinding B's messages."""
    h = make_harness(**settings_for(provider))
    a, b = CompactionHook(h.bus), CompactionHook(h.new_bus())

    async def send(hook: CompactionHook, messages: list[dict[str, Any]]) -> None:
        await hook.async_pre_call_hook(None, None, {"model": FAKE_MODEL, "messages": messages,
                                                    "metadata": {"session_id": "s3"}}, "acompletion")

    one, two, three = ({"role": "user", "content": t} for t in ("one", "two", "three"))
    reply = {"role": "assistant", "content": "ok"}
    asyncio.run(send(a, [one, reply, two]))
    edited = {"role": "user", "content": "TWO"}
    asyncio.run(send(b, [one, reply, edited]))
    asyncio.run(send(a, [one, reply, edited, reply, three]))
    every = h.bus.dispatch(commands.GetHistory(session_id="s3", include_invalidated=True)).messages
    assert [(m.content, m.invalidated) for m in every] == [
        ("one", False), ("ok", False), ("two", True), ("TWO", False), ("ok", False), ("three", False)]


def test_a_system_prompt_sent_as_parts_reaches_the_model_as_its_text(make_harness: Any, provider: FakeProvider) -> None:
    h = make_harness(**settings_for(provider))
    hook = CompactionHook(h.bus)
    system = {"role": "system", "content": [{"type": "text", "text": "You are careful."},
                                            {"type": "text", "text": "Cite sources.", "cache_control": {"type": "ephemeral"}}]}
    data = {"model": FAKE_MODEL, "messages": [system, {"role": "user", "content": "hi"}],
            "metadata": {"session_id": "s4"}}
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, "acompletion"))
    assert out["messages"][0] == {"role": "system", "content": "You are careful.\nCite sources."}
    assert out["messages"][1:] == [{"role": "user", "content": "hi"}]


def test_concurrent_first_requests_of_a_session_all_get_the_projection_and_append_once(
    make_harness: Any, provider: FakeProvider
) -> None:
    h = make_harness(**settings_for(provider))
    hook = CompactionHook(h.bus)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "one"},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "two"}]

    async def main() -> list[Any]:
        return await asyncio.gather(*[hook.async_pre_call_hook(
            None, None, {"model": FAKE_MODEL, "messages": [dict(m) for m in messages],
                         "metadata": {"session_id": "s5"}}, "acompletion") for _ in range(3)])

    for out in asyncio.run(main()):
        assert out["messages"] == messages
    every = h.bus.dispatch(commands.GetHistory(session_id="s5", include_invalidated=True)).messages
    assert [(m.content, m.invalidated) for m in every] == [("one", False), ("ok", False), ("two", False)]
