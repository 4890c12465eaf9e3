"""revert_checkpoint (issue 16): the active checkpoint is withdrawn, raw history untouched."""

from __future__ import annotations

import pytest

import threading
from functools import partial

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, err, event_count, ok, user
from rv_builders import RV, rv_session, rv_filler
from tree_builders import start as tree_start

#: Issue 16's done-when asks for these on SQLite and PostgreSQL; memory:// answers alike
#: (ADR 0045). Tests marked ``backends(...)`` pick their own.
BACKENDS = ("memory", "sqlite", "postgres")

SID = "v"


start = partial(tree_start, name="revert", sid=SID)
filler = partial(rv_filler, sid=SID)


def compact(h: Harness) -> dict:
    return ok(h.do({"type": "compact", "session_id": SID}))


def projection(h: Harness) -> dict:
    return ok(h.do({"type": "get_projection", "session_id": SID}))


def revert(h: Harness, checkpoint_id: str, **extra) -> dict:
    return h.do({"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": checkpoint_id, **extra})


def test_revert_returns_to_the_parent_then_to_raw_history(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    first = compact(h)
    at_first = projection(h)
    filler(h, 10, start=10)
    second = compact(h)
    history = ok(h.do({"type": "get_history", "session_id": SID, "include_invalidated": True}))
    result = ok(revert(h, second["checkpoint_id"]))
    assert result["active_checkpoint_id"] == first["checkpoint_id"]
    assert result["context_generation"] == second["generation"] + 1
    now = projection(h)
    assert now["checkpoint_id"] == first["checkpoint_id"] and now["first_raw_seq"] == first["first_retained_seq"]
    assert now["messages"][: len(at_first["messages"])] == at_first["messages"]
    assert ok(h.do({"type": "get_history", "session_id": SID, "include_invalidated": True})) == history
    listed = ok(h.do({"type": "list_checkpoints", "session_id": SID}))
    assert [(c["checkpoint_id"], c["reverted"], c["active"]) for c in listed["checkpoints"]] == [
        (first["checkpoint_id"], False, True), (second["checkpoint_id"], True, False)]
    # the reverted one cannot be reverted again; the parent can, back to raw history
    events = h.events()
    err(revert(h, second["checkpoint_id"]), "invalid_command")
    err(revert(h, "cp_unknown"), "invalid_command")
    assert h.events() == events
    assert ok(revert(h, first["checkpoint_id"]))["active_checkpoint_id"] is None
    raw = projection(h)
    assert raw["checkpoint_id"] is None and raw["first_raw_seq"] == 1
    # restart: the same state from the events; a new compaction builds on it
    h.reopen()
    assert projection(h) == raw
    third = compact(h)
    assert third["status"] == "compacted" and third["generation"] == result["context_generation"] + 2
    assert ok(h.do({"type": "replay_session", "session_id": SID}))["active_checkpoint_id"] == third["checkpoint_id"]


def test_an_invalidation_between_makes_revert_return_to_raw_history(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    compact(h)
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 18}))
    filler(h, 10, start=10)
    later = compact(h)
    assert ok(revert(h, later["checkpoint_id"]))["active_checkpoint_id"] is None
    p = projection(h)
    assert p["checkpoint_id"] is None and p["first_raw_seq"] == 1


def test_a_revert_during_a_slow_summary_makes_the_candidate_stale(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer(text="## Goal\nGo on.")
    h = start(make_harness, spy)
    filler(h, 10)
    first = compact(h)
    filler(h, 10, start=10)
    spy.entered.clear()
    spy.release = threading.Event()
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(h.do({"type": "compact", "session_id": SID})))
    worker.start()
    assert spy.entered.wait(10)
    other = h.new_bus()
    assert other.dispatch_json({"type": "revert_checkpoint", "session_id": SID,
                                "checkpoint_id": first["checkpoint_id"]})["ok"]
    events = h.events()
    spy.release.set()
    worker.join(15)
    assert result["ok"] is False and result["error"]["code"] == "stale_candidate", result
    assert h.events() == events
    listed = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert [(c["checkpoint_id"], c["reverted"]) for c in listed] == [(first["checkpoint_id"], True)]
    assert projection(h)["checkpoint_id"] is None


