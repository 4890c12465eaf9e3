"""The compaction service: manual /compact, commit semantics, restore, Timeline (issue 3).

Spec §11.1, §12, §13, §14, §20.3-§20.4.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from context_compaction.domain.projection import SUMMARY_HEADER
from context_compaction.infrastructure.demo.scenario import coding_session
from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, err, fingerprint, ok, user
from compaction_builders import SID, add_turns, compact, history, make, projection, turns

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)


# ----------------------------------------------------------------- manual
def test_manual_compact_forces_below_the_threshold_and_reports(make_harness: MakeHarness, turns) -> None:
    h = make(make_harness, context_compaction={"keep_recent_tokens": 3000, "enabled": False})
    add_turns(h, turns)
    usage = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert usage["used_tokens"] < usage["compression_threshold_tokens"]  # far below: still compacts
    raw_before = history(h)
    outcome = compact(h)
    assert outcome["status"] == "compacted"
    lines = outcome["report"].splitlines()
    assert lines[0] == f"Context compacted: {outcome['tokens_before']:,} -> {outcome['tokens_after']:,} tokens"
    assert lines[1] == f"Kept {outcome['kept_turns']} recent turn{'s' if outcome['kept_turns'] != 1 else ''} " \
                       f"from message seq {outcome['first_retained_seq']}"
    assert lines[2] == "Raw history unchanged"
    assert outcome["tokens_after"] < outcome["tokens_before"]
    assert history(h) == raw_before  # acceptance 3: raw history, ids and seqs unchanged
    p = projection(h)
    assert p["checkpoint_id"] == outcome["checkpoint_id"]
    assert p["messages"][0]["content"].startswith(SUMMARY_HEADER)
    assert p["first_raw_seq"] == outcome["first_retained_seq"]
    h.close()


def test_nothing_to_compact_changes_nothing(make_harness: MakeHarness, turns) -> None:
    h = make(make_harness)
    add_turns(h, turns[:1])
    before = fingerprint(h.bus)
    outcome = compact(h)
    assert outcome["status"] == "nothing_to_compact"
    assert outcome["report"] == "Nothing to compact"
    assert fingerprint(h.bus) == before
    h.close()


def test_summary_and_tail_never_overlap_and_seqs_continue(make_harness: MakeHarness, turns) -> None:
    spy = RecordingSummarizer()
    h = make(make_harness, spy)
    add_turns(h, turns)
    outcome = compact(h)
    source = spy.requests[0].source
    assert source.last_seq == outcome["first_retained_seq"] - 1
    assert source.first_seq == 1
    p = projection(h)
    tail_seqs = [m["seq"] for m in history(h) if m["seq"] >= p["first_raw_seq"]]
    assert p["first_raw_seq"] == outcome["first_retained_seq"]
    assert len(p["messages"]) == 1 + len(tail_seqs)
    last = history(h)[-1]["seq"]
    seqs = ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("next")]}))["seqs"]
    assert seqs == [last + 1]
    h.close()


def test_repeated_compaction_sends_the_previous_summary_and_only_the_new_range(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer()
    h = make(make_harness, spy)
    script = coding_session(14, big_output_chars=3_000)
    add_turns(h, script[:8])
    first = compact(h)
    add_turns(h, script[8:])
    second = compact(h)
    assert second["status"] == "compacted"
    assert second["first_retained_seq"] > first["first_retained_seq"]
    request = spy.requests[1]
    summary_one = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]["summary"]
    assert request.source.previous_summary == summary_one
    assert request.source.first_seq == first["first_retained_seq"]
    assert request.source.last_seq == second["first_retained_seq"] - 1
    assert all(e.seq >= first["first_retained_seq"] for e in request.source.entries)
    assert "<previous_summary>" in request.prompt[1]["content"]
    cps = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert cps[1]["parent_checkpoint_id"] == cps[0]["checkpoint_id"]
    assert [cp["active"] for cp in cps] == [False, True]
    h.close()


def test_checkpoints_list_every_field_of_the_spec(make_harness: MakeHarness, turns) -> None:
    h = make(make_harness)
    add_turns(h, turns)
    compact(h)
    cp = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]
    for name in ("id", "session_id", "generation", "parent_checkpoint_id", "summary", "first_retained_seq",
                 "source_max_seq", "trigger_reason", "provider_kind", "model", "tokens_before",
                 "tokens_after", "degraded", "created_at", "summary_source"):
        assert name in cp, name
    assert cp["trigger_reason"] == "manual" and cp["provider_kind"] == "extractive"
    assert cp["generation"] == 1 and cp["degraded"] is False
    assert cp["source_max_seq"] == history(h)[-1]["seq"]
    assert set(cp["summary_source"]) >= {"source_messages", "omitted_messages", "truncated_messages", "strategy"}
    h.close()


def test_a_failed_summary_keeps_the_old_checkpoint_and_emits_nothing(make_harness: MakeHarness, turns) -> None:
    h = make(make_harness)
    add_turns(h, turns[:5])
    compact(h)
    add_turns(h, turns[5:])
    live = projection(h)
    events = h.events()
    h.close()
    h2 = make_harness("c", adapters={"summarizer": RecordingSummarizer(fail=True)},
                      context_compaction={"keep_recent_tokens": 3000})
    err(h2.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert h2.events() == events
    assert projection(h2) == live
    h2.close()


def test_a_summary_that_would_not_shrink_the_context_is_refused(make_harness: MakeHarness, turns) -> None:
    bloated = "## Objective\n" + "word " * 1000
    h = make(make_harness, RecordingSummarizer(text=bloated), context_compaction={"keep_recent_tokens": 10})
    for n in range(3):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"question {n}: " + "more words " * 60, turn_id=f"t{n}"),
            {"role": "assistant", "content": "short answer", "turn_id": f"t{n}"}]}))
    events = h.events()
    e = err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert "would not shrink" in e["message"]
    assert h.events() == events
    too_long = "## Objective\n" + "word " * 3000  # over the 2,048-token output reserve
    h2 = make(make_harness, name="b", summarizer=RecordingSummarizer(text=too_long))
    add_turns(h2, turns)
    e = err(h2.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert "over its 2,048 limit" in e["message"]
    h2.close()
    h.close()


# ---------------------------------------------------------- concurrency

def test_a_history_smaller_than_the_summary_block_is_nothing_to_compact_without_a_summary_call(
    make_harness: MakeHarness,
) -> None:
    # The summary block alone outweighs two short turns: no summary can shrink the request,
    # so none is asked for (before: one call, then "would not shrink").
    summarizer = RecordingSummarizer()
    h = make(make_harness, summarizer, context_compaction={"keep_recent_tokens": 10})
    for n in range(3):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"short question {n}", turn_id=f"t{n}"),
            {"role": "assistant", "content": "short answer", "turn_id": f"t{n}"}]}))
    events = h.events()
    got = ok(h.do({"type": "compact", "session_id": SID}))
    assert got["status"] == "nothing_to_compact", got
    assert "as large as the part it replaces" in got["report"]
    assert summarizer.requests == []
    assert h.events() == events
    h.close()

def test_an_append_during_a_slow_summary_survives_into_the_tail(make_harness: MakeHarness, turns) -> None:
    spy = RecordingSummarizer()
    spy.release = threading.Event()
    h = make(make_harness, spy)
    add_turns(h, turns)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(compact(h)))
    worker.start()
    assert spy.entered.wait(10)
    other = h.new_bus()  # another writer, e.g. the next turn arriving
    late = other.dispatch_json({"type": "append_messages", "session_id": SID,
                                "messages": [user("arrived while summarizing")]})
    assert late["ok"]
    spy.release.set()
    worker.join(10)
    assert result["status"] == "compacted"  # an append is not a reason to discard
    p = projection(h)
    assert p["messages"][-1]["content"] == "arrived while summarizing"
    assert p["max_raw_seq"] == late["result"]["seqs"][0]
    h.reopen()
    assert projection(h)["messages"][-1]["content"] == "arrived while summarizing"
    h.close()


def test_a_clear_during_the_summary_makes_the_commit_stale(make_harness: MakeHarness, turns) -> None:
    spy = RecordingSummarizer()
    spy.release = threading.Event()
    h = make(make_harness, spy)
    add_turns(h, turns)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(h.do({"type": "compact", "session_id": SID})))
    worker.start()
    assert spy.entered.wait(10)
    other = h.new_bus()
    assert other.dispatch_json({"type": "invalidate_history", "session_id": SID, "kind": "clear"})["ok"]
    events = h.events()
    spy.release.set()
    worker.join(10)
    assert result["ok"] is False and result["error"]["code"] == "stale_candidate"
    assert h.events() == events
    assert ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"] == []
    assert projection(h)["messages"] == []
    h.close()


# ---------------------------------------------------------- restore
def test_restore_is_byte_identical_and_calls_no_summarizer(make_harness: MakeHarness, turns) -> None:
    spy = RecordingSummarizer()
    h = make(make_harness, spy)
    add_turns(h, turns)
    compact(h)
    add_turns(h, coding_session(10, big_output_chars=3_000)[8:], sid=SID)
    live = projection(h)
    calls = len(spy.requests)
    timeline_rows = h.count("rm_timeline")
    events = h.events()
    h.reopen()
    restored = projection(h)
    assert json.dumps(restored, sort_keys=True) == json.dumps(live, sort_keys=True)
    assert len(spy.requests) == calls  # restore never summarizes
    assert h.count("rm_timeline") == timeline_rows  # nor writes Timeline
    assert h.events() == events  # nor anything else
    h.close()


# ---------------------------------------------------------- timeline
def test_each_checkpoint_gets_one_timeline_entry(make_harness: MakeHarness) -> None:
    h = make(make_harness)
    script = coding_session(14, big_output_chars=3_000)
    add_turns(h, script[:8])
    one = compact(h)
    add_turns(h, script[8:])
    two = compact(h)
    entries = ok(h.do({"type": "recall_timeline", "session_id": SID}))["entries"]
    assert [e["key"] for e in entries] == [f"context_checkpoint:{two['checkpoint_id']}",
                                          f"context_checkpoint:{one['checkpoint_id']}"]
    cps = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert entries[1]["content"] == cps[0]["summary"]
    hits = ok(h.do({"type": "recall_timeline", "session_id": SID, "query": "OBJECTIVE"}))["entries"]
    assert len(hits) == 2
    assert ok(h.do({"type": "recall_timeline", "session_id": SID, "query": "no such 100%_x"}))["entries"] == []
    h.close()


class BrokenTimeline:
    def __init__(self) -> None:
        self.attempts = 0

    def put(self, entry) -> None:
        self.attempts += 1
        raise RuntimeError("timeline store is down")

    def entries(self, session_id, query=None, limit=20):
        return []


def test_a_failing_timeline_never_rolls_the_checkpoint_back(make_harness: MakeHarness, turns, caplog) -> None:
    broken = BrokenTimeline()
    h = make_harness("c", adapters={"timeline": broken}, context_compaction={"keep_recent_tokens": 3000})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    add_turns(h, turns)
    with caplog.at_level(logging.WARNING, logger="context_compaction"):
        outcome = compact(h)
    assert outcome["status"] == "compacted" and broken.attempts == 1
    assert projection(h)["checkpoint_id"] == outcome["checkpoint_id"]
    assert any("after-checkpoint hook failed" in r.getMessage() for r in caplog.records)
    h.close()
    # Once the store works again, the follower catches up on the missed checkpoint.
    h2 = make_harness("c")
    entries = ok(h2.do({"type": "recall_timeline", "session_id": SID}))["entries"]
    assert [e["checkpoint_id"] for e in entries] == [outcome["checkpoint_id"]]
    h2.close()


# ---------------------------------------------------------- /info
def test_context_usage_has_every_spec_field_and_the_text_form(make_harness: MakeHarness, turns) -> None:
    h = make(make_harness)
    add_turns(h, turns)
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                               "parameters": {"type": "object", "properties": {}}}}]
    before = ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": "You are careful.",
                      "tools": tools, "knowledge": "Repo uses pytest.", "active_plan": "1. fix"}))
    for name in ("configured_window_tokens", "effective_window_tokens", "configured_reserve_tokens",
                 "reserve_tokens", "configured_keep_recent_tokens", "effective_keep_recent_tokens",
                 "compression_threshold_tokens", "used_tokens", "remaining_tokens", "usage_source",
                 "active_checkpoint_id", "checkpoint_generation", "checkpoint_tokens_before",
                 "checkpoint_tokens_after", "checkpoint_degraded", "breakdown", "text"):
        assert name in before, name
    assert before["effective_window_tokens"] == 128_000
    assert before["compression_threshold_tokens"] == 111_616
    assert before["used_tokens"] == sum(before["breakdown"].values())
    assert all(before["breakdown"][k] > 0 for k in ("system", "tools", "knowledge", "plan", "history"))
    assert "Compaction threshold  111,616" in before["text"]
    assert "Reserve               16,384" in before["text"]
    assert before["active_checkpoint_id"] is None
    outcome = compact(h)
    after = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert after["active_checkpoint_id"] == outcome["checkpoint_id"]
    assert after["checkpoint_tokens_before"] == outcome["tokens_before"]
    assert after["checkpoint_tokens_after"] == outcome["tokens_after"]
    assert after["breakdown"]["summary"] > 0
    assert f"{outcome['tokens_before']:,} -> {outcome['tokens_after']:,}" in after["text"]
    h.close()


def test_a_small_window_bounds_the_summary_input_and_records_what_was_left_out(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer()
    h = make(make_harness, spy, models={"gpt-4o": {"token_limit": 8_192}},
             context_compaction={"keep_recent_tokens": 20000})
    add_turns(h, coding_session(14, big_output_chars=2_000))
    outcome = compact(h)
    assert outcome["status"] == "compacted"
    request = spy.requests[0]
    source = request.source
    budget_tokens = 8_192 - min(2048, 8_192 // 4) - min(512, 8_192 // 16)
    assert source.tokens <= budget_tokens
    assert source.omitted_messages > 0 and outcome["summary_source"]["omitted_messages"] > 0
    assert request.max_output_tokens == 2048
    assert outcome["kept_turns"] >= 1
    h.close()


def test_a_large_window_is_not_capped_at_32k(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer()
    h = make(make_harness, spy, models={"gpt-4o": {"token_limit": 128_000}},
             context_compaction={"keep_recent_tokens": 2000})
    add_turns(h, coding_session(40, big_output_chars=8_000))
    compact(h)
    source = spy.requests[0].source
    assert source.tokens > 32_000
    assert source.omitted_messages == 0
    h.close()


