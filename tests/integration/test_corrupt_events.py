"""Damaged event rows are ``corrupt_event``, named by session and version (issue 13, item 4).

A row whose state is not JSON, whose topic is not one of our event classes, or whose
state lacks the fields of its class is never decoded into half an event: every command
that reads it answers ``corrupt_event`` with the session and version, other sessions
are untouched, no module named by a stored topic is ever imported, and ``ctxc verify``
lists the row and exits with its "difference found" code.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson
import pytest

from cli_inprocess import run_cli
from context_compaction.domain.session import session_aggregate_id
from context_compaction.infrastructure.cli import EXIT_DIFFERENT
from helpers import Harness, assistant, err, ok, tool, user

DAMAGED_VERSION = 3  # Started is 1; the second message of the first turn


def _fill(h: Harness, session_id: str) -> None:
    ok(h.do({"type": "start_session", "session_id": session_id, "model": "gpt-4o"}))
    for i in range(1, 5):
        ok(h.do({"type": "append_messages", "session_id": session_id, "messages": [
            user(f"turn {i}: look at src/m{i}.py " + "please " * 60, turn_id=f"t{i}"),
            assistant(None, calls=[(f"c{i}", "read_file", "{}")], turn_id=f"t{i}"),
            tool(f"c{i}", "print('x')\n" * 80),
            assistant(f"m{i} prints x", turn_id=f"t{i}")]}))


def _row(h: Harness, session_id: str, version: int) -> tuple[str, Any]:
    """(events table, originator id as stored) of one event row."""
    table = h.inspect.events_table.qualified
    oid = session_aggregate_id(session_id)
    return table, (oid if h.is_postgres else oid.hex)


def _damage(h: Harness, session_id: str, version: int, *, state: bytes | None = None,
            topic: str | None = None) -> None:
    table, oid = _row(h, session_id, version)
    db = h.inspect.db
    with db.write() as cur:
        if state is not None:
            cur.execute(f"UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                        (state, oid, version))
        if topic is not None:
            cur.execute(f"UPDATE {table} SET topic = ? WHERE originator_id = ? AND originator_version = ?",
                        (topic, oid, version))
        assert cur.rowcount == 1


def _stored_state(h: Harness, session_id: str, version: int) -> dict[str, Any]:
    table, oid = _row(h, session_id, version)
    db = h.inspect.db
    with db.read() as cur:
        row = cur.execute(f"SELECT state FROM {table} WHERE originator_id = ? AND originator_version = ?",
                          (oid, version)).fetchone()
    assert row is not None
    return orjson.loads(bytes(row[0]))  # type: ignore[no-any-return]


DAMAGES = {
    "bad_json": {"state": b'{"seq": 2, "role": "assis'},
    "unknown_topic": {"topic": "topic_canary:Anything"},
    "empty_state": {"state": b"{}"},
}

COMMANDS = [
    {"type": "append_messages", "session_id": "s", "messages": [user("more")]},
    {"type": "get_history", "session_id": "s"},
    {"type": "get_projection", "session_id": "s"},
    {"type": "get_context_usage", "session_id": "s"},
    {"type": "prepare_turn", "session_id": "s", "system_prompt": "hi", "tools": []},
    {"type": "compact", "session_id": "s"},
    {"type": "invalidate_history", "session_id": "s", "kind": "clear"},
    {"type": "replay_session", "session_id": "s"},
]


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_event_row_is_corrupt_event_on_every_command_of_its_session(
    harness: Harness, damage: str
) -> None:
    _fill(harness, "s")
    _fill(harness, "other")
    _damage(harness, "s", DAMAGED_VERSION, **DAMAGES[damage])
    bus = harness.reopen()  # a process that has not seen the row intact
    for command in COMMANDS:
        error = err(bus.dispatch_json(command), "corrupt_event")
        assert error["details"]["session_id"] == "s", (command["type"], error)
        assert error["details"]["version"] == DAMAGED_VERSION, (command["type"], error)
        assert "'s'" in error["message"] and str(DAMAGED_VERSION) in error["message"]
    assert "topic_canary" not in sys.modules, "a stored topic imported a module"
    # The other session is untouched.
    ok(bus.dispatch_json({"type": "append_messages", "session_id": "other", "messages": [user("more")]}))
    assert len(ok(bus.dispatch_json({"type": "get_history", "session_id": "other"}))["messages"]) == 17


def test_a_message_whose_role_is_not_text_is_never_served(harness: Harness) -> None:
    _fill(harness, "s")
    state = _stored_state(harness, "s", DAMAGED_VERSION)
    state["role"] = None
    _damage(harness, "s", DAMAGED_VERSION, state=orjson.dumps(state))
    error = err(harness.reopen().dispatch_json({"type": "get_history", "session_id": "s"}), "corrupt_event")
    assert error["details"] == {"version": DAMAGED_VERSION, "problem": "role is not a string", "session_id": "s"}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_verify_names_the_damaged_row_and_reports_a_difference(
    harness: Harness, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(harness, "s")
    _fill(harness, "other")
    _damage(harness, "s", DAMAGED_VERSION, **DAMAGES[damage])
    harness.bus.close()
    assert run_cli(["verify", "--db", harness.url]) == EXIT_DIFFERENT
    text = capsys.readouterr().out
    assert f"session 's', version {DAMAGED_VERSION}" in text, text
    assert run_cli(["verify", "--db", harness.url, "--json"]) == EXIT_DIFFERENT
    report = json.loads(capsys.readouterr().out)
    assert [(row["session_id"], row["version"]) for row in report["damaged_events"]] == [("s", DAMAGED_VERSION)]
    assert report["ok"] is False
    assert "topic_canary" not in sys.modules


# ------------------------------------------------ valid JSON, wrong types (review of issue 13)
def _fill_with_history_events(h: Harness, session_id: str) -> None:
    """Messages, a checkpoint and a rewind: one stored event of every common kind."""
    _fill(h, session_id)
    assert ok(h.do({"type": "compact", "session_id": session_id}))["status"] == "compacted"
    ok(h.do({"type": "append_messages", "session_id": session_id, "messages": [user("later")]}))
    ok(h.do({"type": "invalidate_history", "session_id": session_id, "kind": "rewind", "to_seq": 16}))


def _version_of(h: Harness, session_id: str, event: str) -> int:
    table, oid = _row(h, session_id, 1)
    rows = h.query(f"SELECT originator_version FROM {table} WHERE originator_id = ? AND topic = ?"
                   " ORDER BY originator_version", (oid, f"context_compaction:Session.{event}"))
    return int(rows[0][0])


#: (event, field, stored value): JSON that decodes but is not what the event class holds.
WRONG_TYPES = [
    ("MessageAppended", "seq", "3"),
    ("MessageAppended", "seq", None),
    ("MessageAppended", "role", 5),
    ("MessageAppended", "tool_calls", {"id": "c1"}),
    ("MessageAppended", "tool_calls", ["c1"]),
    ("MessageAppended", "tool_calls", [{}]),
    ("MessageAppended", "tool_calls", [{"id": 5, "name": "read_file", "arguments": "{}"}]),
    ("MessageAppended", "tool_calls", [{"id": "c1", "name": 5, "arguments": {}}]),
    ("MessageAppended", "provider_state", "openai"),
    ("MessageAppended", "content", {"text": "x"}),
    ("MessageAppended", "content", [{"type": "text", "text": 5}]),
    ("MessageAppended", "turn_id", 5),
    ("Started", "model", None),
    ("CheckpointCommitted", "generation", "1"),
    ("CheckpointCommitted", "first_retained_seq", "x"),
    ("CheckpointCommitted", "summary", 5),
    ("HistoryInvalidated", "ranges", "1-3"),
    ("HistoryInvalidated", "ranges", [[5]]),
    ("HistoryInvalidated", "generation", None),
]


@pytest.mark.parametrize(("event", "field", "value"), WRONG_TYPES, ids=lambda v: repr(v)[:20])
def test_a_stored_field_of_the_wrong_type_is_corrupt_event_never_internal_error(
    make_harness: Any, event: str, field: str, value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    h = make_harness("main", context_compaction={"keep_recent_tokens": 300})
    _fill_with_history_events(h, "s")
    ok(h.do({"type": "start_session", "session_id": "other", "model": "gpt-4o"}))
    # The third message (a tool call) for message fields: its tool group is in every replay.
    version = DAMAGED_VERSION if event == "MessageAppended" else _version_of(h, "s", event)
    state = _stored_state(h, "s", version)
    state[field] = value
    _damage(h, "s", version, state=orjson.dumps(state))
    bus = h.reopen()
    for command in [*COMMANDS, {"type": "list_checkpoints", "session_id": "s"},
                    {"type": "recall_timeline", "session_id": "s"}]:
        envelope = bus.dispatch_json(command)
        if envelope["ok"]:
            continue  # (a read that never touches the damaged row)
        error = err(envelope, "corrupt_event")
        assert (error["details"]["session_id"], error["details"]["version"]) == ("s", version), error
    for command in COMMANDS[:1] + COMMANDS[6:]:  # writes and replays decode every event
        err(bus.dispatch_json(command), "corrupt_event")
    ok(bus.dispatch_json({"type": "append_messages", "session_id": "other", "messages": [user("hi")]}))
    bus.close()
    assert run_cli(["verify", "--db", h.url, "--json"]) == EXIT_DIFFERENT
    report = json.loads(capsys.readouterr().out)
    assert [(row["session_id"], row["version"]) for row in report["damaged_events"]] == [("s", version)]


# ------------------------------------------------ snapshots are a cache (review of issue 13)
def _damage_latest_snapshot(h: Harness, session_id: str, change: Any) -> None:
    app = h.inspect.app
    table = app.snapshots.recorder.events_table_name
    table = table if h.is_postgres else table  # (qualified by the search path on PostgreSQL)
    _, oid = _row(h, session_id, 1)
    db = h.inspect.db
    with db.read() as cur:
        version, state = cur.execute(
            f"SELECT originator_version, state FROM {{t}}{table} WHERE originator_id = ?"
            " ORDER BY originator_version DESC LIMIT 1", (oid,)).fetchone()
    stored = change(orjson.loads(bytes(state)))
    with db.write() as cur:
        cur.execute(f"UPDATE {{t}}{table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                    (stored if isinstance(stored, bytes) else orjson.dumps(stored), oid, version))
        assert cur.rowcount == 1


def _set_state(key: str, value: Any) -> Any:
    def change(snapshot: dict[str, Any]) -> dict[str, Any]:
        snapshot["state"][key] = value
        return snapshot
    return change


SNAPSHOT_DAMAGES = {
    "bad_json": lambda snapshot: b'{"topic": "context_compaction:Ses',
    "unknown_aggregate": lambda snapshot: {**snapshot, "topic": "os:system"},
    "next_seq_text": _set_state("next_seq", "17"),
    "open_calls_list": _set_state("open_calls", ["c1"]),
    "tool_groups_broken": _set_state("tool_groups", [{"seq": 2}]),
    "no_session_id": lambda snapshot: {**snapshot, "state": {k: v for k, v in snapshot["state"].items()
                                                             if k != "session_id"}},
}


@pytest.mark.parametrize("damage", sorted(SNAPSHOT_DAMAGES))
def test_a_damaged_snapshot_is_skipped_and_the_session_replayed_from_its_events(
    make_harness: Any, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    h = make_harness("main", snapshot_interval=5)
    _fill(h, "s")
    before = [ok(h.do(command)) for command in COMMANDS[1:4]]
    _damage_latest_snapshot(h, "s", SNAPSHOT_DAMAGES[damage])
    bus = h.reopen()
    assert [ok(bus.dispatch_json(command)) for command in COMMANDS[1:4]] == before
    seqs = ok(bus.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [user("more")]}))["seqs"]
    assert seqs == [17]
    ok(bus.dispatch_json({"type": "replay_session", "session_id": "s", "at_version": 10}))
    assert ok(bus.dispatch_json({"type": "invalidate_history", "session_id": "s", "kind": "rewind",
                                 "to_seq": 16}))["context_generation"] == 1
    bus.close()
    assert run_cli(["verify", "--db", h.url, "--json"]) == EXIT_DIFFERENT  # the operator hears of it
    report = json.loads(capsys.readouterr().out)
    assert [(row["session_id"], row["version"]) for row in report["damaged_snapshots"]] == [("s", 17)]
    assert report["damaged_events"] == []


# ---------------------------------------- the read model catching up (review of issue 13)
def _seq_taken(h: Harness) -> bytes:
    """The damaged message's state with the seq of the message before it: each field
    has its type, yet the row does not fit the session's earlier events."""
    state = _stored_state(h, "s", DAMAGED_VERSION)
    state["seq"] = DAMAGED_VERSION - 2
    return orjson.dumps(state)


