"""Review of issue 42: a fork retried with its command id, and a command id reused."""

from __future__ import annotations

from backends import MakeHarness
from helpers import RecordingSummarizer, assistant, err, ok, tool, user
from tree_builders import SID, filler, fork, history, start

BACKENDS = ("memory", "sqlite", "postgres")


def test_a_fork_retried_with_its_command_id_answers_its_first_result(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 3)
    command = {"type": "fork_session", "session_id": SID, "new_session_id": "c", "at_seq": 4,
               "command_id": "cmd-fork-1"}
    first = ok(h.do(command))
    filler(h, 1, start=3)  # the parent moves on; the retry still answers the first fork
    again = ok(h.do(command))
    assert again == first
    assert [m["seq"] for m in history(h, "c")] == [1, 2, 3, 4]


def test_a_fork_command_id_reused_for_another_command_is_a_conflict(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 3)
    fork(h, "c", command_id="cmd-fork-1")
    # the same id for another fork (another child, or another fork point)
    e = err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "d",
                  "command_id": "cmd-fork-1"}), "idempotency_conflict")
    assert e["details"]["command_id"] == "cmd-fork-1"
    err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "c", "at_version": 2,
              "command_id": "cmd-fork-1"}), "idempotency_conflict")
    # an id an append used
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("x")], "command_id": "cmd-app"}))
    err(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "e", "command_id": "cmd-app"}),
        "idempotency_conflict")
    sessions = {s["session_id"] for s in ok(h.do({"type": "list_sessions"}))["sessions"]}
    assert sessions == {SID, "c"}  # nothing was created by a refusal


def test_a_call_never_answered_that_blocks_compaction_is_named_in_the_refusal(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("confirm?"), assistant(None, calls=[("call_confirm", "confirm", "{}")])]}))
    filler(h, 12)
    e = err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert "call_confirm" in e["message"] and "waiting for its result" in e["message"], e
    assert e["details"]["waiting_tool_call_id"] == "call_confirm" and e["details"]["waiting_seq"] == 2
    # once answered (and the kept tail has moved past the late result), it compacts again
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [tool("call_confirm", "yes"), assistant("confirmed")]}))
    filler(h, 12, start=12)
    assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"


def test_info_names_the_calls_still_waiting_for_their_result(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 2)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("confirm?"), assistant(None, calls=[("call_confirm", "confirm", "{}")])]}))
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert info["waiting_tool_calls"] == [{"tool_call_id": "call_confirm", "seq": 6}]
    assert "Waiting tool calls" in info["text"] and "call_confirm" in info["text"]
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [tool("call_confirm", "yes")]}))
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert info["waiting_tool_calls"] == [] and "Waiting tool calls" not in info["text"]


def test_a_fork_of_a_fork_at_a_seq_it_inherited_is_refused_not_given_the_whole_prefix(
    make_harness: MakeHarness,
) -> None:
    h = start(make_harness)
    filler(h, 6)
    fork(h, "b")  # b is born holding seqs 1..12
    filler(h, 2, start=10, sid="b")
    e = err(h.do({"type": "fork_session", "session_id": "b", "new_session_id": "c", "at_seq": 4}),
            "invalid_command")
    assert e["details"] == {"parent_session_id": SID, "fork_seq": 12}
    assert "c" not in {s["session_id"] for s in ok(h.do({"type": "list_sessions"}))["sessions"]}
    # at the fork point itself and after it, and from the parent at 4, it works
    assert fork(h, "c12", sid="b", at_seq=12)["fork_seq"] == 12
    assert fork(h, "c14", sid="b", at_seq=14)["fork_seq"] == 14
    assert [m["seq"] for m in history(h, fork(h, "c4", at_seq=4)["session_id"])] == [1, 2, 3, 4]


def test_a_fork_refuses_a_compaction_that_would_not_shrink_as_a_plain_session_does(make_harness: MakeHarness) -> None:
    # The tree model found a fork whose compaction was refused ("would not shrink"); a
    # plain session holding the same visible messages is refused alike, so the refusal
    # is spec §10.4's, not the fork's. The old part (one leftover user message and one
    # short turn) is as small as the summary block with its fact checklist.
    h = make_harness("tree", adapters={"summarizer": RecordingSummarizer(text="Summary 1.")},
                     context_compaction={"keep_recent_tokens": 60})

    def turns(sid: str, speaker: str, first: int, n: int) -> None:
        for seq in range(first, first + 2 * n, 2):
            ok(h.do({"type": "append_messages", "session_id": sid, "messages": [
                user(f"{speaker} asks {seq}"), assistant(f"{speaker} answers {seq} " + "words " * 30)]}))

    outcomes = []
    for sid, parent in (("forked", "parent"), ("plain", None)):
        ok(h.do({"type": "start_session", "session_id": parent or sid, "model": "gpt-4o"}))
        turns(parent or sid, "s0", 1, 2)
        if parent:
            fork(h, sid, sid=parent)
        ok(h.do({"type": "invalidate_history", "session_id": sid, "kind": "rewind", "to_seq": 1}))
        turns(sid, "s1", 5, 2)
        before = ok(h.do({"type": "get_projection", "session_id": sid}))
        e = err(h.do({"type": "compact", "session_id": sid}), "summary_failed")
        assert "would not shrink" in e["message"], e
        assert e["details"]["tokens_after"] >= e["details"]["tokens_before"], e
        assert ok(h.do({"type": "get_projection", "session_id": sid})) == before  # nothing changed
        outcomes.append(e["details"])
    assert outcomes[0] == outcomes[1]
