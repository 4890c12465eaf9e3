"""A long session's stored snapshot holds the open work, not the history (ADR 0051); after
a restart, commands naming an old seq are decided on a full replay and behave as
before; appends never need one."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from backends import MakeHarness
from context_compaction.domain.session import session_aggregate_id
from helpers import Harness, RecordingSummarizer, err, ok, read_turns, tool

BACKENDS = ("memory", "sqlite", "postgres")

SID = "long"


def fill(h: Harness, batches: int, per_batch: int = 50) -> None:
    """``batches`` appends of ``per_batch`` turns (4 messages each), a compaction after each."""
    for b in range(batches):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": read_turns(b * per_batch, per_batch)}))
        assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"


def snapshot_state(h: Harness) -> dict[str, Any]:
    app = h.inspect.app
    [row] = app.snapshots.recorder.select_events(session_aggregate_id(SID), desc=True, limit=1)
    return orjson.loads(row.state)["state"]  # type: ignore[no-any-return]


def harness(make_harness: MakeHarness) -> Harness:
    h = make_harness("main", snapshot_interval=20, adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                     context_compaction={"keep_recent_tokens": 300})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def test_the_stored_snapshot_stays_bounded_as_the_session_grows(make_harness: MakeHarness) -> None:
    h = harness(make_harness)
    fill(h, 2)
    small = snapshot_state(h)
    fill(h, 8)
    large = snapshot_state(h)
    assert large["message_count"] >= 5 * small["message_count"] - 10
    # (snapshots are taken at the appends: the last batch, not compacted yet, is live)
    assert len(large["tool_groups"]) <= len(small["tool_groups"]) + 2
    assert large["archived_upto"] > small["archived_upto"] > 0
    groups_bytes = {k: len(orjson.dumps(s["tool_groups"])) for k, s in (("small", small), ("large", large))}
    assert groups_bytes["large"] < 1.5 * groups_bytes["small"] + 100, groups_bytes


@pytest.mark.parametrize("restart", [False, True], ids=["held", "restarted"])
def test_commands_on_old_seqs_after_a_restart_behave_as_on_the_held_copy(make_harness: MakeHarness,
                                                                          restart: bool) -> None:
    h = harness(make_harness)
    fill(h, 3)
    if restart:
        h.reopen()  # the aggregate now comes from a snapshot without the closed groups
    # seq 6 is the assistant call of turn 1 (seqs 5-8), long behind the checkpoint
    events = h.bus.services.events
    replays: list[str] = []
    full = events.load_complete
    events.load_complete = lambda sid: replays.append(sid) or full(sid)  # type: ignore[method-assign]
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": read_turns(900, 1)}))
    assert replays == []  # an append never needs the closed groups
    assert ok(h.do({"type": "pin_messages", "session_id": SID, "seqs": [7]}))["pinned_seqs"] == [6, 7]
    assert replays == ([SID] if restart else [])  # the held copy after a restart came from a snapshot
    refused = err(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [7]}), "invalid_message")
    assert refused["details"]["tool_group_seqs"] == [6, 7]
    gone = ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [7],
                    "expand_tool_groups": True}))
    assert gone["excluded_seqs"] == [[6, 7]]
    h.reopen()
    # a rewind into an old group reopens its call: its result may be appended again
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 10}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [tool("c2", "again", name="read")]}))
    err(h.do({"type": "append_messages", "session_id": SID, "messages": [tool("c2", "twice", name="read")]}),
        "invalid_message")
    history = ok(h.do({"type": "get_projection", "session_id": SID}))["messages"]
    assert [m.get("tool_call_id") for m in history[-2:]] == [None, "c2"]
