"""Closing the bus while ``adispatch`` commands run.

A service's shutdown closes the bus while requests are still in flight (a compaction in
its summary call). The running command must finish whole — not fail with
``internal_error`` ("unexpected ConnectionPoolClosedError") because the store was
closed under it; new commands are refused at once. SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
import time

from backends import MakeHarness
from context_compaction.infrastructure.summarizers import ExtractiveSummarizer


class SlowSummarizer:
    """The extractive summary, after a pause long enough to close the bus in."""

    provider_kind = "extractive"

    def __init__(self) -> None:
        self.started = threading.Event()

    def summarize(self, request):  # noqa: ANN001, ANN201 - the Summarizer port
        self.started.set()
        time.sleep(0.5)
        return ExtractiveSummarizer().summarize(request)


def test_closing_the_bus_lets_a_running_compaction_finish_and_refuses_new_commands(
    make_harness: MakeHarness,
) -> None:
    slow = SlowSummarizer()
    # A small raw tail kept, so 300-word messages leave the compaction work to do: 3,000
    # (over the default 20,000 tokens kept) cost the extractive summary ~4 s a backend.
    h = make_harness("close", adapters={"summarizer": slow}, context_compaction={"keep_recent_tokens": 1000})
    bus = h.bus
    assert bus.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o"})["ok"]
    text = "word " * 300
    for _ in range(6):
        assert bus.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [
            {"role": "user", "content": text}, {"role": "assistant", "content": text}]})["ok"]

    async def main() -> tuple[dict, dict]:
        running = asyncio.create_task(bus.adispatch_json({"type": "compact", "session_id": "s"}))
        async with asyncio.timeout(30):
            while not slow.started.is_set():
                await asyncio.sleep(0.005)
        closing = asyncio.create_task(asyncio.to_thread(bus.close))
        await asyncio.sleep(0.05)  # close has begun: the bus takes no new command
        late = await bus.adispatch_json({"type": "get_history", "session_id": "s"})
        await closing
        return await running, late

    compacted, late = asyncio.run(main())
    assert compacted["ok"] is True and compacted["result"]["status"] == "compacted", compacted
    assert late["ok"] is False and "closed" in late["error"]["message"], late
    # ... and the compaction is in the store, whole.
    reopened = h.new_bus(adapters={"summarizer": ExtractiveSummarizer()})
    checkpoints = reopened.dispatch_json({"type": "list_checkpoints", "session_id": "s"})
    assert checkpoints["ok"] and len(checkpoints["result"]["checkpoints"]) == 1, checkpoints