def test_a_retried_revert_answers_the_same(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    cp = compact(h)
    once = ok(revert(h, cp["checkpoint_id"], command_id="rv-1"))
    events = h.events()
    assert ok(revert(h, cp["checkpoint_id"], command_id="rv-1")) == once
    assert h.events() == events
    err(revert(h, "cp_other", command_id="rv-1"), "idempotency_conflict")


def test_replay_shows_the_revert(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    cp = compact(h)
    version = ok(revert(h, cp["checkpoint_id"]))["version"]

    def replay(at: int) -> dict:
        return ok(h.do({"type": "replay_session", "session_id": SID, "at_version": at}))

    assert replay(version - 1)["active_checkpoint_id"] == cp["checkpoint_id"]
    assert replay(version)["active_checkpoint_id"] is None
    assert replay(version)["context_generation"] == cp["generation"] + 1


@pytest.mark.backends("sqlite", "postgres")  # (its subject is the storage)
def test_pins_and_reverts_survive_snapshots_and_a_restart(make_harness: MakeHarness) -> None:
    h = make_harness("snap", snapshot_interval=2, adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                     context_compaction={"keep_recent_tokens": 400})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("keep this", pinned=True)]}))
    filler(h, 10)
    first = compact(h)
    filler(h, 10, start=10)
    second = compact(h)
    before = projection(h)
    assert before["messages"][1]["content"] == "keep this"
    h.reopen()  # the session is loaded from a snapshot that holds pins and the parent chain
    assert projection(h) == before
    assert ok(revert(h, second["checkpoint_id"]))["active_checkpoint_id"] == first["checkpoint_id"]
    after = projection(h)
    assert after["checkpoint_id"] == first["checkpoint_id"] and after["messages"][1]["content"] == "keep this"
    h.reopen()
    assert projection(h) == after

    report = h.inspect.verify()
    assert all(t.ok for t in report.tables.values()), report.tables
    assert report.tables["rm_pins"].rebuilt == 1 and report.tables["rm_reverts"].rebuilt == 1


