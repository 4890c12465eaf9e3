"""Command ids exactly per CONTRACT.md (issue 12, ADR 0019).

A ``command_id`` is unique across all sessions. The same command again returns the
original result; the same id with another payload, for another session or another
command is ``idempotency_conflict`` and changes nothing. Host ids are never mistaken
for the ids we generate.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from context_compaction.application.contracts import commands as c
from context_compaction.application.contracts.ports import ProviderReply
from context_compaction.application.agent.runner import TurnRunner
from context_compaction.domain.session_state import COMMAND_WINDOW
from helpers import Harness, assistant, err, fingerprint, ok, user

TURN = [user("Fix the flaky refund test."), assistant("It races on the ledger lock.")]


def start(h: Harness, sid: str, **extra) -> dict:
    return ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o", **extra}))


def append(h: Harness, sid: str, messages, command_id: str | None = None) -> dict:
    command = {"type": "append_messages", "session_id": sid, "messages": messages}
    if command_id is not None:
        command["command_id"] = command_id
    return h.do(command)


def test_the_same_append_again_returns_the_original_seqs_and_writes_nothing(harness: Harness) -> None:
    h = harness
    start(h, "a")
    first = ok(append(h, "a", TURN, "k1"))
    before = fingerprint(h.bus)
    again = ok(append(h, "a", TURN, "k1"))
    assert again["seqs"] == first["seqs"] == [1, 2] and again["duplicate"] is True
    assert fingerprint(h.bus) == before


@pytest.mark.parametrize("other", [
    [user("Fix the flaky refund test."), assistant("Something else.")],
    [user("Fix the flaky refund test.")],
    [user("Fix the flaky refund test."), assistant("It races on the ledger lock."), user("and?")],
    [user("Fix the flaky refund test.", turn_id="t9"), assistant("It races on the ledger lock.")],
], ids=["other-text", "fewer", "more", "other-turn-id"])
def test_a_reused_append_id_with_other_messages_is_a_conflict_and_changes_nothing(harness: Harness, other) -> None:
    h = harness
    start(h, "a")
    ok(append(h, "a", TURN, "k1"))
    before = fingerprint(h.bus)
    e = err(append(h, "a", other, "k1"), "idempotency_conflict")
    assert e["details"] == {"command_id": "k1"}
    assert fingerprint(h.bus) == before


def test_a_command_id_is_unique_across_sessions(harness: Harness) -> None:
    h = harness
    start(h, "a")
    start(h, "b")
    ok(append(h, "a", TURN, "k1"))
    before = fingerprint(h.bus)
    err(append(h, "b", TURN, "k1"), "idempotency_conflict")  # even with the same messages
    assert fingerprint(h.bus) == before
    assert ok(h.do({"type": "get_history", "session_id": "b"}))["messages"] == []
    err(h.do({"type": "start_session", "session_id": "c", "model": "gpt-4o", "command_id": "k1"}),
        "idempotency_conflict")
    assert fingerprint(h.bus) == before


def test_start_session_again_returns_the_original_and_other_settings_conflict(harness: Harness) -> None:
    h = harness
    first = start(h, "s9", command_id="st")
    before = fingerprint(h.bus)
    assert start(h, "s9", command_id="st") == first
    for changed in ({"model": "gpt-4o-mini"}, {"agent_token_limit": 8_000}):
        err(h.do({"type": "start_session", "session_id": "s9", "model": "gpt-4o", "command_id": "st", **changed}),
            "idempotency_conflict")
    err(h.do({"type": "start_session", "session_id": "s10", "model": "gpt-4o", "command_id": "st"}),
        "idempotency_conflict")
    err(append(h, "s9", TURN, "st"), "idempotency_conflict")  # a start's id is not an append's
    assert fingerprint(h.bus) == before
    # A later reconfiguration does not turn the original start into a conflict.
    ok(h.do({"type": "configure_session", "session_id": "s9", "model": "gpt-4o-mini"}))
    assert start(h, "s9", command_id="st")["session_id"] == "s9"


def test_a_host_id_that_looks_generated_stays_idempotent_past_the_aggregates_window(tmp_path) -> None:
    """Before, host ids starting with ``auto_`` were taken for ours and forgotten."""
    h = Harness(tmp_path / "w.db", summarizer="extractive")  # 500+ commands: SQLite is enough
    start(h, "a")
    first = ok(append(h, "a", TURN, "auto_0123456789abcdef01234567"))
    for i in range(COMMAND_WINDOW + 3):  # push the id out of the aggregate's window
        h.bus.dispatch(c.AppendMessages(session_id="a", command_id=f"w{i}", messages=[user("x")]))
    events = h.events()
    again = ok(append(h, "a", TURN, "auto_0123456789abcdef01234567"))
    assert again["seqs"] == first["seqs"] and again["duplicate"] is True
    assert h.events() == events


def test_generated_ids_are_remembered_by_the_aggregate_only(harness: Harness) -> None:
    h = harness
    start(h, "a", command_id="st")
    ok(append(h, "a", TURN))
    ok(append(h, "a", TURN, "host-1"))
    rows = h.query("SELECT command_id, kind, first_seq, last_seq FROM {t}rm_commands ORDER BY command_id")
    assert [tuple(r) for r in rows] == [("host-1", "append_messages", 3, 4), ("st", "start_session", 0, 0)]


def test_events_written_before_the_marker_are_upcast_by_their_prefix(harness: Harness) -> None:
    """Stored version-1 events (no ``command_generated``) still load; their ``auto_`` ids
    are ours, any other id is the host's — as those versions wrote them."""
    h = harness
    start(h, "a")
    ok(append(h, "a", [user("generated")]))
    ok(append(h, "a", [user("hosted")], "host-1"))
    _, app = h._db()
    table, id_column = app.projector.events_table.qualified, app.projector.events_table.id_column
    rows = h.query(f"SELECT {id_column}, state FROM {table} WHERE topic = ?",
                   ("context_compaction:Session.MessageAppended",))
    for notification_id, state in rows:
        old = json.loads(bytes(state))
        assert old.pop("class_version") == 2 and "command_generated" in old
        del old["command_generated"]
        h.execute(f"UPDATE {table} SET state = ? WHERE {id_column} = ?",
                  (json.dumps(old).encode(), notification_id))
    h.bus.services.read_model.rebuild()
    rows = h.query("SELECT command_id FROM {t}rm_commands WHERE kind = 'append_messages'")
    assert [r[0] for r in rows] == ["host-1"]
    h.reopen()  # the aggregate is loaded from the version-1 events
    assert ok(append(h, "a", [user("hosted")], "host-1"))["duplicate"] is True
    assert ok(append(h, "a", [user("after")], "host-2"))["seqs"] == [3]
    assert [m["content"] for m in ok(h.do({"type": "get_history", "session_id": "a"}))["messages"]] == [
        "generated", "hosted", "after"]