@pytest.mark.parametrize(("version", "state"), [(DAMAGED_VERSION, b'{"seq": 2, "role": "assis'), (1, b"{}"),
                                                (DAMAGED_VERSION, _seq_taken)],
                         ids=["message", "started", "seq_taken"])
def test_a_damaged_row_met_while_the_read_model_catches_up_stops_only_its_session(
    harness: Harness, version: int, state: Any
) -> None:
    _fill(harness, "s")
    _fill(harness, "other")
    _damage(harness, "s", version, state=state if isinstance(state, bytes) else state(harness))
    # A read model rebuilt from the events (as after a schema upgrade) meets the row.
    harness.execute("UPDATE {t}rm_position SET notification_id = 1 WHERE name = 'schema'")
    bus = harness.reopen()
    assert len(ok(bus.dispatch_json({"type": "get_history", "session_id": "other"}))["messages"]) == 16
    ok(bus.dispatch_json({"type": "append_messages", "session_id": "other", "messages": [user("more")]}))
    ok(bus.dispatch_json({"type": "prepare_turn", "session_id": "other", "system_prompt": "hi", "tools": []}))
    ok(bus.dispatch_json({"type": "list_sessions"}))
    for command in [*COMMANDS, {"type": "list_checkpoints", "session_id": "s"}]:
        if callable(state) and command["type"] in ("append_messages", "invalidate_history"):
            continue  # (its events still decode: the session's own state is intact)
        error = err(bus.dispatch_json(command), "corrupt_event")
        assert (error["details"]["session_id"], error["details"]["version"]) == ("s", version), error


def test_verify_lists_a_row_that_does_not_fit_its_sessions_earlier_events(
    harness: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(harness, "s")
    _fill(harness, "other")
    _damage(harness, "s", DAMAGED_VERSION, state=_seq_taken(harness))
    harness.bus.close()
    assert run_cli(["verify", "--db", harness.url, "--json"]) == EXIT_DIFFERENT
    report = json.loads(capsys.readouterr().out)
    assert [(row["session_id"], row["version"]) for row in report["damaged_events"]] == [("s", DAMAGED_VERSION)]
