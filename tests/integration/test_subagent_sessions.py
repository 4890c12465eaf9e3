"""Sub-agent sessions and calls still waiting for a result across compactions (issue 42),
``ctxc verify``'s tree check and purge with forks."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from backends import MakeHarness
from harness import Inspect
from helpers import assistant, err, ok, tool, user
from rv_builders import rv_filler
from tree_builders import start as tree_start

BACKENDS = ("memory", "sqlite", "postgres")

SID = "parent"


start = partial(tree_start, name="sub", sid=SID)
filler = partial(rv_filler, sid=SID)


def assert_valid_request(messages: list[dict[str, Any]]) -> None:
    """OpenAI's rule: every tool result answers a call of an earlier assistant message,
    and no result comes without its call."""
    issued: set[str] = set()
    for m in messages:
        if m["role"] == "assistant":
            issued |= {c["id"] for c in m.get("tool_calls") or []}
        if m["role"] == "tool":
            assert m["tool_call_id"] in issued, f"result {m['tool_call_id']} without its call"


def test_a_subagent_result_after_two_parent_compactions_pairs_with_its_call(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("research this"), assistant(None, calls=[("call_sub", "research", "{}")])]}))
    call_seq = 22
    ok(h.do({"type": "start_session", "session_id": "child", "model": "gpt-4o",
             "parent_session_id": SID, "parent_tool_call_id": "call_sub"}))
    ok(h.do({"type": "append_messages", "session_id": "child", "messages": [user("research"), assistant("found it")]}))
    # the parent goes on meanwhile (the user steers), and compacts twice
    filler(h, 2, start=10)
    first = ok(h.do({"type": "compact", "session_id": SID}))
    assert first["status"] == "compacted" and first["first_retained_seq"] < call_seq, first
    filler(h, 8, start=20)
    second = ok(h.do({"type": "compact", "session_id": SID}))
    assert second["status"] == "compacted", second
    assert first["first_retained_seq"] < second["first_retained_seq"] <= call_seq  # the waiting call stays raw
    done = ok(h.do({"type": "complete_subagent", "session_id": "child", "result": "the answer"}))
    assert done["parent_tool_call_id"] == "call_sub" and done["already_answered"] is False
    again = ok(h.do({"type": "complete_subagent", "session_id": "child", "result": "the answer"}))
    assert again["seq"] == done["seq"]  # at most once
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    assert_valid_request(request["messages"])
    assert any(m["role"] == "tool" and m["tool_call_id"] == "call_sub" for m in request["messages"])
    listed = {s["session_id"]: s for s in ok(h.do({"type": "list_sessions"}))["sessions"]}
    assert listed["child"]["parent_session_id"] == SID


def test_a_call_waiting_for_confirmation_survives_compaction(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 2)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("delete the files"), assistant(None, calls=[("call_confirm", "confirm", "{}")])]}))
    filler(h, 8, start=10)
    result = ok(h.do({"type": "compact", "session_id": SID}))
    assert result["first_retained_seq"] <= 6
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [tool("call_confirm", "approved")]}))
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    assert_valid_request(request["messages"])
    contents = [m.get("content") for m in request["messages"]]
    assert "approved" in contents


def test_bad_subagent_links_change_nothing(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    err(h.do({"type": "start_session", "session_id": "c", "model": "gpt-4o",
              "parent_session_id": SID, "parent_tool_call_id": "nope"}), "invalid_command")
    err(h.do({"type": "start_session", "session_id": "c", "model": "gpt-4o",
              "parent_tool_call_id": "nope"}), "invalid_command")
    err(h.do({"type": "start_session", "session_id": "c", "model": "gpt-4o",
              "parent_session_id": "missing"}), "session_not_found")
    err(h.do({"type": "complete_subagent", "session_id": SID, "result": "x"}), "invalid_command")
    assert [s["session_id"] for s in ok(h.do({"type": "list_sessions"}))["sessions"]] == [SID]


def test_the_host_answering_the_call_itself_closes_the_link(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("go"), assistant(None, calls=[("call_1", "agent", "{}")])]}))
    ok(h.do({"type": "start_session", "session_id": "c", "model": "gpt-4o",
             "parent_session_id": SID, "parent_tool_call_id": "call_1"}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [tool("call_1", "done by the host")]}))
    done = ok(h.do({"type": "complete_subagent", "session_id": "c", "result": "late"}))
    assert done["already_answered"] is True and done["seq"] is None
    assert len(ok(h.do({"type": "get_history", "session_id": SID}))["messages"]) == 3


@pytest.mark.backends("sqlite", "postgres")
def test_verify_checks_the_tree_and_purge_refuses_a_parent_with_forks(make_harness: MakeHarness) -> None:
    from context_compaction.domain.session import session_aggregate_id
    from context_compaction.infrastructure.verify import verify

    h = start(make_harness)
    filler(h, 3)
    ok(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "f", "at_version": 4}))
    report = verify(h.inspect.app, h.bus.services.read_model)
    assert report.ok and report.tree == [], report.to_dict()
    err(h.do({"type": "purge_session", "session_id": SID}), "session_has_children")
    assert ok(h.do({"type": "get_history", "session_id": "f"}))["messages"][0]["content"] == "step 0"
    # the parent's events from the fork version on are lost: verify names the fork
    table = h.inspect.app.projector.events_table.qualified
    oid = session_aggregate_id(SID)
    db = h.inspect.db
    with db.write() as cur:
        cur.execute(f"DELETE FROM {table} WHERE originator_id = ? AND originator_version >= ?",
                    (oid if h.is_postgres else oid.hex, 4))
    fresh = h.reopen()
    report = verify(Inspect(fresh).app, fresh.services.read_model)
    assert not report.ok and any("has no version 4" in p for p in report.tree), report.tree
    # purging the fork first, then the parent, is allowed
    ok(h.do({"type": "purge_session", "session_id": "f"}))
