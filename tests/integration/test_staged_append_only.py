"""After a tool-result clearing the requests are
append-only again (prompt-cache prefix), also across a restart, and replay_session to a
version before / after the clearing shows the raw / cleared results."""

from __future__ import annotations

from typing import Any

from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, assistant, ok, tool, user

SID = "s"
SYSTEM = "You are a careful coding agent."
MARK = "[tool result cleared to save context"
RESERVE = 1_000
SETTINGS = {
    "reserve_tokens": RESERVE,
    "keep_recent_tokens": 2_000,
    "tool_results": {"clear": True, "keep_recent_tokens": 1_500, "clear_at_least_tokens": 500},
}


def prepare(h: Harness) -> dict[str, Any]:
    return ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM}))


def append(h: Harness, *messages: dict[str, Any]) -> None:
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": list(messages)}))


def cleared_session(make_harness) -> tuple[Harness, dict[str, Any], int]:
    """A session whose last prepare_turn cleared tool results (and made no summary)."""
    h = make_harness("c", context_compaction=SETTINGS)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for t in coding_session(6, big_output_chars=6_000):
        append(h, *t.messages())
    append(h, user("Next.", turn_id="next"))
    version = ok(h.do({"type": "replay_session", "session_id": SID}))["version"]
    used = ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": SYSTEM}))["used_tokens"]
    ok(h.do({"type": "configure_session", "session_id": SID, "agent_token_limit": used + RESERVE - 100}))
    first = prepare(h)
    assert first["compaction"]["stage"] == "cleared"
    return h, first, version + 1  # the configure_session event


def test_after_a_clearing_each_request_starts_with_the_previous_one(make_harness) -> None:
    h, previous, _ = cleared_session(make_harness)
    steps = [
        (assistant(None, [("r1", "bash", '{"cmd": "ls"}')], turn_id="next"), tool("r1", "a.py b.py", "bash")),
        (assistant("Done.", turn_id="next"), user("And now?", turn_id="n2")),
        (assistant(None, [("r2", "read_file", '{"path": "a.py"}')], turn_id="n2"),
         tool("r2", "print(1)", "read_file")),
    ]
    for index, messages in enumerate(steps):
        append(h, *messages)
        if index == 1:
            h.reopen()  # a restart rebuilds the context from the read model
        request = prepare(h)
        assert request["compaction"] is None
        assert request["messages"][: len(previous["messages"])] == previous["messages"]
        assert len(request["messages"]) == len(previous["messages"]) + len(messages)
        previous = request


def test_replay_before_and_after_the_clearing(make_harness) -> None:
    h, first, configured = cleared_session(make_harness)
    cleared = [m for m in first["messages"] if m["role"] == "tool" and m["content"].startswith(MARK)]
    assert cleared
    after = ok(h.do({"type": "replay_session", "session_id": SID}))
    before = ok(h.do({"type": "replay_session", "session_id": SID, "at_version": configured}))
    assert after["version"] > configured and before["version"] == configured
    assert after["projection"]["messages"] == first["messages"][1:]  # without the system prompt
    raw = [m for m in before["projection"]["messages"] if m["role"] == "tool"]
    assert not any(MARK in str(m["content"]) for m in raw)
    assert len(raw) == len([m for m in after["projection"]["messages"] if m["role"] == "tool"])


def test_a_result_pinned_after_its_clearing_is_shown_verbatim(make_harness) -> None:
    """A pin shows a message verbatim (DESIGN §15; the clearing never picks a pinned
    one): pinning a result that was cleared before brings its output back, in the live
    request, after a restart and in replay, as it is once a checkpoint passes it."""
    h, first, _ = cleared_session(make_harness)
    raw = {m["seq"]: m for m in ok(h.do({"type": "get_history", "session_id": SID}))["messages"]}
    ids = {m["tool_call_id"]: m["seq"] for m in raw.values() if m["role"] == "tool"}
    cleared = [m for m in first["messages"] if m["role"] == "tool" and m["content"].startswith(MARK)]
    seq = ids[cleared[0]["tool_call_id"]]
    ok(h.do({"type": "pin_messages", "session_id": SID, "seqs": [seq]}))

    def shown(messages: list[dict[str, Any]]) -> str:
        [found] = [m for m in messages if m.get("tool_call_id") == cleared[0]["tool_call_id"]]
        return found["content"]

    assert shown(prepare(h)["messages"]) == raw[seq]["content"]
    assert shown(ok(h.do({"type": "replay_session", "session_id": SID}))["projection"]["messages"]) == raw[seq]["content"]
    h.reopen()
    assert shown(prepare(h)["messages"]) == raw[seq]["content"]
    # the others stay cleared
    others = [m for m in prepare(h)["messages"] if m["role"] == "tool" and m["content"].startswith(MARK)]
    assert len(others) == len(cleared) - 1
    ok(h.do({"type": "unpin_messages", "session_id": SID, "seqs": [seq]}))
    assert shown(prepare(h)["messages"]) == cleared[0]["content"]  # cleared again, same bytes
    assert shown(ok(h.do({"type": "replay_session", "session_id": SID}))["projection"]["messages"]) == cleared[0]["content"]
