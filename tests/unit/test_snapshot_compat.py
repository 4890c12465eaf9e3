"""The Session's typed state (issue 14) keeps the stored snapshot format: snapshots
written before it load, and new ones are written in the same shape."""

from __future__ import annotations

import uuid

import orjson
import pytest
from eventsourcing.domain import Snapshot

from context_compaction.domain.checkpoint import Checkpoint, CheckpointMark
from context_compaction.domain.errors import InvalidCommand, StaleCandidate
from context_compaction.domain.messages import parse_message
from context_compaction.domain.session import Session, session_aggregate_id
from context_compaction.domain.session_snapshot import snapshot_problem
from context_compaction.domain.toolgroups import ToolGroup
from context_compaction.infrastructure.transcoding import PlainJSONTranscoder
from snapshot_builders import build_session, checkpoint

#: The state of a snapshot as main wrote it before the state was typed (dicts for the
#: active checkpoint and the tool groups): 7 messages, two tool groups (the second
#: still open), one checkpoint at seq 6.
MAIN_SNAPSHOT_STATE = (
    b'{"_created_on":"2024-01-01T00:00:00+00:00","_modified_on":"2024-01-01T00:00:02+00:00",'
    b'"session_id":"s1","start_command_id":"c0","model":"gpt-4o","agent_token_limit":null,'
    b'"created_at":"2024-01-01T00:00:00+00:00","next_seq":8,"message_count":7,'
    b'"context_generation":1,"active_checkpoint":{"checkpoint_id":"cp_1","generation":1,'
    b'"first_retained_seq":6},"checkpoint_count":1,"invalidated":[],"open_calls":{"c":7},'
    b'"tool_groups":[{"seq":2,"calls":["a","b"],"results":[[3,"a"],[4,"b"]]},'
    b'{"seq":7,"calls":["c"],"results":[]}],"recent_commands":{"c1":[1,7]},"deleted":false}'
)


def from_stored_state(state: bytes, version: int = 9) -> Session:
    """What the store does with a snapshot row: decode its JSON, then ``mutate``."""
    decoded = PlainJSONTranscoder().decode(
        orjson.dumps({"timestamp": "2024-01-01T00:00:02+00:00", "topic": "x", "state": orjson.loads(state)})
    )
    assert snapshot_problem(decoded["state"]) is None
    snapshot = Snapshot(
        originator_id=session_aggregate_id("s1"),
        originator_version=version,
        timestamp=decoded["timestamp"],
        topic="context_compaction:Session",
        state=decoded["state"],
    )
    session = snapshot.mutate(None)
    assert isinstance(session, Session)
    return session


def stored_state(session: Session) -> dict[str, object]:
    state = orjson.loads(PlainJSONTranscoder().encode(dict(Snapshot.take(session).state)))
    for key in ("_created_on", "_modified_on"):
        state.pop(key)
    return state


def test_a_snapshot_written_before_the_typed_state_loads_as_typed_state() -> None:
    session = from_stored_state(MAIN_SNAPSHOT_STATE)
    assert session.active_checkpoint == CheckpointMark("cp_1", 1, 6)
    assert session.tool_groups == [ToolGroup(2, ["a", "b"], [(3, "a"), (4, "b")]), ToolGroup(7, ["c"], [])]
    assert session.tool_group_containing(4) == session.tool_groups[0]
    assert session.id == session_aggregate_id("s1") and session.version == 9


def test_commands_on_a_session_loaded_from_an_old_snapshot_behave_as_on_a_replayed_one() -> None:
    loaded, replayed = from_stored_state(MAIN_SNAPSHOT_STATE), build_session()
    for session in (loaded, replayed):
        session.append_messages(
            [parse_message({"role": "tool", "tool_call_id": "c", "content": "rc"}),
             parse_message({"role": "assistant", "content": "ok"})],
            command_id="c2", created_at="t",
        )
        with pytest.raises(InvalidCommand, match="inside the tool group that starts at seq 7"):
            session.commit_checkpoint(checkpoint("cp_2", 2, 8, parent_checkpoint_id="cp_1"))
        with pytest.raises(StaleCandidate):
            session.commit_checkpoint(checkpoint("cp_2", 1, 9))
        session.commit_checkpoint(checkpoint("cp_2", 2, 9, parent_checkpoint_id="cp_1"))
        session.invalidate(kind="delete", seqs=[7, 8], created_at="t")
    assert stored_state(loaded) == stored_state(replayed)
    assert loaded.open_calls == replayed.open_calls == {}
    assert loaded.tool_groups == replayed.tool_groups


def test_new_snapshots_keep_the_shape_but_not_the_closed_groups() -> None:
    expected = orjson.loads(MAIN_SNAPSHOT_STATE)
    for key in ("_created_on", "_modified_on"):
        expected.pop(key)
    # a snapshot of a loaded old state is stored as it was until its next checkpoint
    assert stored_state(from_stored_state(MAIN_SNAPSHOT_STATE)) == expected
    # ADR 0051: the group closed behind the checkpoint at seq 6 leaves the snapshot;
    # the open one stays, and ``archived_upto`` says up to where groups were moved out
    new = stored_state(build_session())
    assert new == {**expected, "tool_groups": [{"seq": 7, "calls": ["c"], "results": []}], "archived_upto": 4}
    assert snapshot_problem(new) is None


def test_the_checkpoint_committed_event_keeps_its_stored_fields() -> None:
    session = build_session()
    event = session.collect_events()[-1]
    assert type(event).__name__ == "CheckpointCommitted"
    stored = {k: v for k, v in vars(event).items() if k not in ("originator_id", "originator_version", "timestamp")}
    assert stored == checkpoint("cp_1", 1, 6).to_record()
    assert Checkpoint.from_record(stored) == checkpoint("cp_1", 1, 6)
    assert set(stored) == {
        "checkpoint_id", "generation", "parent_checkpoint_id", "summary", "first_retained_seq",
        "source_max_seq", "trigger_reason", "provider_kind", "model", "tokens_before",
        "tokens_after", "degraded", "summary_source", "created_at", "ledger",  # (ledger: issue 16)
        "provider_state",  # (issue 17, ADR 0039)
    }
    old = {k: v for k, v in stored.items() if k not in ("ledger", "provider_state")}  # before issue 16
    assert Checkpoint.from_record(old) == checkpoint("cp_1", 1, 6)


def test_the_aggregate_records_the_active_checkpoint_as_parent() -> None:
    session = build_session()
    session.commit_checkpoint(checkpoint(str(uuid.uuid4()), 2, 7, parent_checkpoint_id=None))
    assert session.collect_events()[-1].parent_checkpoint_id == "cp_1"
