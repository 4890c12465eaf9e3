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
from context_compaction.application.compacting.prepare import record_counts
from context_compaction.application.compacting.staged import clear_tool_results
from context_compaction.application.runtime.turncontext import prepare_context
from context_compaction.domain.cutpoint import plan_cut
from context_compaction.domain.errors import InvalidCommand
from context_compaction.domain.session import Session
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.verify import verify
from helpers import Harness, ok, user
from staged_builders import RESERVE, SID, build, cleared_events, clearing, limit_just_over, prepare

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

MARK = "[tool result cleared to save context"


def test_protected_tools_and_the_newest_turn_are_never_cleared_and_groups_stay_valid(make_harness) -> None:
    h = make_harness("p", context_compaction=clearing(protected_tools=["run_tests", "read_file"]))
    names = build(h, turns=8)
    limit_just_over(h)
    result = prepare(h)
    assert result["compaction"]["stage"] in ("cleared", "summarized")
    messages = result["messages"]
    cleared = [m for m in messages if m["role"] == "tool" and m["content"].startswith(MARK)]
    assert cleared, "something unprotected was cleared"
    for m in cleared:
        assert names[m["tool_call_id"]] not in ("run_tests", "read_file")
        assert f"{names[m['tool_call_id']]} output of" in m["content"]
    # every tool result directly answers a call of the assistant before its group
    open_ids: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_ids
            open_ids.discard(m["tool_call_id"])
        elif m["role"] == "assistant":
            assert not open_ids
            open_ids = {c["id"] for c in m.get("tool_calls") or []}
    raw = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    protected = {m["seq"] for m in raw if m["role"] == "tool" and names[m["tool_call_id"]] in ("run_tests", "read_file")}
    event_seqs = {s for e in cleared_events(h) for s in e["seqs"]}
    assert protected and not protected & event_seqs


def test_when_clearing_is_not_enough_the_summary_runs_on_the_cleared_context(make_harness) -> None:
    h = make_harness("n", context_compaction=clearing(clear_at_least_tokens=10**9))
    build(h)
    limit_just_over(h)
    outcome = prepare(h)["compaction"]
    assert outcome["stage"] == "summarized" and outcome["checkpoint_id"]
    assert outcome["tool_results_cleared"]["count"] > 0
    assert len(cleared_events(h)) == 1


def test_clearing_off_records_nothing_and_summarizes_as_before(make_harness) -> None:
    h = make_harness("o", context_compaction={"reserve_tokens": RESERVE, "keep_recent_tokens": 2_000})
    build(h)
    limit_just_over(h)
    result = prepare(h)
    outcome = result["compaction"]
    assert outcome["stage"] == "summarized" and outcome["tool_results_cleared"] is None
    assert cleared_events(h) == []
    assert not any(MARK in str(m.get("content")) for m in result["messages"])


def test_a_summary_in_flight_stays_valid_across_a_clearing(make_harness) -> None:
    h = make_harness("f", context_compaction=clearing())
    build(h)
    limit_just_over(h, below=-20_000)  # under the threshold: nothing automatic
    svc = h.bus.services
    turn = prepare_context(svc, SID)
    plan = plan_cut(turn.records, record_counts(turn), keep_tokens=turn.budget.keep,
                    previous_first_retained=None)
    candidate = summarize_candidate(svc, turn, plan, "manual")  # made before the clearing...
    cleared = clear_tool_results(svc, prepare_context(svc, SID), reason="manual")
    assert cleared is not None and cleared.outcome.tool_results_cleared.count > 0
    outcome = commit_candidate(svc, candidate)  # ...and still committed after it
    assert outcome.status == "compacted" and outcome.generation == turn.ctx.session.context_generation + 1
    after = ok(h.do({"type": "get_projection", "session_id": SID}))
    assert after["checkpoint_id"] == outcome.checkpoint_id


def test_the_aggregate_refuses_a_clearing_of_anything_but_a_visible_tool_result() -> None:
    s = Session.start("x", "gpt-4o", None, "t")
    from context_compaction.domain.messages import Message

    s.append_messages([Message.model_validate(user("hi"))], command_id=None, created_at="t")
    s.collect_events()
    for seqs, texts, freed in (([1], ["p"], 1), ([], [], 0), ([1], [], 1), ([9], ["p"], 1)):
        with pytest.raises(InvalidCommand):
            s.clear_tool_results(seqs=seqs, placeholders=texts, tokens_freed=freed, created_at="t")
    assert s.collect_events() == []


def test_a_pinned_tool_result_is_never_cleared(make_harness) -> None:
    h = make_harness("pin", context_compaction=clearing())
    build(h)
    raw = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    # the biggest result of the older half: far outside the keep window, cleared unless pinned
    biggest = max((m for m in raw[: len(raw) // 2] if m["role"] == "tool"), key=lambda m: len(m["content"]))
    ok(h.do({"type": "pin_messages", "session_id": SID, "seqs": [biggest["seq"]]}))
    limit_just_over(h)
    result = prepare(h)
    assert result["compaction"]["tool_results_cleared"]["count"] > 0
    assert biggest["seq"] not in {s for e in cleared_events(h) for s in e["seqs"]}
    shown = [m for m in result["messages"] if m.get("tool_call_id") == biggest["tool_call_id"]]
    assert shown and shown[0]["content"] == biggest["content"]
