"""Stage 1 of compaction, tool-result clearing, wired into the turn (issue 17, ADR 0034).

``Session.ToolResultsCleared`` stores the placeholders; every projection (the live
turn, a restarted process, ``replay_session``, a rebuilt read model) applies them.
It does not move the context generation, so a summary in flight stays valid.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from context_compaction.application.compacting.compaction import commit_candidate, summarize_candidate
from context_compaction.application.compacting.staged import clear_tool_results
from context_compaction.application.runtime.turncontext import prepare_context
from context_compaction.domain.cutpoint import plan_cut
from context_compaction.domain.errors import InvalidCommand
from context_compaction.domain.session import Session
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.verify import verify
from helpers import Harness, ok, user
from staged_builders import clearing, build, limit_just_over, prepare, history, cleared_events


SID = "s"
SYSTEM = "You are a careful coding agent."
MARK = "[tool result cleared to save context"
RESERVE = 1_000


def test_clearing_alone_skips_the_summary_and_restores_byte_identically(make_harness) -> None:
    h = make_harness("c", context_compaction=clearing())
    build(h)
    used = limit_just_over(h)
    generation = ok(h.do({"type": "get_context_usage", "session_id": SID}))["checkpoint_generation"]
    first = prepare(h)
    outcome = first["compaction"]
    assert outcome["stage"] == "cleared" and outcome["status"] == "compacted"
    assert outcome["checkpoint_id"] is None and outcome["trigger_reason"] == "auto"
    assert outcome["tool_results_cleared"]["count"] >= 3
    assert outcome["tool_results_cleared"]["tokens_freed"] == outcome["tokens_before"] - outcome["tokens_after"]
    assert outcome["tokens_before"] == used and outcome["tokens_after"] < used * 9 // 10
    assert first["context_generation"] == generation  # clearing does not move it
    assert ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"] == []  # no summary call
    placeholders = [m for m in first["messages"] if m["role"] == "tool" and m["content"].startswith(MARK)]
    assert len(placeholders) == outcome["tool_results_cleared"]["count"]
    [event] = cleared_events(h)
    assert len(event["seqs"]) == len(event["placeholders"]) == len(placeholders)
    assert [m["content"] for m in placeholders] == event["placeholders"]

    # the raw history keeps every byte
    raw = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    by_seq = {m["seq"]: m for m in raw}
    assert all(not by_seq[seq]["content"].startswith(MARK) for seq in event["seqs"])

    again = prepare(h)  # the same process, from the cache
    assert again["compaction"] is None and history(again["messages"]) == history(first["messages"])
    h.reopen()  # a restart: from the read model
    restored = prepare(h)
    assert history(restored["messages"]) == history(first["messages"])
    projection = ok(h.do({"type": "get_projection", "session_id": SID}))["messages"]
    assert history(projection) == history(first["messages"])
    replayed = ok(h.do({"type": "replay_session", "session_id": SID}))["projection"]["messages"]
    assert history(replayed) == history(first["messages"])
    before = ok(h.do({"type": "replay_session", "session_id": SID, "at_version": event["version"] - 1}))
    assert not any(MARK in str(m.get("content")) for m in before["projection"]["messages"])
    _, app = h._db()
    report = verify(app, h.bus.services.read_model)  # rm_cleared is a pure function of the events
    assert report.ok and report.tables["rm_cleared"].live == len(placeholders), report.text()
    h.bus.services.read_model.rebuild()  # a projection like any other
    h.reopen()
    assert history(prepare(h)["messages"]) == history(first["messages"])


