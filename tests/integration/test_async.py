"""``adispatch`` / ``adispatch_json`` (issue 15, ADR 0042): the command runs off the caller's
event loop and its summary call is ``litellm.acompletion``; the loop keeps serving meanwhile.

The summary goes over real HTTP to the local fake provider; the async client is told apart
by the header the OpenAI SDK sends (``x-stainless-async``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from backends import MakeHarness
from context_compaction.application.contracts import commands as c
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL, Harness, llm_settings, ok

SID = "a"
SUMMARY = "## Objective\n- Fix the flaky refund test.\n\n## Progress\n- Patched the retry loop."


def harness(make_harness: MakeHarness, provider: FakeProvider, sessions: tuple[str, ...] = (SID,)) -> Harness:
    h = make_harness("async", **llm_settings(provider.base_url, token_limit=100_000,
                                             context_compaction={"keep_recent_tokens": 3_000}))
    for sid in sessions:
        ok(h.do({"type": "start_session", "session_id": sid, "model": FAKE_MODEL}))
        for turn in coding_session(6, big_output_chars=3_000):
            ok(h.do({"type": "append_messages", "session_id": sid, "messages": turn.messages()}))
    return h


def _async_client(provider: FakeProvider, index: int = 0) -> bool:
    return provider.requests[index].headers.get("x-stainless-async", "false").startswith("async")


def test_adispatch_compacts_while_the_callers_loop_keeps_running(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=SUMMARY, delay=1.0))
    h = harness(make_harness, provider)

    async def main() -> tuple[Any, bool, int]:
        task = asyncio.create_task(h.bus.adispatch(c.Compact(session_id=SID)))
        ticks = 0
        async with asyncio.timeout(30):
            while provider.calls == 0:  # this loop runs while the command works elsewhere
                await asyncio.sleep(0.005)
                ticks += 1
            summary_outstanding = not task.done()
            return await task, summary_outstanding, ticks

    outcome, summary_outstanding, ticks = asyncio.run(main())
    assert summary_outstanding and ticks > 0  # the loop ran while the summary was being made
    assert outcome.status == "compacted" and "Patched the retry loop" in ok(
        h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]["summary"]
    assert provider.calls == 1 and _async_client(provider)  # litellm.acompletion
    h.close()


def test_sync_dispatch_keeps_the_blocking_summary_call(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=SUMMARY))
    h = harness(make_harness, provider)
    assert h.bus.dispatch(c.Compact(session_id=SID)).status == "compacted"
    assert provider.calls == 1 and not _async_client(provider)  # litellm.completion, as before
    h.close()


def test_summaries_of_concurrent_adispatches_are_in_flight_together(make_harness: MakeHarness, provider) -> None:
    gate = threading.Event()
    provider.queue(Reply(text=SUMMARY, gate=gate), Reply(text=SUMMARY, gate=gate))
    h = harness(make_harness, provider, sessions=("a", "b"))

    async def main() -> list[Any]:
        tasks = [asyncio.create_task(h.bus.adispatch_json({"type": "compact", "session_id": s}))
                 for s in ("a", "b")]
        try:
            async with asyncio.timeout(30):
                while provider.calls < 2:  # both summary calls outstanding at once
                    await asyncio.sleep(0.005)
        finally:
            gate.set()
        return await asyncio.gather(*tasks)

    envelopes = asyncio.run(main())
    assert [ok(e)["status"] for e in envelopes] == ["compacted", "compacted"]
    assert _async_client(provider, 0) and _async_client(provider, 1)
    h.close()


def test_adispatch_json_answers_envelopes_and_never_raises(make_harness: MakeHarness, provider) -> None:
    h = harness(make_harness, provider)

    async def main() -> list[dict[str, Any]]:
        return [
            await h.bus.adispatch_json('{"type": "compact", "session_id": '),
            await h.bus.adispatch_json({"type": "no_such_command"}),
            await h.bus.adispatch_json({"type": "get_history", "session_id": "missing"}),
            await h.bus.adispatch_json(b'{"type": "get_history", "session_id": "a", "limit": 1}'),
        ]

    bad_json, unknown, missing, history = asyncio.run(main())
    assert bad_json["error"]["code"] == unknown["error"]["code"] == "invalid_command"
    assert missing["error"]["code"] == "session_not_found"
    assert [m["seq"] for m in ok(history)["messages"]] == [1]
    assert provider.calls == 0
    h.close()


def test_a_failed_async_summary_is_summary_failed_and_changes_nothing(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(status=500))
    h = harness(make_harness, provider)
    before = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    envelope = asyncio.run(h.bus.adispatch_json({"type": "compact", "session_id": SID}))
    assert envelope["ok"] is False and envelope["error"]["code"] == "summary_failed"
    assert _async_client(provider)
    assert ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"] == []
    assert ok(h.do({"type": "get_history", "session_id": SID}))["messages"] == before
    h.close()
