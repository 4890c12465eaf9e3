"""The Session aggregate after a restart from a snapshot behaves exactly as
the held copy that saw every event (ADR 0051: state bounded by the open work).

One script of commands runs on two databases: one bus that never restarts, and one
restarted before every command (so the aggregate comes from a snapshot, and the events
after it, every time). Every answer and the final history/projection must be equal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest

from backends import Databases, MakeHarness
from helpers import (
    CheckpointNames,
    Harness,
    RecordingSummarizer,
    assistant,
    normal_answer,
    read_turns,
    tool,
    user,
)

SID = "r18"
_VOLATILE = {"created_at", "at", "updated_at", "request_id", "duration_ms", "snippet", "score"}


Step = Callable[[dict[str, Any]], dict[str, Any]]


def script() -> list[Step]:
    def active(state: dict[str, Any]) -> Any:
        return state["active"]

    late = [user("start the slow ones"), assistant(None, [("late1", "slow", "{}"), ("late2", "slow", "{}")])]
    return [
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(0, 10)},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": late},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(10, 10)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("late1", "slow one done", name="slow")]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(20, 10)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": active(s)},
        lambda s: {"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": active(s)},
        lambda s: {"type": "pin_messages", "session_id": SID, "seqs": [50]},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": active(s)},
        lambda s: {"type": "pin_messages", "session_id": SID, "seqs": [7]},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [11]},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [11],
                   "expand_tool_groups": True},
        lambda s: {"type": "unpin_messages", "session_id": SID, "seqs": [6]},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("late2", "slow two done", name="slow")]},
        lambda s: {"type": "pin_messages", "session_id": SID, "seqs": [15, 19]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(30, 10)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 22},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("c5", "again", name="read")]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("late1", "again", name="slow")]},
        lambda s: {"type": "pin_messages", "session_id": SID, "seqs": [22]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(60, 6)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 6},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("c5", "hidden call", name="read")]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("c1", "c1 again", name="read")]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(70, 8)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "pin_messages", "session_id": SID, "seqs": [6]},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [6]},
        lambda s: {"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": active(s)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(40, 10)},
        lambda s: {"type": "compact", "session_id": SID},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [30]},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [2, 3],
                   "expand_tool_groups": True},
        lambda s: {"type": "prepare_turn", "session_id": SID, "system_prompt": "Be careful."},
        lambda s: {"type": "invalidate_history", "session_id": SID, "kind": "clear"},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": [tool("c45", "after clear", name="read")]},
        lambda s: {"type": "append_messages", "session_id": SID, "messages": read_turns(50, 3)},
    ]


READS = [
    {"type": "get_history", "session_id": SID, "include_invalidated": True},
    {"type": "get_projection", "session_id": SID},
    {"type": "list_checkpoints", "session_id": SID},
    {"type": "get_context_usage", "session_id": SID},
]


def run(h: Harness, restart: bool) -> list[Any]:
    ids = CheckpointNames(keep=(SID,))
    state: dict[str, Any] = {"active": None}
    started = h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"})
    out: list[Any] = [normal_answer(started, ids, _VOLATILE)]
    for i, step in enumerate(script()):
        # (list_checkpoints reads the read model only: the restart that matters is the
        # one before the command, which must load the aggregate from its snapshot)
        state["active"] = h.do({"type": "list_checkpoints", "session_id": SID})["result"]["active_checkpoint_id"]
        if restart:
            h.reopen()
        answer = h.do(step(state))
        if not answer["ok"]:
            answer["error"].pop("message", None)
        out.append((i, normal_answer(answer, ids, _VOLATILE)))
    if restart:
        h.reopen()
    out += [("read", normal_answer(h.do(read), ids, _VOLATILE)) for read in READS]
    return out


def harness_for(make_harness: MakeHarness, name: str, interval: int) -> Harness:
    return make_harness(name, snapshot_interval=interval,
                        adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                        context_compaction={"keep_recent_tokens": 300})


@pytest.fixture(scope="module")
def held_copies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeldCopies]:
    """The held copy's answers, one run per backend and worker: a bus that never restarts
    never reads a snapshot, so its answers do not depend on the snapshot interval (every
    test of this module compares with the same run; each used to run its own)."""
    copies = HeldCopies(tmp_path_factory)
    yield copies
    copies.cleanup()


class HeldCopies:
    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.answers: dict[str, list[Any]] = {}
        self.databases: list[Databases] = []

    def of(self, backend: str) -> list[Any]:
        if backend not in self.answers:
            dbs = Databases(backend, self.tmp_path_factory.mktemp(f"held-{backend}"))
            self.databases.append(dbs)
            # (no snapshot ever: the reference saw every event)
            self.answers[backend] = run(harness_for(dbs.harness, "held", 10**6), restart=False)
        return self.answers[backend]

    def cleanup(self) -> None:
        for dbs in self.databases:
            dbs.cleanup()


# Which snapshot a restart loads, and how many events follow it, is decided by the
# domain and the transcoder, alike on both databases: SQLite runs every interval;
# PostgreSQL, where each restart costs a pool and a schema check, runs a restart from
# the snapshot alone (1) and one with events after it (5).
@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("interval", [1, 2, 3, 5, 8])
def test_every_answer_after_restarts_from_snapshots_equals_the_held_copys(
    make_harness: MakeHarness, backend: str, held_copies: HeldCopies, interval: int
) -> None:
    restarts_equal_the_held_copy(make_harness, held_copies.of(backend), interval)


@pytest.mark.backends("postgres")
@pytest.mark.parametrize("interval", [1, 5])
def test_every_answer_after_restarts_from_postgresql_snapshots_equals_the_held_copys(
    make_harness: MakeHarness, backend: str, held_copies: HeldCopies, interval: int
) -> None:
    restarts_equal_the_held_copy(make_harness, held_copies.of(backend), interval)


def restarts_equal_the_held_copy(make_harness: MakeHarness, held: list[Any], interval: int) -> None:
    restarted = run(harness_for(make_harness, "restarted", interval), restart=True)
    assert len(held) == len(restarted)
    for a, b in zip(held, restarted):
        assert a == b


# ------------------------------------------------ a snapshot written before ADR 0051
def _old_shape_snapshot(h: Harness) -> None:
    """Rewrite the session's newest snapshot as a binary before ADR 0051 wrote it: every
    tool group in ``tool_groups``, no ``archived_upto``."""
    import orjson

    from context_compaction.domain.session import session_aggregate_id

    app, db = h.inspect.app, h.inspect.db
    full = h.bus.services.events.load_complete(SID)
    groups = [{"seq": g.seq, "calls": list(g.calls), "results": [[s, c] for s, c in g.results]}
              for g in full.all_tool_groups()]
    table = app.snapshots.recorder.events_table_name
    oid = session_aggregate_id(SID)
    oid = oid if h.is_postgres else oid.hex
    with db.read() as cur:
        version, state = cur.execute(
            f"SELECT originator_version, state FROM {{t}}{table} WHERE originator_id = ?"
            " ORDER BY originator_version DESC LIMIT 1", (oid,)).fetchone()
    assert version == full.version  # (snapshot_interval=1: the newest is the session's state)
    stored = orjson.loads(bytes(state))
    assert stored["state"].get("archived_upto", 0) > 0  # the new shape had moved groups out
    stored["state"]["tool_groups"] = groups
    stored["state"].pop("archived_upto", None)
    with db.write() as cur:
        cur.execute(f"UPDATE {{t}}{table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                    (orjson.dumps(stored), oid, version))


# Reading a snapshot of the old shape is the domain's and the transcoder's work, alike
# on both databases: SQLite rewrites it at four points of the script, PostgreSQL at one.
@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("old_at", [8, 13, 19, 28])
def test_after_an_old_shape_snapshot_every_answer_equals_the_held_copys(
    make_harness: MakeHarness, backend: str, held_copies: HeldCopies, old_at: int
) -> None:
    old_shape_answers_equal_the_held_copy(make_harness, held_copies.of(backend), old_at)


@pytest.mark.backends("postgres")
@pytest.mark.parametrize("old_at", [13])
def test_after_an_old_shape_postgresql_snapshot_every_answer_equals_the_held_copys(
    make_harness: MakeHarness, backend: str, held_copies: HeldCopies, old_at: int
) -> None:
    old_shape_answers_equal_the_held_copy(make_harness, held_copies.of(backend), old_at)


def old_shape_answers_equal_the_held_copy(make_harness: MakeHarness, held: list[Any], old_at: int) -> None:
    h, ids = harness_for(make_harness, "old", 1), CheckpointNames(keep=(SID,))
    started = h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"})
    out: list[Any] = [normal_answer(started, ids, _VOLATILE)]
    state: dict[str, Any] = {}
    for i, step in enumerate(script()):
        if i == old_at:
            _old_shape_snapshot(h)
            h.settings["snapshot_interval"] = 10**6  # (no newer snapshot: the old one stays in use)
        if i >= old_at:
            h.reopen()
        state["active"] = h.do({"type": "list_checkpoints", "session_id": SID})["result"]["active_checkpoint_id"]
        answer = h.do(step(state))
        if not answer["ok"]:
            answer["error"].pop("message", None)
        out.append((i, normal_answer(answer, ids, _VOLATILE)))
    out += [("read", normal_answer(h.do(read), ids, _VOLATILE)) for read in READS]
    assert len(held) == len(out)
    for a, b in zip(held, out):
        assert a == b


def test_snapshots_switched_on_for_a_database_made_without_them(make_harness: MakeHarness) -> None:
    """A database created with ``snapshot_interval=0`` has no snapshots table; a start
    with snapshots on creates it, though the schema mark is current (review of ADR
    0090: every command failed with UndefinedTable / SQLITE_ERROR)."""
    h: Harness = make_harness(snapshot_interval=0)
    assert h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"})["ok"]
    h.bus.close()
    h.settings["snapshot_interval"] = 2
    h.bus = h.new_bus()
    assert h.do({"type": "start_session", "session_id": "b", "model": "gpt-4o"})["ok"]
    for i in range(5):
        answer = h.do({"type": "append_messages", "session_id": "a", "messages": [user(f"m{i}")]})
        assert answer["ok"], answer
    h.bus = h.reopen()
    answer = h.do({"type": "get_history", "session_id": "a"})
    assert answer["ok"] and len(answer["result"]["messages"]) == 5, answer
