"""The Session's state is bounded by the open work, not by the history (ADR 0051, issue 18
R5): closed tool groups behind the checkpoint leave ``tool_groups`` and the snapshot; a
copy loaded from a snapshot asks for a full replay (``HistoryNeeded``) only when a
command names an old seq, and decides exactly as a replayed copy then."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from eventsourcing.domain import Snapshot

from context_compaction.domain.errors import InvalidCommand, InvalidMessage
from context_compaction.domain.messages import parse_message
from context_compaction.domain.session import Session
from context_compaction.domain.session_snapshot import snapshot_problem
from context_compaction.domain.session_state import HistoryNeeded
from context_compaction.infrastructure.transcoding import PlainJSONTranscoder
from helpers import commit_checkpoint

T = "2024-01-01T00:00:00+00:00"


def turn(n: int) -> list[Any]:
    """user, assistant calling two tools, their two results, assistant: 5 messages."""
    return [parse_message(m) for m in (
        {"role": "user", "content": f"step {n}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}a", "name": "read", "arguments": "{}"},
            {"id": f"c{n}b", "name": "run", "arguments": "{}"}]},
        {"role": "tool", "tool_call_id": f"c{n}a", "content": "x" * 50},
        {"role": "tool", "tool_call_id": f"c{n}b", "content": "ok"},
        {"role": "assistant", "content": f"done {n}"},
    )]


def long_session(turns: int, *, every: int = 10) -> Session:
    """``turns`` turns, a checkpoint before the last turn of every ``every``; the first
    turn's second call is left unanswered for good (open work that stays)."""
    session = Session.start("s", "m", None, created_at=T)
    first = turn(0)
    session.append_messages([*first[:3], parse_message({"role": "user", "content": "never mind"})],
                            command_id=None, created_at=T)
    for n in range(1, turns):
        session.append_messages(turn(n), command_id=None, created_at=T)
        if n % every == 0:
            commit_checkpoint(session, session.next_seq - 5)
    return session


def snapshot_state(session: Session) -> dict[str, Any]:
    return orjson.loads(PlainJSONTranscoder().encode(dict(Snapshot.take(session).state)))


def same_state(a: Session, b: Session) -> bool:
    """Equal stored state, times of the commands aside."""
    drop = ("_created_on", "_modified_on")
    return {k: v for k, v in snapshot_state(a).items() if k not in drop} == {
        k: v for k, v in snapshot_state(b).items() if k not in drop}


def from_snapshot(session: Session) -> Session:
    """What the store does with a snapshot row: decode, check, ``mutate``."""
    state = snapshot_state(session)
    assert snapshot_problem(state) is None
    snapshot = Snapshot(originator_id=session.id, originator_version=session.version, timestamp=session.modified_on,
                        topic="context_compaction:Session", state=state)
    loaded = snapshot.mutate(None)
    assert isinstance(loaded, Session)
    return loaded


def replayed(session: Session) -> Session:
    """The same session replayed from its first event (what ``load_complete`` does)."""
    events = session.collect_events()
    copy: Any = None
    for event in events:
        copy = event.mutate(copy)
    session.pending_events.extend(events)  # (hand them back: later copies replay them too)
    assert isinstance(copy, Session)
    return copy


def test_the_live_tool_groups_and_the_snapshot_stay_bounded_as_the_history_grows() -> None:
    # as many checkpoints (4) in both: what grows with their count is ``checkpoint_parents``
    small, large = long_session(41, every=10), long_session(401, every=100)
    assert large.message_count > 9 * small.message_count
    # live: the group with the unanswered call, and the ones after the last boundary
    assert [g.seq for g in large.tool_groups] == [2, large.next_seq - 4]
    assert len(large.tool_groups) == len(small.tool_groups) == 2
    size = {n: len(orjson.dumps(snapshot_state(s))) for n, s in (("small", small), ("large", large))}
    assert size["large"] < 1.3 * size["small"], size
    # a replay from the first event still holds every group
    assert len(replayed(large).all_tool_groups()) == 401


def test_an_ordinary_append_on_a_snapshot_copy_needs_no_history() -> None:
    session = long_session(101)
    loaded = from_snapshot(session)
    for copy in (session, loaded):
        copy.append_messages(turn(500), command_id="x", created_at=T)
        copy.pin([copy.max_seq - 1], created_at=T)  # (a recent seq)
        commit_checkpoint(copy, copy.max_seq - 4)
        copy.clear_tool_results(seqs=[copy.max_seq - 1], placeholders=["[cleared]"], tokens_freed=1, created_at=T)
    assert same_state(loaded, session)
    assert [g.seq for g in loaded.tool_groups] == [2, loaded.max_seq - 3]  # (c0b is still open)


