"""The session core: seqs, raw history, idempotency, restore, replay, rebuild (issue 2)."""

from __future__ import annotations

import threading

import pytest

from context_compaction import ContextCompactionError, commands
from helpers import Harness, assistant, err, fingerprint, ok, tool, user
from session_core_builders import append, coding_turn, history, projection, start

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)


# ------------------------------------------------------------------ seqs
def test_seqs_start_at_one_and_increase_strictly(harness: Harness) -> None:
    start(harness)
    assert append(harness, "s1", user("a"), user("b")) == [1, 2]
    assert append(harness, "s1", *coding_turn(1)) == [3, 4, 5, 6, 7]


def test_seqs_are_never_reused_after_clear_or_rewind(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1))
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "clear"}))
    assert append(harness, "s1", user("after clear")) == [6]
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "rewind", "to_seq": 2}))
    assert append(harness, "s1", user("after rewind")) == [7]
    seqs = [m["seq"] for m in history(harness)]
    assert seqs == list(range(1, 8))


def test_raw_history_never_changes_after_invalidation(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1), *coding_turn(2))
    before = history(harness)
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "delete", "seqs": [6]}))
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "rewind", "to_seq": 8}))
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "clear"}))
    after = history(harness)
    strip = lambda ms: [{k: v for k, v in m.items() if k != "invalidated"} for m in ms]  # noqa: E731
    assert strip(after) == strip(before)
    assert all(m["invalidated"] for m in after)
    assert projection(harness)["messages"] == []


def test_invalidation_bumps_generation_and_is_visible_in_projection(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1), *coding_turn(2))
    result = ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "rewind", "to_seq": 5}))
    assert result["context_generation"] == 1
    assert result["excluded_seqs"] == [[6, 10]]
    p = projection(harness)
    assert p["context_generation"] == 1
    assert p["max_raw_seq"] == 5
    assert [m["role"] for m in p["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]


def test_delete_of_part_of_a_tool_group_is_refused_or_takes_the_whole_group(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1))
    before = fingerprint(harness.bus)
    e = err(
        harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "delete", "seqs": [3]}),
        "invalid_message",
    )
    assert e["details"]["tool_group_seqs"] == [2, 3, 4]
    assert fingerprint(harness.bus) == before
    r = ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "delete", "seqs": [3],
                        "expand_tool_groups": True}))
    assert r["excluded_seqs"] == [[2, 4]]
    roles = [m["role"] for m in projection(harness)["messages"]]
    assert roles == ["user", "assistant"]


# ----------------------------------------------------------- idempotency
def test_append_is_idempotent_on_command_id(harness: Harness) -> None:
    start(harness)
    first = ok(harness.do({"type": "append_messages", "session_id": "s1", "command_id": "turn-1",
                            "messages": coding_turn(1)}))
    events = harness.events()
    again = ok(harness.do({"type": "append_messages", "session_id": "s1", "command_id": "turn-1",
                            "messages": coding_turn(1)}))
    assert again["seqs"] == first["seqs"] == [1, 2, 3, 4, 5]
    assert again["duplicate"] is True and first["duplicate"] is False
    assert harness.events() == events
    assert len(history(harness)) == 5


def test_idempotency_outlives_the_aggregates_command_window(harness: Harness) -> None:
    from context_compaction.domain.session_state import COMMAND_WINDOW

    start(harness)
    first = append(harness, "s1", user("first"), command_id="old")
    bus = harness.bus
    for i in range(COMMAND_WINDOW + 5):
        bus.dispatch(commands.AppendMessages(session_id="s1", command_id=f"c{i}",
                                             messages=[{"role": "user", "content": "x"}]))
    assert append(harness, "s1", user("first"), command_id="old") == first
    assert len(history(harness)) == COMMAND_WINDOW + 6


# -------------------------------------------------------------- restore


# --------------------------------------------------------------- replay
def test_replay_at_each_version_equals_the_projection_that_was_live_then(harness: Harness) -> None:
    start(harness)
    live: dict[int, dict] = {}

    def record() -> None:
        p = projection(harness)
        live[p["version"]] = p

    for n in range(3):
        append(harness, "s1", *coding_turn(n))
        record()
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "rewind", "to_seq": 7}))
    record()
    append(harness, "s1", user("again"))
    record()
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "clear"}))
    record()
    for version, then in live.items():
        replay = ok(harness.do({"type": "replay_session", "session_id": "s1", "at_version": version}))
        assert replay["version"] == version
        assert replay["projection"] == then


def test_replay_beyond_the_current_version_is_refused(harness: Harness) -> None:
    start(harness)
    err(harness.do({"type": "replay_session", "session_id": "s1", "at_version": 99}), "invalid_command")


# -------------------------------------------------------------- rebuild


# ---------------------------------------------------------- concurrency


