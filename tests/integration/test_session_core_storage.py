"""The session core: seqs, raw history, idempotency, restore, replay, rebuild (issue 2)."""

from __future__ import annotations

import threading

import pytest

from context_compaction import ContextCompactionError, commands
from context_compaction.infrastructure.readmodel.schema import SCHEMA_VERSION
from helpers import Harness, assistant, err, fingerprint, ok, tool, user
from session_core_builders import start, append, history, projection, coding_turn


# ------------------------------------------------------------------ seqs


# ----------------------------------------------------------- idempotency


# -------------------------------------------------------------- restore
def test_a_new_bus_on_the_same_file_yields_an_identical_projection(harness: Harness) -> None:
    start(harness)
    for n in range(3):
        append(harness, "s1", *coding_turn(n))
    ok(harness.do({"type": "invalidate_history", "session_id": "s1", "kind": "delete", "seqs": [1]}))
    live = projection(harness)
    harness.reopen()
    assert projection(harness) == live


# --------------------------------------------------------------- replay


# -------------------------------------------------------------- rebuild
@pytest.mark.backends("memory", "sqlite", "postgres")  # (each backend's rebuild)
def test_read_model_dropped_and_rebuilt_from_events_equals_the_live_one(harness: Harness) -> None:
    start(harness)
    start(harness, "s2", "claude-sonnet-4-5")
    for n in range(2):
        append(harness, "s1", *coding_turn(n), command_id=f"k{n}")
        append(harness, "s2", *coding_turn(n))
    ok(harness.do({"type": "invalidate_history", "session_id": "s2", "kind": "delete", "seqs": [1]}))
    ok(harness.do({"type": "delete_session", "session_id": "s1"}))
    before = fingerprint(harness.bus)
    read_model = harness.bus.services.read_model
    read_model.rebuild()
    assert fingerprint(harness.bus) == before


def test_read_model_catches_up_from_events_it_has_not_seen(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1))
    live = projection(harness)
    for table in ("rm_sessions", "rm_messages", "rm_commands", "rm_position"):  # as if lost
        harness.execute(f"DELETE FROM {{t}}{table}")
    harness.reopen()
    assert projection(harness) == live


def test_a_read_model_of_an_older_schema_is_rebuilt_from_the_events(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", *coding_turn(1), command_id="k1")
    live, history = projection(harness), harness.do({"type": "get_history", "session_id": "s1"})
    # What schema 14 left: rm_reverts keyed by checkpoint_id alone (ADR 0093), and its
    # mark. Nothing is altered in place (issue 37): the read model is rebuilt from the
    # events, so an emptied table comes back whole.
    harness.execute("DROP TABLE {t}rm_reverts")
    harness.execute(
        "CREATE TABLE {t}rm_reverts (checkpoint_id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
        " version {INT} NOT NULL, now_active TEXT, generation {INT} NOT NULL, command_id TEXT,"
        " created_at TEXT NOT NULL)"
    )
    harness.execute("DELETE FROM {t}rm_messages")
    harness.execute("UPDATE {t}rm_position SET notification_id = ? WHERE name = 'schema'", (SCHEMA_VERSION - 1,))
    harness.reopen()
    assert projection(harness) == live
    assert harness.do({"type": "get_history", "session_id": "s1"}) == history
    assert append(harness, "s1", user("after the upgrade")) == [len(history["result"]["messages"]) + 1]
    assert append(harness, "s1", *coding_turn(1), command_id="k1") == list(
        range(1, len(history["result"]["messages"]) + 1)
    )  # the command ids were rebuilt too
    assert harness.query("SELECT notification_id FROM {t}rm_position WHERE name = 'schema'") == [(SCHEMA_VERSION,)]
    # the new key: one revert row per (session, checkpoint)
    for sid in ("s1", "s2"):
        harness.execute("INSERT INTO {t}rm_reverts VALUES ('c', ?, 1, NULL, 0, NULL, 'now')", (sid,))
    assert harness.count("rm_reverts") == 2


def test_cache_writes_skip_the_flush_and_hand_the_connection_back_durable(harness: Harness) -> None:
    db = harness.inspect.db
    setting, durable = (
        ("SHOW synchronous_commit", ("on",)) if harness.is_postgres else ("PRAGMA synchronous", (2,))
    )
    with db.write(durable=False) as cur:
        assert cur.execute(setting).fetchone() != durable
    with db.write() as cur:
        assert cur.execute(setting).fetchone() == durable
    with pytest.raises(RuntimeError), db.write(durable=False):
        raise RuntimeError("a cache write that fails")
    with db.write() as cur:
        assert cur.execute(setting).fetchone() == durable
    # The token cache is such a write, and its rows are there.
    start(harness)
    append(harness, "s1", user("count me"))
    ok(harness.do({"type": "prepare_turn", "session_id": "s1"}))
    assert harness.count("rm_token_counts") >= 1


# ---------------------------------------------------------- concurrency
@pytest.mark.backends("memory", "sqlite", "postgres")  # (the store's concurrency, on each)
def test_two_buses_appending_concurrently_lose_nothing_and_never_duplicate_a_seq(harness: Harness) -> None:
    start(harness)
    buses = [harness.new_bus(), harness.new_bus()]
    acknowledged: list[tuple[str, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(bus_index: int) -> None:
        bus = buses[bus_index]
        try:
            for i in range(40):
                text = f"w{bus_index}-{i}"
                result = bus.dispatch(commands.AppendMessages(
                    session_id="s1", messages=[{"role": "user", "content": text}]))
                with lock:
                    acknowledged.append((text, result.seqs[0]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stored = history(harness)
    assert len(stored) == 80
    assert [m["seq"] for m in stored] == list(range(1, 81))
    by_text = {m["content"]: m["seq"] for m in stored}
    assert len(by_text) == 80
    for text, seq in acknowledged:
        assert by_text[text] == seq


# --------------------------------------------------------------- errors


def test_storage_failure_mid_command_rolls_the_events_back(harness: Harness) -> None:
    start(harness)
    append(harness, "s1", user("hello"))
    events = harness.events()
    harness.execute("ALTER TABLE {t}rm_messages RENAME TO rm_messages_away")  # the table is gone
    err(harness.do({"type": "append_messages", "session_id": "s1", "messages": [user("lost?")]}),
        "storage_error")
    assert harness.events() == events
    harness.execute("ALTER TABLE {t}rm_messages_away RENAME TO rm_messages")
    assert append(harness, "s1", user("retried")) == [2]


def test_the_hosts_eventsourcing_environment_does_not_reconfigure_our_store(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    # A host process that also runs eventsourcing (in memory, compressed) for itself.
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.popo")
    monkeypatch.setenv("COMPRESSOR_TOPIC", "eventsourcing.compressor:ZlibCompressor")
    h = Harness(tmp_path / "host.db")
    start(h)
    append(h, "s1", user("kept on disk as plain JSON"))
    h.reopen()
    assert [m["content"] for m in history(h)] == ["kept on disk as plain JSON"]
    with sqlite3.connect(tmp_path / "host.db") as conn:
        states = [bytes(r[0]) for r in conn.execute("SELECT state FROM stored_events")]
    assert any(b'"kept on disk as plain JSON"' in s for s in states)