@pytest.mark.parametrize("command", [
    lambda s: s.pin([7], created_at=T),
    lambda s: s.unpin([8], created_at=T),
    lambda s: s.invalidate(kind="delete", seqs=[6, 7, 8], created_at=T),
    lambda s: s.invalidate(kind="rewind", to_seq=7, created_at=T),
    lambda s: s.clear_tool_results(seqs=[8], placeholders=["[cleared]"], tokens_freed=1, created_at=T),
], ids=["pin", "unpin", "delete", "rewind", "clear_results"])
def test_a_command_naming_an_old_seq_asks_for_the_history_and_then_decides_as_a_replay(command: Any) -> None:
    session = long_session(31)
    loaded = from_snapshot(session)
    version = loaded.version
    with pytest.raises(HistoryNeeded):
        command(loaded)
    assert loaded.version == version and not loaded.pending_events  # nothing happened
    full = replayed(session)
    command(full)
    command(session)
    assert same_state(full, session)


@pytest.mark.parametrize("command", [
    lambda s: s.invalidate(kind="clear", created_at=T),
    lambda s: s.invalidate(kind="rewind", to_seq=0, created_at=T),
], ids=["clear", "rewind_to_0"])
def test_hiding_every_closed_group_whole_needs_no_history(command: Any) -> None:
    session = long_session(31)
    loaded = from_snapshot(session)
    command(loaded)
    command(session)
    assert same_state(loaded, session) and loaded.archived_upto == 0
    loaded.append_messages(turn(90), command_id=None, created_at=T)  # (no HistoryNeeded)


def test_refusals_about_old_groups_hold_on_a_full_replay() -> None:
    full = replayed(long_session(31))
    with pytest.raises(InvalidMessage, match="orphan its tool group"):
        full.invalidate(kind="delete", seqs=[7], created_at=T)
    with pytest.raises(InvalidCommand, match="not a visible tool result"):
        full.clear_tool_results(seqs=[6], placeholders=["p"], tokens_freed=0, created_at=T)
    assert sorted(full.pin([7], created_at=T)) == [6, 7, 8]
    assert full.invalidate(kind="delete", seqs=[7], expand_tool_groups=True, created_at=T).ranges == [[6, 8]]
    assert full.pinned_seqs == []


def test_a_cut_into_a_closed_group_after_a_revert_is_refused() -> None:
    session = long_session(21)  # checkpoints cut at seqs 50 and 100
    first, second = session.checkpoint_parents[-1], session.active_checkpoint
    assert first is not None and second is not None
    session.revert_checkpoint(second.checkpoint_id, command_id=None, created_at=T)
    loaded = from_snapshot(session)
    with pytest.raises(HistoryNeeded):
        commit_checkpoint(loaded, 77)  # inside the group of seq 76, closed behind seq 100
    full = replayed(session)
    with pytest.raises(InvalidCommand, match="inside the tool group that starts at seq 76"):
        commit_checkpoint(full, 77)
    commit_checkpoint(full, 75)


def test_a_rewind_into_a_closed_group_reopens_its_call_and_a_replay_after_a_snapshot_asks_for_history() -> None:
    session = long_session(31)
    snapshot = snapshot_state(session)  # taken before the rewind
    full = replayed(session)
    full.invalidate(kind="rewind", to_seq=7, created_at=T)  # keeps c1a's result, hides c1b's
    assert full.open_calls["c1b"] == 6 and full.tool_groups[-1].seq == 6
    full.append_messages([parse_message({"role": "tool", "tool_call_id": "c1b", "content": "again"})],
                         command_id=None, created_at=T)
    assert full.tool_group_containing(full.max_seq).seq == 6  # type: ignore[union-attr]
    # a copy loaded from the snapshot taken before the rewind, then given the rewind's event
    rewind = [e for e in full.collect_events() if type(e).__name__ == "HistoryInvalidated"]
    loaded = from_snapshot(session)
    assert snapshot_state(loaded) == snapshot
    rewind[0].mutate(loaded)
    with pytest.raises(HistoryNeeded):  # it could not know which calls the rewind reopened
        loaded.append_messages([parse_message({"role": "user", "content": "x"})], command_id=None, created_at=T)


def test_snapshot_problem_checks_the_new_fields() -> None:
    state = snapshot_state(long_session(11))
    assert snapshot_problem(state) is None and state["archived_upto"] == 48
    assert snapshot_problem({**state, "archived_upto": "48"}) == "archived_upto has the wrong type"
    assert snapshot_problem({**state, "groups_incomplete": 1}) == "groups_incomplete has the wrong type"
