"""A snapshot's stored bytes do not depend on how the mapper encodes its tool groups
(ADR 0056): the plain-dict shortcut writes what orjson writes for the dataclasses."""

from __future__ import annotations

import orjson
from eventsourcing.domain import Snapshot

from context_compaction.domain.messages import parse_message
from context_compaction.domain.session import Session
from context_compaction.domain.toolgroups import ToolGroup
from context_compaction.infrastructure.eventstore.mapper import EventMapper, _plain_groups
from context_compaction.infrastructure.transcoding import PlainJSONTranscoder

T = "2026-01-01T00:00:00+00:00"


def _session_with_groups() -> Session:
    session = Session.start("s", "gpt-4o", None, created_at=T, command_id="c0")
    messages = [{"role": "user", "content": "go"}]
    for i in range(5):
        calls = [{"id": f"c{i}a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                 {"id": f"c{i}b", "type": "function", "function": {"name": "g", "arguments": "[]"}}]
        messages += [{"role": "assistant", "content": None, "tool_calls": calls},
                     {"role": "tool", "tool_call_id": f"c{i}a", "content": "ok"}]
        if i < 4:  # the last group stays open: one result of two
            messages.append({"role": "tool", "tool_call_id": f"c{i}b", "content": "done"})
    session.append_messages([parse_message(m) for m in messages], command_id="c1", created_at=T)
    session.collect_events()
    return session


def test_a_snapshot_is_stored_as_orjson_writes_the_dataclasses() -> None:
    session = _session_with_groups()
    assert len(session.tool_groups) == 5 and all(type(g) is ToolGroup for g in session.tool_groups)
    snapshot = Session.Snapshot.take(session)
    stored = EventMapper(transcoder=PlainJSONTranscoder()).to_stored_event(snapshot)

    state = dict(snapshot.__dict__)
    del state["originator_id"], state["originator_version"]
    reference = orjson.dumps(state, default=lambda value: value.isoformat())  # the dataclasses as orjson writes them
    assert stored.state == reference
    assert Session.Snapshot is Snapshot and stored.topic == "eventsourcing.domain:Snapshot"
    # (the shortcut did run: the encoder saw the groups' bytes, not the dataclasses)
    assert type(_plain_groups(snapshot.state)["tool_groups"]) is orjson.Fragment
    # The held state is untouched: the snapshot's copy was converted, not the session's.
    assert all(type(g) is ToolGroup for g in session.tool_groups)
    assert all(type(g) is ToolGroup for g in snapshot.state["tool_groups"])


def test_a_restored_snapshot_has_the_same_groups() -> None:
    session = _session_with_groups()
    stored = EventMapper(transcoder=PlainJSONTranscoder()).to_stored_event(Session.Snapshot.take(session))
    restored = EventMapper(transcoder=PlainJSONTranscoder()).to_domain_event(stored).mutate(None)
    assert restored.tool_groups == session.tool_groups
    assert restored.open_calls == session.open_calls == {"c4b": 14}