def test_concurrent_uses_of_one_id_in_two_sessions_store_only_one(harness: Harness) -> None:
    h = harness
    for sid in ("a", "b"):
        start(h, sid)
    buses = [h.new_bus(), h.new_bus()]

    def length(sid: str) -> int:
        return len(ok(h.do({"type": "get_history", "session_id": sid}))["messages"])

    for round_ in range(4):
        barrier = threading.Barrier(2)
        results: dict[str, dict] = {}
        lengths = {sid: length(sid) for sid in ("a", "b")}

        def go(bus, sid: str) -> None:
            barrier.wait()
            results[sid] = bus.dispatch_json({"type": "append_messages", "session_id": sid,
                                              "command_id": f"race-{round_}", "messages": [user(sid)]})

        threads = [threading.Thread(target=go, args=(bus, sid)) for bus, sid in zip(buses, ("a", "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        outcomes = sorted("ok" if r["ok"] else r["error"]["code"] for r in results.values())
        assert outcomes == ["idempotency_conflict", "ok"], results
        winner = next(sid for sid, r in results.items() if r["ok"])
        loser = "b" if winner == "a" else "a"
        assert (length(winner), length(loser)) == (lengths[winner] + 1, lengths[loser])
        row = h.query("SELECT session_id FROM {t}rm_commands WHERE command_id = ?", (f"race-{round_}",))
        assert [r[0] for r in row] == [winner]


class _Chat:
    """A chat provider that answers every step with the same text (records the calls)."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, *, model, messages, tools) -> ProviderReply:
        self.calls += 1
        return ProviderReply(message={"role": "assistant", "content": "done"}, prompt_tokens=None)


async def _no_tools(call) -> str:
    return ""


def test_the_turn_runner_can_reuse_a_turn_id_in_another_session(harness: Harness) -> None:
    h = harness
    runner = TurnRunner(h.bus, _Chat(), _no_tools)
    for sid in ("a", "b"):
        start(h, sid)
        result = asyncio.run(runner.run(sid, "hello", turn_id="t1" * 200))  # long ids too
        assert result.answer == "done"
        assert len(ok(h.do({"type": "get_history", "session_id": sid}))["messages"]) == 2
