"""Review of issue 42: a fork retried with its command id, and a command id reused."""

from __future__ import annotations

from backends import MakeHarness
from helpers import err, ok, user
from test_session_tree import SID, filler, fork, history, start

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
