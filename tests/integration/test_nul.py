"""NUL characters (``\\u0000``) behave the same on SQLite and PostgreSQL (issue 13, item 2).

Message content is stored faithfully (the events are bytes) and comes back exactly;
the text derived from it for TEXT columns (checkpoint summaries, Timeline entries)
never carries a NUL, so a session with such content keeps compacting on PostgreSQL.
Identifiers and other free-text command fields that land in TEXT columns refuse NUL
with ``invalid_command`` and change nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_compaction.domain.checkpoint import Checkpoint

from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL, Harness, assistant, err, fingerprint, llm_settings, ok, tool, user

NUL = "\u0000"


def _turn(i: int) -> list[dict[str, Any]]:
    call = f"c{i}"
    return [
        user(f"turn {i}: read a.bin{NUL}and b{NUL}{NUL}.py " + "please " * 40, turn_id=f"t{i}"),
        assistant(f"reading{NUL}", calls=[(call, "read_file", f"path=a{NUL}.bin")],
                  turn_id=f"t{i}", reasoning=f"think{NUL}ing"),
        tool(call, f"\x7fELF{NUL}{NUL}{NUL}binary " + "lorem ipsum dolor " * 150),
        assistant([{"type": "text", "text": f"done{NUL}with {i}"}], turn_id=f"t{i}"),
    ]


def _arguments(call: dict[str, Any]) -> str:
    return str(call["function"]["arguments"] if "function" in call else call["arguments"])


def test_nul_in_content_round_trips_and_the_session_keeps_compacting(make_harness: Any) -> None:
    h: Harness = make_harness("main", context_compaction={"keep_recent_tokens": 200})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o-mini"}))
    sent: list[dict[str, Any]] = []
    for i in range(1, 7):
        sent += _turn(i)
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": _turn(i)}))
        if i in (3, 6):  # two compactions: the second one reads the first summary back
            outcome = ok(h.do({"type": "compact", "session_id": "s"}))
            assert outcome["status"] == "compacted", outcome
    history = ok(h.do({"type": "get_history", "session_id": "s"}))["messages"]
    assert [m["content"] for m in history] == [m["content"] for m in sent]
    assert history[1]["reasoning"] == f"think{NUL}ing"
    assert _arguments(history[1]["tool_calls"][0]) == f"path=a{NUL}.bin"
    checkpoints = ok(h.do({"type": "list_checkpoints", "session_id": "s"}))["checkpoints"]
    assert len(checkpoints) == 2 and all(NUL not in cp["summary"] for cp in checkpoints)
    assert "a.bin\ufffdand" in checkpoints[-1]["summary"]  # the fact survives, visibly marked
    timeline = ok(h.do({"type": "recall_timeline", "session_id": "s"}))["entries"]
    assert len(timeline) == 2
    turn = ok(h.do({"type": "prepare_turn", "session_id": "s", "system_prompt": "hi", "tools": []}))
    assert any(NUL in str(m.get("content")) for m in turn["messages"]), "the tail is sent as stored"
    # After a restart, from the stored events alone: the same bytes.
    again = h.reopen().dispatch_json({"type": "get_history", "session_id": "s"})
    assert ok(again)["messages"] == history


def test_a_summary_returned_with_nul_is_stored_without_it(make_harness: Any, provider: FakeProvider) -> None:
    h: Harness = make_harness("main", **llm_settings(provider.base_url),
                              context_compaction={"keep_recent_tokens": 200})
    ok(h.do({"type": "start_session", "session_id": "s", "model": FAKE_MODEL}))
    for i in range(1, 4):
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": _turn(i)}))
    provider.queue(Reply(text=f"## Objective\nread a.bin{NUL}and more{NUL}"))
    outcome = ok(h.do({"type": "compact", "session_id": "s"}))
    assert outcome["status"] == "compacted", outcome
    summary = ok(h.do({"type": "list_checkpoints", "session_id": "s"}))["checkpoints"][0]["summary"]
    assert summary == "## Objective\nread a.bin\ufffdand more\ufffd"
    # The summary request itself carried no NUL either (request-local serialization).
    assert NUL not in str(provider.requests[-1].messages)
    replayed = ok(h.do({"type": "replay_session", "session_id": "s"}))["projection"]["messages"][0]
    assert "a.bin\ufffdand" in replayed["content"], "event and read model hold the same summary"


IDENTIFIER_COMMANDS = [
    ("session_id", {"type": "start_session", "session_id": f"a{NUL}b", "model": "gpt-4o"}),
    ("model", {"type": "start_session", "session_id": "new", "model": f"gpt{NUL}"}),
    ("command_id", {"type": "start_session", "session_id": "new", "model": "gpt-4o", "command_id": f"x{NUL}"}),
    ("model", {"type": "configure_session", "session_id": "s", "model": f"gpt{NUL}4o"}),
    ("command_id", {"type": "append_messages", "session_id": "s", "messages": [user("hi")],
                    "command_id": f"c{NUL}1"}),
    ("session_id", {"type": "append_messages", "session_id": f"s{NUL}", "messages": [user("hi")]}),
    ("reason", {"type": "invalidate_history", "session_id": "s", "kind": "clear", "reason": f"why{NUL}"}),
    ("session_id", {"type": "get_history", "session_id": f"s{NUL}"}),
    ("model", {"type": "compact", "session_id": "s", "model": f"m{NUL}"}),
    ("query", {"type": "recall_timeline", "session_id": "s", "query": f"a{NUL}"}),
    ("request_id", {"type": "record_usage", "session_id": "s", "request_id": f"r{NUL}", "prompt_tokens": 1}),
]


@pytest.mark.parametrize(("field", "command"), IDENTIFIER_COMMANDS,
                         ids=[f"{c['type']}.{f}" for f, c in IDENTIFIER_COMMANDS])
def test_nul_in_an_identifier_is_an_invalid_command_that_changes_nothing(
    harness: Harness, field: str, command: dict[str, Any]
) -> None:
    ok(harness.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": "s", "messages": [user("hello")]}))
    before = fingerprint(harness.bus)
    error = err(harness.do(command), "invalid_command")
    assert field in error["message"] and "NUL" in error["message"], error
    assert fingerprint(harness.bus) == before


def test_a_stored_summary_with_nul_from_an_older_version_still_projects(harness: Harness) -> None:
    """Events written before summaries were kept free of NUL: the read model and the
    Timeline store them with the stand-in instead of failing on every later read."""
    ok(harness.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for i in range(1, 4):
        ok(harness.do({"type": "append_messages", "session_id": "s", "messages": _turn(i)}))
    store = harness.bus.services.events
    session = store.load("s")
    session.commit_checkpoint(Checkpoint(
        checkpoint_id="cp-old", generation=1, parent_checkpoint_id=None, summary=f"## Objective\nold{NUL}one",
        first_retained_seq=9, source_max_seq=12, trigger_reason="manual", provider_kind="extractive",
        model="gpt-4o", tokens_before=900, tokens_after=300, degraded=False, summary_source={},
        created_at="2026-01-01T00:00:00+00:00",
    ))
    store.save(session)
    checkpoints = ok(harness.do({"type": "list_checkpoints", "session_id": "s"}))["checkpoints"]
    assert [cp["summary"] for cp in checkpoints] == ["## Objective\nold\ufffdone"]
    assert ok(harness.do({"type": "recall_timeline", "session_id": "s"}))["entries"][0]["content"] == (
        "## Objective\nold\ufffdone")
    assert ok(harness.do({"type": "compact", "session_id": "s"}))["status"] in ("compacted", "nothing_to_compact")
