"""Pins (issue 16): pinned messages stay verbatim after the summary block."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, ok, tool, user
from rv_builders import RV, rv_session, rv_filler

#: Issue 16's done-when asks for these on SQLite and PostgreSQL; memory:// answers alike
#: (ADR 0045). Tests marked ``backends(...)`` pick their own.
BACKENDS = ("memory", "sqlite", "postgres")

SID = "p"
SUMMARY = "## Goal\nKeep going."


def start(make_harness: MakeHarness, **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 400})
    settings.setdefault("adapters", {"summarizer": RecordingSummarizer(text=SUMMARY)})
    h = make_harness("pins", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def append(h: Harness, *messages: dict) -> list[int]:
    return ok(h.do({"type": "append_messages", "session_id": SID, "messages": list(messages)}))["seqs"]


def filler(h: Harness, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        append(h, user(f"step {i}"), assistant(f"done {i} " + "words " * 40))


def projection(h: Harness) -> list[dict]:
    return ok(h.do({"type": "get_projection", "session_id": SID}))["messages"]


def pin(h: Harness, *seqs: int, kind: str = "pin_messages") -> dict:
    return h.do({"type": kind, "session_id": SID, "seqs": list(seqs)})


def test_pinned_messages_follow_the_summary_verbatim_in_seq_order(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    (a,) = append(h, user("CONSTRAINT: never touch prod-db-1"))
    filler(h, 2)
    (b,) = append(h, user("the API key lives in VAULT_PATH=secret/ci", pinned=True))
    filler(h, 10, start=2)
    assert ok(pin(h, a))["pinned_seqs"] == [a, b]
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["status"] == "compacted" and outcome["first_retained_seq"] > b
    messages = projection(h)
    assert messages[0]["content"].startswith("[Historical conversation summary")
    assert [m["content"] for m in messages[1:3]] == [
        "CONSTRAINT: never touch prod-db-1", "the API key lives in VAULT_PATH=secret/ci"]
    assert not any("prod-db-1" in str(m["content"]) for m in messages[3:])
    usage = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert usage["breakdown"]["pinned"] > 0
    # restart: the identical projection from the stored events
    before = projection(h)
    h.reopen()
    assert projection(h) == before
    # unpin: gone from the projection (the summary stands for it), not from history
    assert ok(pin(h, a, kind="unpin_messages"))["pinned_seqs"] == [b]
    assert [m["content"] for m in projection(h)[1:2]] == ["the API key lives in VAULT_PATH=secret/ci"]
    assert len(ok(h.do({"type": "get_history", "session_id": SID}))["messages"]) == b + 20
    assert ok(h.do({"type": "get_context_usage", "session_id": SID}))["breakdown"]["pinned"] < usage["breakdown"]["pinned"]


def test_a_pin_takes_the_whole_tool_group(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    call = assistant(None, calls=[("c1", "read", '{"path": "a.py"}'), ("c2", "read", '{"path": "b.py"}')])
    seqs = append(h, user("read both"), call, tool("c1", "contents of a"), tool("c2", "contents of b"))
    assert ok(pin(h, seqs[2]))["pinned_seqs"] == seqs[1:]
    assert ok(pin(h, seqs[1], kind="unpin_messages"))["pinned_seqs"] == []
    # pinned at append time: results that arrive later join the pinned group
    (late_call,) = append(h, {**assistant(None, calls=[("c3", "grep", "{}")]), "pinned": True})
    (late_result,) = append(h, tool("c3", "matches"))
    filler(h, 10)
    assert ok(pin(h, seqs[0]))["pinned_seqs"] == [seqs[0], late_call, late_result]
    assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"
    roles = [m["role"] for m in projection(h)[:4]]
    assert roles == ["user", "user", "assistant", "tool"]
    assert projection(h)[2]["tool_calls"][0]["id"] == "c3" and projection(h)[3]["tool_call_id"] == "c3"


def test_unknown_or_invisible_seqs_are_refused_and_change_nothing(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    a, b = append(h, user("one"), user("two"))
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [b]}))
    events = h.events()
    for seqs in ([b], [a, 99], [0], []):
        err(pin(h, *seqs), "invalid_command")
        err(pin(h, *seqs, kind="unpin_messages"), "invalid_command")
    err(h.do({"type": "pin_messages", "session_id": "nobody", "seqs": [1]}), "session_not_found")
    assert h.events() == events
    assert ok(pin(h, a))["pinned_seqs"] == [a]
    version = ok(pin(h, a))["version"]  # again: nothing recorded
    assert h.events() == events + 1 and version == ok(pin(h, a))["version"]
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "clear"}))
    (c,) = append(h, user("three"))
    assert ok(pin(h, c))["pinned_seqs"] == [c]  # the cleared pin went with its message


def test_pins_that_alone_break_the_budget_are_fixed_context_exceeds_budget(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    ok(h.do({"type": "configure_session", "session_id": SID, "agent_token_limit": 4_000}))
    big = append(h, user("pinned " + "payload " * 2_500, pinned=True))
    filler(h, 12)
    events = h.events()
    for command in ({"type": "compact", "session_id": SID},
                    {"type": "prepare_turn", "session_id": SID, "system_prompt": "be brief"}):
        error = err(h.do(command), "fixed_context_exceeds_budget")
        assert error["details"]["breakdown"]["pinned"] >= 2_500
        assert error["details"]["fixed_tokens"] >= error["details"]["threshold"]
    assert h.events() == events
    assert ok(pin(h, *big, kind="unpin_messages"))["pinned_seqs"] == []
    assert ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": "be brief"}))["request_id"]


def test_replay_shows_the_pin_events(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    (a,) = append(h, user("keep me"))
    filler(h, 10)
    ok(h.do({"type": "compact", "session_id": SID}))
    pinned_at = ok(pin(h, a))["version"]
    unpinned_at = ok(pin(h, a, kind="unpin_messages"))["version"]

    def replay(version: int) -> list[dict]:
        return ok(h.do({"type": "replay_session", "session_id": SID, "at_version": version}))["projection"]["messages"]

    assert replay(pinned_at - 1)[1]["content"] != "keep me"
    assert replay(pinned_at)[1]["content"] == "keep me"
    assert replay(unpinned_at)[1]["content"] != "keep me"
    assert topics(h)[pinned_at - 1:unpinned_at] == [
        "context_compaction:Session.MessagesPinned", "context_compaction:Session.MessagesUnpinned"]


def topics(h: Harness) -> list[str]:
    return [topic for _, topic, _ in h.stored_events("context_compaction:Session.")]


def test_deleting_a_pinned_message_ends_its_pin(make_harness: MakeHarness) -> None:
    # ADR 0033: an invalidated message is no longer pinned, so nothing is left to unpin.
    h = start(make_harness)
    (a,) = append(h, user("pin me"))
    (b,) = append(h, user("and me"))
    assert ok(pin(h, a, b))["pinned_seqs"] == [a, b]
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [a]}))
    assert ok(pin(h, b))["pinned_seqs"] == [b]
    err(pin(h, a, kind="unpin_messages"), "invalid_command")
    assert ok(pin(h, b, kind="unpin_messages"))["pinned_seqs"] == []
    h.close()


# Pins near or under the compaction threshold, and a pinned message is not reported as compacted.
def pinned_session(make_harness: MakeHarness, pin_words: int) -> Harness:
    h = make_harness("pins", summarizer="extractive", models={"gpt-4o": {"token_limit": 9_000}},
                     context_compaction={"keep_recent_tokens": 1500, "reserve_tokens": 2000})
    ok(h.do({"type": "start_session", "session_id": RV, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": RV,
             "messages": [user("pinned " + "alpha " * pin_words, pinned=True)]}))
    return h


def turns(h: Harness, n: int) -> list[dict]:
    prepared = []
    for i in range(n):
        ok(h.do({"type": "append_messages", "session_id": RV,
                 "messages": [user(f"step {i}"), assistant(f"done {i} " + "words " * 60)]}))
        prepared.append(ok(h.do({"type": "prepare_turn", "session_id": RV, "system_prompt": "sys", "tools": []})))
    return prepared


@pytest.mark.backends("sqlite")
def test_pins_under_the_threshold_leave_room_for_a_summary(make_harness: MakeHarness) -> None:
    # 5,200 pinned tokens under a 7,000-token threshold: the kept tail must make room
    # for them (they were planned as history, so no compaction ever fit)
    h = pinned_session(make_harness, 5_200)
    done = [t["compaction"] for t in turns(h, 40) if t["compaction"]]
    assert done and done[0]["status"] == "compacted" and not done[0]["degraded"]
    usage = ok(h.do({"type": "get_context_usage", "session_id": RV}))
    assert usage["breakdown"]["pinned"] >= 5_200 and usage["used_tokens"] <= usage["compression_threshold_tokens"]


@pytest.mark.backends("sqlite")
def test_pins_near_the_threshold_never_leave_the_session_stuck(make_harness: MakeHarness) -> None:
    # (before: every compaction failed and then the overflow trim planned the pinned
    # tokens as history, "trimming would not shrink the request": overflow_retry_exhausted)
    h = pinned_session(make_harness, 6_000)
    prepared = turns(h, 45)
    usage = ok(h.do({"type": "get_context_usage", "session_id": RV}))
    assert usage["breakdown"]["pinned"] >= 6_000 and usage["used_tokens"] <= usage["effective_window_tokens"]
    assert prepared[-1]["usage"]["used_tokens"] <= 9_000


@pytest.mark.backends("sqlite", "postgres")
def test_a_pinned_message_is_not_reported_as_compacted(make_harness: MakeHarness) -> None:
    h = rv_session(make_harness, adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")})
    ok(h.do({"type": "append_messages", "session_id": RV,
             "messages": [user("the canary word is bluefinch", pinned=True), user("and the other is redwing")]}))
    rv_filler(h, 10)
    ok(h.do({"type": "compact", "session_id": RV}))
    hits = ok(h.do({"type": "search_history", "session_id": RV, "query": "bluefinch"}))["hits"]
    assert [(hit["seq"], hit["compacted"]) for hit in hits] == [(1, False)]  # verbatim in the projection
    hits = ok(h.do({"type": "search_history", "session_id": RV, "query": "redwing"}))["hits"]
    assert [(hit["seq"], hit["compacted"]) for hit in hits] == [(2, True)]
