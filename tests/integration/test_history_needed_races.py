"""Commands that need a full replay (ADR 0051 ``HistoryNeeded``) racing
appends, in threads of one process and in a second process's bus: every command
succeeds (no internal error, no give-up) and the aggregate agrees with the read model."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, ok, read_turns


SID = "hn"


@pytest.mark.backends("sqlite", "postgres")
def test_old_seq_commands_and_appends_in_threads_after_a_restart(make_harness: MakeHarness) -> None:
    h: Harness = make_harness("main", snapshot_interval=5,
                              adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                              context_compaction={"keep_recent_tokens": 300})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for b in range(3):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": read_turns(b * 10, 10)}))
        assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"
    h.reopen()
    buses = [h.bus, h.new_bus()]  # (the second: another process's view, its own cache)
    errors: list[Any] = []

    def pinner(bus: Any, seq: int) -> None:
        for _ in range(6):
            for kind in ("pin_messages", "unpin_messages"):
                answer = bus.dispatch_json({"type": kind, "session_id": SID, "seqs": [seq]})
                if not answer["ok"]:
                    errors.append(answer["error"])

    def appender(bus: Any, base: int) -> None:
        for k in range(6):
            answer = bus.dispatch_json({"type": "append_messages", "session_id": SID,
                                        "messages": read_turns(base + k, 1)})
            if not answer["ok"]:
                errors.append(answer["error"])

    threads = [threading.Thread(target=pinner, args=(buses[0], 7)),
               threading.Thread(target=pinner, args=(buses[1], 11)),
               threading.Thread(target=appender, args=(buses[0], 100)),
               threading.Thread(target=appender, args=(buses[1], 200))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    assert ok(h.do({"type": "pin_messages", "session_id": SID, "seqs": [7]}))["pinned_seqs"] == [6, 7]
    history = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    assert len(history) == 120 + 2 * 6 * 4
    # the old group can still be deleted whole, from either bus
    gone = ok(buses[1].dispatch_json({"type": "invalidate_history", "session_id": SID, "kind": "delete",
                                      "seqs": [11], "expand_tool_groups": True}))
    assert gone["excluded_seqs"] == [[10, 11]]
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": read_turns(300, 1)}))