# A revert's command id is unique across commands and sessions; revert then compact again
# builds on the parent.
@pytest.mark.backends("sqlite", "postgres")
def test_a_revert_command_id_is_unique_across_commands_and_sessions(make_harness: MakeHarness) -> None:
    h = rv_session(make_harness, adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")})
    ok(h.do({"type": "start_session", "session_id": "other", "model": "gpt-4o"}))
    for sid in (RV, "other"):
        rv_filler(h, 10, sid=sid)
    ok(h.do({"type": "append_messages", "session_id": RV, "command_id": "append-1", "messages": [user("x")]}))
    mine = ok(h.do({"type": "compact", "session_id": RV}))["checkpoint_id"]
    theirs = ok(h.do({"type": "compact", "session_id": "other"}))["checkpoint_id"]
    events = event_count(h)
    # an id an append used is not free for a revert
    err(h.do({"type": "revert_checkpoint", "session_id": RV, "checkpoint_id": mine,
              "command_id": "append-1"}), "idempotency_conflict")
    assert event_count(h) == events
    ok(h.do({"type": "revert_checkpoint", "session_id": RV, "checkpoint_id": mine, "command_id": "revert-1"}))
    events = event_count(h)
    # nor is a revert's id free for an append, a start or a revert in another session
    err(h.do({"type": "append_messages", "session_id": RV, "command_id": "revert-1",
              "messages": [user("y")]}), "idempotency_conflict")
    err(h.do({"type": "start_session", "session_id": "third", "model": "gpt-4o", "command_id": "revert-1"}),
        "idempotency_conflict")
    err(h.do({"type": "revert_checkpoint", "session_id": "other", "checkpoint_id": theirs,
              "command_id": "revert-1"}), "idempotency_conflict")
    assert event_count(h) == events
    # the same revert again still answers what it did
    again = ok(h.do({"type": "revert_checkpoint", "session_id": RV, "checkpoint_id": mine,
                     "command_id": "revert-1"}))
    assert again["active_checkpoint_id"] is None and event_count(h) == events


@pytest.mark.backends("sqlite", "postgres")
def test_revert_then_compact_again_builds_on_the_parent_and_reverts_back_to_it(make_harness: MakeHarness) -> None:
    h = rv_session(make_harness, adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")})
    rv_filler(h, 10)
    first = ok(h.do({"type": "compact", "session_id": RV}))
    rv_filler(h, 10, start=10)
    second = ok(h.do({"type": "compact", "session_id": RV}))
    ok(h.do({"type": "revert_checkpoint", "session_id": RV, "checkpoint_id": second["checkpoint_id"]}))
    third = ok(h.do({"type": "compact", "session_id": RV}))
    assert third["status"] == "compacted" and third["generation"] > second["generation"] + 1
    listed = {c["checkpoint_id"]: c for c in ok(h.do({"type": "list_checkpoints", "session_id": RV}))["checkpoints"]}
    assert listed[third["checkpoint_id"]]["parent_checkpoint_id"] == first["checkpoint_id"]
    assert [listed[c["checkpoint_id"]]["reverted"] for c in (first, second, third)] == [False, True, False]
    # the ledger goes on from the parent's: the reverted checkpoint's items are read again
    assert third["ledger"]["items_total"] >= first["ledger"]["items_total"]
    back = ok(h.do({"type": "revert_checkpoint", "session_id": RV, "checkpoint_id": third["checkpoint_id"]}))
    assert back["active_checkpoint_id"] == first["checkpoint_id"]
    projection = ok(h.do({"type": "get_projection", "session_id": RV}))
    assert projection["checkpoint_id"] == first["checkpoint_id"]
    assert projection["first_raw_seq"] == first["first_retained_seq"]
    err(h.do({"type": "revert_checkpoint", "session_id": RV, "checkpoint_id": second["checkpoint_id"]}),
        "invalid_command")


def test_a_fork_lists_a_checkpoint_its_parent_reverted_before_the_fork_as_reverted(
    make_harness: MakeHarness,
) -> None:
    h = start(make_harness)
    filler(h, 10)
    first = compact(h)
    filler(h, 10, start=10)
    second = compact(h)
    ok(revert(h, second["checkpoint_id"]))
    ok(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "f"}))

    def listed(sid: str) -> dict[str, bool]:
        return {c["checkpoint_id"]: c["reverted"]
                for c in ok(h.do({"type": "list_checkpoints", "session_id": sid}))["checkpoints"]}

    # the fork refuses to revert it as the parent does (it is not active): the listing
    # must not offer it as a live, never-reverted checkpoint
    assert listed("f") == {first["checkpoint_id"]: False, second["checkpoint_id"]: True}
    # the parent's revert after the fork is not the fork's
    ok(revert(h, first["checkpoint_id"]))
    assert listed("f") == {first["checkpoint_id"]: False, second["checkpoint_id"]: True}
    assert listed(SID) == {first["checkpoint_id"]: True, second["checkpoint_id"]: True}


def test_a_fork_and_its_parent_both_revert_the_checkpoint_they_share(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    filler(h, 10)
    first = compact(h)
    ok(h.do({"type": "fork_session", "session_id": SID, "new_session_id": "f"}))
    ok(revert(h, first["checkpoint_id"]))
    answer = h.do({"type": "revert_checkpoint", "session_id": "f", "checkpoint_id": first["checkpoint_id"]})
    assert answer["ok"], answer  # (was storage_error: rm_reverts keyed by checkpoint_id alone)

    def reverted(sid: str) -> dict[str, bool]:
        return {c["checkpoint_id"]: c["reverted"]
                for c in ok(h.do({"type": "list_checkpoints", "session_id": sid}))["checkpoints"]}

    assert reverted(SID) == reverted("f") == {first["checkpoint_id"]: True}
    if not h.is_memory:  # (the rows as replayed from the events: one per session)
        report = h.inspect.verify()
        assert all(t.ok for t in report.tables.values()), report.tables
        assert report.tables["rm_reverts"].rebuilt == 2
