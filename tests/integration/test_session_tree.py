"""Sessions as a tree (issue 42): forks at any version, forks of forks, sub-agents."""

from __future__ import annotations

import json

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, ok, user
from tree_builders import SID, filler, fork, history, start

BACKENDS = ("memory", "sqlite", "postgres")


def compact(h: Harness, sid: str = SID) -> dict:
    return ok(h.do({"type": "compact", "session_id": sid}))


def projection(h: Harness, sid: str) -> dict:
    return ok(h.do({"type": "get_projection", "session_id": sid}))


def canon(value: dict) -> str:
    return json.dumps(value, sort_keys=True)


def test_a_fork_now_has_the_parents_context_and_history_and_then_its_own(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 6)
    before = projection(h, SID)
    result = fork(h, "c")
    assert result["parent_session_id"] == SID and result["fork_seq"] == 12
    assert projection(h, "c")["messages"] == before["messages"]
    assert history(h, "c") == history(h, SID)
    filler(h, 2, sid="c")
    seqs = [m["seq"] for m in history(h, "c")]
    assert seqs == list(range(1, 17))  # the child's seqs continue after the fork point
    assert [m["seq"] for m in history(h, SID)] == list(range(1, 13))
    info = ok(h.do({"type": "list_sessions"}))
    by_id = {s["session_id"]: s for s in info["sessions"]}
    assert by_id["c"]["parent_session_id"] == SID and by_id[SID]["parent_session_id"] is None


def test_fork_before_between_and_after_compactions(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    v0 = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    raw_projection = projection(h, SID)
    first = compact(h)
    at_first = projection(h, SID)
    filler(h, 10, start=10)
    second = compact(h)
    at_second = projection(h, SID)
    assert first["checkpoint_id"] != second["checkpoint_id"]
    versions = {m["seq"]: m for m in history(h, SID)}
    assert len(versions) == 40 and v0
    # before the first compaction: raw history (by seq: right after seq 20 was appended)
    fork(h, "before", at_seq=20)
    assert projection(h, "before")["messages"] == raw_projection["messages"]
    assert projection(h, "before")["checkpoint_id"] is None
    # between the two: the first checkpoint, not the later summary
    listed = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    fork(h, "between", at_version=listed[0]["version"])
    got = projection(h, "between")
    assert got["checkpoint_id"] == first["checkpoint_id"] and got["messages"] == at_first["messages"]
    # after both: the second
    fork(h, "after")
    assert projection(h, "after")["messages"] == at_second["messages"]


def test_compacting_one_never_changes_the_other(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    fork(h, "c")
    parent_before = canon(projection(h, SID))
    filler(h, 10, sid="c")
    compact(h, "c")
    ok(h.do({"type": "pin_messages", "session_id": "c", "seqs": [1]}))
    ok(h.do({"type": "invalidate_history", "session_id": "c", "kind": "delete", "seqs": [3, 4]}))
    assert canon(projection(h, SID)) == parent_before
    child_before = canon(projection(h, "c"))
    filler(h, 10, start=10)
    compact(h)
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "clear"}))
    ok(h.do({"type": "delete_session", "session_id": SID}))
    assert canon(projection(h, "c")) == child_before
    assert [m["seq"] for m in history(h, "c", invalidated=False)][:3] == [1, 2, 5]


def test_forks_of_forks_read_through_every_ancestor(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 4)
    fork(h, "b")
    filler(h, 4, sid="b")
    compact(h, "b")
    fork(h, "c", sid="b")
    filler(h, 2, sid="c")
    want = history(h, "b") + history(h, "c")[16:]
    assert history(h, "c") == want and [m["seq"] for m in want] == list(range(1, 21))
    assert projection(h, "c")["checkpoint_id"] == projection(h, "b")["checkpoint_id"]
    hits = ok(h.do({"type": "search_history", "session_id": "c", "query": "p step 1"}))["hits"]
    assert any(hit["seq"] == 3 for hit in hits)
    tree = ok(h.do({"type": "list_sessions", "tree": True}))["tree"]
    assert [n["session"]["session_id"] for n in tree] == [SID]
    assert tree[0]["children"][0]["session"]["session_id"] == "b"
    assert tree[0]["children"][0]["children"][0]["session"]["session_id"] == "c"


def test_rewind_before_the_checkpoint_gives_raw_history_back(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    checkpoint = compact(h)
    assert checkpoint["first_retained_seq"] > 6
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 6}))
    got = projection(h, SID)
    assert got["checkpoint_id"] is None
    assert [m["content"] for m in got["messages"]] == [m["content"] for m in history(h, SID)[:6]]


def test_bad_forks_change_nothing(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 2)
    assert err(h.do({"type": "fork_session", "session_id": "nope", "new_session_id": "x"}), "session_not_found")
    assert err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": SID}), "invalid_command")
    assert err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "x", "at_seq": 9}), "invalid_command")
    assert err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "x", "at_version": 99}), "invalid_command")
    assert err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "x", "at_version": 1, "at_seq": 1}), "invalid_command")
    fork(h, "x")
    assert err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "x"}), "session_exists")
    assert [s["session_id"] for s in ok(h.do({"type": "list_sessions"}))["sessions"]] == [SID, "x"]


def test_read_events_entries_carry_the_parent(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 1)
    fork(h, "c")
    filler(h, 1, sid="c")
    events = ok(h.do({"type": "read_events", "limit": 100}))["events"]
    parents = {e["session_id"]: e["parent_session_id"] for e in events}
    assert parents == {SID: None, "c": SID}
    started = [e for e in events if e["session_id"] == "c" and e["type"] == "Started"][0]
    assert started["payload"]["parent"]["fork_seq"] == 2


def test_info_rolls_up_the_childrens_tokens(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 2)
    fork(h, "c")
    filler(h, 1, sid="c")
    fork(h, "d", sid="c")
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    c_info = ok(h.do({"type": "get_context_usage", "session_id": "c"}))
    d_info = ok(h.do({"type": "get_context_usage", "session_id": "d"}))
    assert [child["session_id"] for child in info["children"]] == ["c"]
    assert info["children_tokens"] == c_info["used_tokens"] + d_info["used_tokens"] > 0
    assert "Children" in info["text"]