# --------------------------------------------------------------- errors
def test_every_error_changes_nothing(harness: Harness) -> None:
    start(harness)
    start(harness, "gone")
    append(harness, "s1", *coding_turn(1))
    ok(harness.do({"type": "delete_session", "session_id": "gone"}))
    cases = [
        ({"type": "start_session", "session_id": "s1", "model": "gpt-4o"}, "session_exists"),
        ({"type": "start_session", "session_id": "", "model": "gpt-4o"}, "invalid_command"),
        ({"type": "start_session", "session_id": "x", "model": "m", "bogus": 1}, "invalid_command"),
        ({"type": "append_messages", "session_id": "nope", "messages": [user("a")]}, "session_not_found"),
        ({"type": "append_messages", "session_id": "gone", "messages": [user("a")]}, "session_deleted"),
        ({"type": "append_messages", "session_id": "s1", "messages": []}, "invalid_command"),
        ({"type": "append_messages", "session_id": "s1", "messages": [{"role": "robot", "content": "a"}]},
         "invalid_message"),
        ({"type": "append_messages", "session_id": "s1", "messages": [user("ok"), tool("c1a", "late")]},
         "invalid_message"),
        ({"type": "append_messages", "session_id": "s1",
          "messages": [assistant(None, [("d", "x", "{}"), ("d", "y", "{}")])]}, "invalid_message"),
        ({"type": "append_messages", "session_id": "s1", "messages": [user("")]}, "invalid_message"),
        ({"type": "invalidate_history", "session_id": "s1", "kind": "rewind"}, "invalid_command"),
        ({"type": "invalidate_history", "session_id": "s1", "kind": "delete", "seqs": [99]}, "invalid_command"),
        ({"type": "invalidate_history", "session_id": "s1", "kind": "delete", "seqs": [3]}, "invalid_message"),
        ({"type": "invalidate_history", "session_id": "s1", "kind": "explode"}, "invalid_command"),
        ({"type": "invalidate_history", "session_id": "gone", "kind": "clear"}, "session_deleted"),
        ({"type": "configure_session", "session_id": "gone", "model": "x"}, "session_deleted"),
        ({"type": "configure_session", "session_id": "s1", "agent_token_limit": -5}, "invalid_command"),
        ({"type": "delete_session", "session_id": "gone"}, "session_deleted"),
        ({"type": "delete_session", "session_id": "nope"}, "session_not_found"),
        ({"type": "get_projection", "session_id": "gone"}, "session_deleted"),
        ({"type": "get_projection", "session_id": "nope"}, "session_not_found"),
        ({"type": "get_history", "session_id": "nope"}, "session_not_found"),
        ({"type": "list_checkpoints", "session_id": "nope"}, "session_not_found"),
        ({"type": "replay_session", "session_id": "nope"}, "session_not_found"),
        ({"type": "no_such_command"}, "invalid_command"),
        ("{not json", "invalid_command"),
        ("[1, 2]", "invalid_command"),
    ]
    for command, code in cases:
        before = fingerprint(harness.bus)
        err(harness.do(command), code)
        assert fingerprint(harness.bus) == before, command


def test_typed_dispatch_raises_with_the_contract_code(bus) -> None:
    with pytest.raises(ContextCompactionError) as info:
        bus.dispatch(commands.GetHistory(session_id="missing"))
    assert info.value.code == "session_not_found"


def test_start_session_is_idempotent_on_command_id(harness: Harness) -> None:
    first = ok(harness.do({"type": "start_session", "session_id": "s9", "model": "m", "command_id": "k"}))
    again = ok(harness.do({"type": "start_session", "session_id": "s9", "model": "m", "command_id": "k"}))
    assert first == again
    err(harness.do({"type": "start_session", "session_id": "s9", "model": "m", "command_id": "other"}),
        "session_exists")


def test_configure_changes_model_and_clears_the_limit(harness: Harness) -> None:
    ok(harness.do({"type": "start_session", "session_id": "s1", "model": "gpt-4o", "agent_token_limit": 5000}))
    r = ok(harness.do({"type": "configure_session", "session_id": "s1", "model": "gpt-4o-mini"}))
    assert (r["model"], r["agent_token_limit"]) == ("gpt-4o-mini", 5000)
    r = ok(harness.do({"type": "configure_session", "session_id": "s1", "agent_token_limit": None}))
    assert (r["model"], r["agent_token_limit"]) == ("gpt-4o-mini", None)


def test_soft_deleted_sessions_keep_their_history_for_audit(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1))
    ok(harness.do({"type": "delete_session", "session_id": "s1"}))
    # (an ordinary read answers session_deleted; the audit read says so: issue 35, ADR 0072)
    err(harness.do({"type": "get_history", "session_id": "s1"}), "session_deleted")
    assert len(ok(harness.do({"type": "get_history", "session_id": "s1", "include_invalidated": True,
                              "include_deleted": True}))["messages"]) == 5
    sessions = ok(harness.do({"type": "list_sessions"}))["sessions"]
    assert sessions[0]["deleted"] is True


def test_a_pin_with_a_command_id_another_command_took_is_a_conflict(harness: Harness) -> None:
    """Review of issue 36: pins record no id, but one an append or a revert recorded is
    not theirs to take (before, the pin was applied)."""
    ok(harness.do({"type": "start_session", "session_id": "p", "model": "gpt-4o", "command_id": "st"}))
    ok(harness.do({"type": "append_messages", "session_id": "p", "command_id": "ap", "messages": [user("a")]}))
    before = harness.events()
    for kind in ("pin_messages", "unpin_messages"):
        for taken in ("st", "ap"):
            err(harness.do({"type": kind, "session_id": "p", "seqs": [1], "command_id": taken}), "idempotency_conflict")
    assert harness.events() == before, "nothing changed"
    assert ok(harness.do({"type": "pin_messages", "session_id": "p", "seqs": [1], "command_id": "pin"}))["pinned_seqs"] == [1]
