"""Issue 43 under attack: what may and may not stale a dry run's candidate, committing
it twice or from two processes, a candidate of another session, partial compaction's
bad inputs; on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest

from backends import MakeHarness
from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, assistant, err, ok, user
from candidate_builders import SID, projection, tool_session

BACKENDS = ("memory", "sqlite", "postgres")


def _session(make_harness: MakeHarness, sid: str = SID, turns: int = 8, h: Harness | None = None) -> Harness:
    h = h or make_harness("rev", context_compaction={"keep_recent_tokens": 3000})
    ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    for t in coding_session(turns, big_output_chars=3_000):
        ok(h.do({"type": "append_messages", "session_id": sid, "messages": t.messages()}))
    return h


def _dry(h: Harness, sid: str = SID, **extra) -> dict:
    dry = ok(h.do({"type": "compact", "session_id": sid, "dry_run": True, **extra}))
    assert dry["status"] == "candidate"
    return dry


def _commit(h: Harness, dry: dict, sid: str = SID) -> dict:
    return h.do({"type": "commit_candidate", "session_id": sid, "candidate_id": dry["candidate_id"]})


def _stale_and_unchanged(h: Harness, dry: dict) -> None:
    before, events = projection(h), h.events()
    err(_commit(h, dry), "stale_candidate")
    assert projection(h) == before and h.events() == events


# ------------------------------------------------- what moves the generation
def test_a_revert_after_the_dry_run_stales_it(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    done = ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": 8}))
    dry = _dry(h)
    ok(h.do({"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": done["checkpoint_id"]}))
    _stale_and_unchanged(h, dry)
    h.close()


def test_another_compaction_after_the_dry_run_stales_it(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = _dry(h)
    ok(h.do({"type": "compact", "session_id": SID}))
    _stale_and_unchanged(h, dry)
    h.close()


def test_a_rewind_after_the_dry_run_stales_it(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = _dry(h)
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 30}))
    _stale_and_unchanged(h, dry)
    h.close()


def test_an_overflow_recovery_after_the_dry_run_stales_it(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = _dry(h)
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    recovered = ok(h.do({
        "type": "recover_overflow", "session_id": SID, "request_id": request["request_id"],
        "error_message": "This model's maximum context length is 9000 tokens. "
                         f"However, your messages resulted in {request['usage']['used_tokens'] + 1} tokens",
    }))
    assert recovered["compaction"]["status"] == "compacted"
    _stale_and_unchanged(h, dry)
    h.close()


# ------------------------------------------- what leaves the generation alone
def test_a_pin_and_an_unpin_after_the_dry_run_keep_it(make_harness: MakeHarness) -> None:
    """Pins do not change what history means (the summary stays true; a pinned message
    is shown verbatim beside it): the candidate commits, and the pin is honoured."""
    h = _session(make_harness)
    dry = _dry(h)
    ok(h.do({"type": "pin_messages", "session_id": SID, "seqs": [1, 2]}))
    ok(h.do({"type": "unpin_messages", "session_id": SID, "seqs": [2]}))
    done = ok(_commit(h, dry))
    assert done["status"] == "compacted"
    assert done["first_retained_seq"] > 2  # seq 1 is summarized ...
    p = projection(h)
    assert p["checkpoint_id"] == done["checkpoint_id"]
    first = coding_session(8, big_output_chars=3_000)[0].messages()[0]["content"]
    shown = [m["content"] for m in p["messages"]]
    assert first in shown  # ... and, pinned, still shown verbatim
    assert ok(h.do({"type": "replay_session", "session_id": SID}))["context_generation"] == 1
    h.close()


def test_configuring_another_model_after_the_dry_run_keeps_it(make_harness: MakeHarness) -> None:
    """The model is a budget input, not history: the generation does not move."""
    h = _session(make_harness)
    dry = _dry(h)
    ok(h.do({"type": "configure_session", "session_id": SID, "model": "claude-sonnet-4-5"}))
    assert ok(_commit(h, dry))["status"] == "compacted"
    h.close()


def test_a_deleted_session_refuses_the_commit(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = _dry(h)
    ok(h.do({"type": "delete_session", "session_id": SID}))
    events = h.events()
    code = _commit(h, dry)["error"]["code"]
    assert code in ("session_deleted", "session_not_found")
    assert h.events() == events
    h.close()


# ------------------------------------------------------ twice, two processes
def test_a_candidate_commits_once(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = _dry(h)
    first = ok(_commit(h, dry))
    events = h.events()
    err(_commit(h, dry), "stale_candidate")
    assert h.events() == events
    assert projection(h)["checkpoint_id"] == first["checkpoint_id"]
    h.close()


def test_two_processes_commit_the_same_candidate_at_once(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = _dry(h)
    buses = [h.new_bus(), h.new_bus()]
    barrier = threading.Barrier(2)
    answers: list[dict] = []

    def commit(bus) -> None:
        barrier.wait()
        answers.append(bus.dispatch_json({"type": "commit_candidate", "session_id": SID,
                                          "candidate_id": dry["candidate_id"]}))

    threads = [threading.Thread(target=commit, args=(b,)) for b in buses]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [a for a in answers if a.get("ok")]
    lost = [a for a in answers if not a.get("ok")]
    assert len(won) == 1, answers
    assert all(a["error"]["code"] == "stale_candidate" for a in lost)
    checkpoints = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert len(checkpoints) == 1
    h.close()


def test_a_candidate_of_another_session_is_refused(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    _session(make_harness, sid="other", h=h)
    dry = _dry(h, sid="other")
    before, events = projection(h), h.events()
    err(_commit(h, dry, sid=SID), "invalid_command")
    assert projection(h) == before and h.events() == events
    # ... and still commits in its own session
    assert ok(_commit(h, dry, sid="other"))["status"] == "compacted"
    h.close()


def test_a_dry_run_writes_no_session_event(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    events = h.events()
    for _ in range(3):
        _dry(h)
    _dry(h, fraction=0.3)
    assert h.events() == events
    assert projection(h)["checkpoint_id"] is None
    h.close()


# --------------------------------------------------------- partial, bad input
@pytest.mark.parametrize("bad", [
    {"fraction": 0}, {"fraction": 1}, {"fraction": -0.5}, {"fraction": 1.5},
    {"fraction": float("nan")}, {"fraction": float("inf")}, {"fraction": "half"}, {"fraction": True},
    {"up_to_seq": 0}, {"up_to_seq": -3}, {"up_to_seq": 4.5}, {"up_to_seq": "4"},
    {"up_to_seq": 8, "fraction": 0.5},
    {"up_to_seq": 8, "fraction": None, "dry_run": "yes"},
])
def test_bad_partial_input_is_invalid_command_and_changes_nothing(make_harness: MakeHarness, bad: dict) -> None:
    h = tool_session(make_harness)
    before, events = projection(h), h.events()
    err(h.do({"type": "compact", "session_id": SID, **bad}), "invalid_command")
    assert projection(h) == before and h.events() == events
    assert ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"] == []
    h.close()


def test_up_to_seq_before_the_active_boundary_is_refused(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    done = ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": 12}))
    assert done["first_retained_seq"] == 13
    before, events = projection(h), h.events()
    for seq in (4, 12):
        answer = h.do({"type": "compact", "session_id": SID, "up_to_seq": seq})
        err(answer, "invalid_command")
        assert "13" in answer["error"]["message"]
    assert projection(h) == before and h.events() == events
    h.close()


def test_up_to_seq_after_the_last_message_is_refused(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    before, events = projection(h), h.events()
    answer = h.do({"type": "compact", "session_id": SID, "up_to_seq": 25})
    err(answer, "invalid_command")
    assert "24" in answer["error"]["message"]
    assert projection(h) == before and h.events() == events
    h.close()


def test_up_to_the_last_seq_keeps_the_newest_turn(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    done = ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": 24}))
    assert done["status"] == "compacted" and done["first_retained_seq"] == 21 and done["kept_turns"] == 1
    h.close()


def test_a_tiny_fraction_still_takes_the_oldest_turn_whole(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    done = ok(h.do({"type": "compact", "session_id": SID, "fraction": 1e-9}))
    assert done["first_retained_seq"] == 5  # the oldest turn with its tool group
    done = ok(h.do({"type": "compact", "session_id": SID, "fraction": 0.999999}))
    assert done["first_retained_seq"] == 21  # never the newest complete turn
    h.close()


def test_a_candidate_committed_after_appends_reports_the_context_it_compacted(make_harness: MakeHarness) -> None:
    """Tokens before and after are measured when the candidate is committed, as any
    compaction's: the messages appended since the dry run are in both."""
    h = _session(make_harness)
    dry = _dry(h)
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [user("one more question " * 100), assistant("one more answer " * 100)]}))
    grown = ok(h.do({"type": "get_context_usage", "session_id": SID}))["used_tokens"]
    done = ok(_commit(h, dry))
    assert done["tokens_before"] == grown > dry["tokens_before"]
    assert done["tokens_after"] == ok(h.do({"type": "get_context_usage", "session_id": SID}))["used_tokens"]
    assert done["tokens_after"] - dry["tokens_after"] == grown - dry["tokens_before"]
    assert f"{grown:,} ->" in done["report"]
    assert done["kept_turns"] == dry["kept_turns"] + 1
    h.close()
