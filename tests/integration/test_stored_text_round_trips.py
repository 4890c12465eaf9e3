"""What PostgreSQL's write path stores reads back (tests of ADR 0061, kept since ADR 0073
replaced that write path): hostile texts and encodings read back, the largest message round-trips,
writers racing on one session never deadlock, and snapshot steps grow with the tool
groups a snapshot holds (``snapshot_step``).

Tests that fail mark a defect; the others pin what held under attack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL, MakeHarness
from cli_inprocess import run_cli
from helpers import CheckpointNames, Harness, assistant, in_thread, normal_answer, ok, tool, user
from harness import Inspect

# ------------------------------------------------------------------ helpers
_VOLATILE = {"created_at", "at", "updated_at", "request_id", "duration_ms", "snippet", "score", "timestamp"}


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _history(h: Harness, sid: str) -> list[dict[str, Any]]:
    return ok(h.do({"type": "get_history", "session_id": sid, "include_invalidated": True}))["messages"]


def _contents(h: Harness, sid: str) -> list[Any]:
    return [(m["seq"], m["role"], m.get("content")) for m in _history(h, sid)]


def _consistent(h: Harness) -> None:
    """rm_sessions agrees with the events: every message row belongs to a session row
    and points at a stored event; counts, next seq and version match the events."""
    app = h.inspect.app
    events = app.projector.events_table.qualified
    orphans = h.query(
        "SELECT m.session_id, m.seq FROM {t}rm_messages m LEFT JOIN {t}rm_sessions s ON s.session_id = m.session_id"
        f" LEFT JOIN {events} e ON e.notification_id = m.notification_id"
        " WHERE s.session_id IS NULL OR e.notification_id IS NULL"
    )
    assert orphans == [], orphans[:5]
    for sid, aggregate, count, next_seq, version in h.query(
        "SELECT session_id, aggregate_id, message_count, next_seq, version FROM {t}rm_sessions"
    ):
        rows = h.query("SELECT count(*), coalesce(max(seq), 0) FROM {t}rm_messages WHERE session_id = ?", (sid,))
        assert rows == [(count, next_seq - 1)], (sid, rows, count, next_seq)
        stored = h.query(
            f"SELECT max(originator_version) FROM {events} WHERE replace(originator_id::text, '-', '') = ?",
            (aggregate,))
        assert stored == [(version,)], (sid, stored, version)


def _verify_ok(h: Harness) -> None:
    assert run_cli(["verify", "--db", h.url]) == 0


# Session ids and texts the binary text arrays carry: multi-byte and 4-byte UTF-8, the
# longest id the contract allows, characters every UTF-8 length and control characters.
SESSION_IDS = [
    "café-naïve",
    "日本語のセッション",
    "emoji-😀-𝄞-\U0010fffd",
    "ø" * 256,
    "tab\there\u2028line",
]


def _every_char_text() -> str:
    # Every code point of the first two planes but the surrogates and NUL, and a few
    # astral ones: the state's UTF-8 holds every byte value a UTF-8 text can.
    chars = [chr(c) for c in range(1, 0x11000, 7) if not 0xD800 <= c <= 0xDFFF]
    return "".join(chars) + "\U0001f600\U0010ffff"


# =================================================================== binary arrays
@pytest.mark.postgres
def test_a_latin1_client_encoding_keeps_message_rows_on_their_session(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose libpq connections use another client encoding (``PGCLIENTENCODING``,
    or a role's/database's ``client_encoding``): psycopg encodes every ``str`` parameter
    in the connection's encoding, which the server converts back; ``TextArray`` always
    sends UTF-8 and the server reads it as LATIN1. rm_sessions gets "café", its
    rm_messages rows "cafÃ©": the history of a session named in LATIN1's own letters
    comes back empty, and ``ctxc verify`` reports the read model differing from the
    events. (Before ADR 0061 the same lists went through psycopg's dumpers, encoded
    in the connection's encoding.)"""
    monkeypatch.setenv("PGCLIENTENCODING", "LATIN1")
    h: Harness = pg_databases.harness("latin1")
    assert h.query("SHOW client_encoding") == [("LATIN1",)]
    sid = "café"
    ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    assert ok(h.do({"type": "append_messages", "session_id": sid,
                    "messages": [user("héllo"), user("déjà vu")]}))["seqs"] == [1, 2]
    assert _contents(h, sid) == [(1, "user", "héllo"), (2, "user", "déjà vu")]
    assert h.query("SELECT DISTINCT session_id FROM {t}rm_messages") == [(sid,)]
    assert ok(h.new_bus().dispatch_json({"type": "get_history", "session_id": sid}))["messages"]
    _verify_ok(h)


@pytest.mark.postgres
def test_hostile_ids_and_texts_read_back_on_every_write_path(pg_databases: Any, tmp_path: Path) -> None:
    """Non-ASCII, 4-byte UTF-8 and maximal session ids; a state holding every UTF-8
    length and a megabyte state; through the library's pipelined insert, the locked
    (contended) writer and the snapshot insert (a snapshot every
    event): every message reads back as sent, from a restarted bus, as on SQLite, and
    ``ctxc verify`` finds the read model equal to the events."""
    from helpers import Harness as H

    h: Harness = pg_databases.harness("hostile", snapshot_interval=1)
    reference = H(tmp_path / "reference.db", summarizer="extractive", snapshot_interval=1)
    big = "β" * 400_000 + "x" * 200_000  # ~1 MB of UTF-8
    every = _every_char_text()
    two_trips = h.new_bus()
    Inspect(two_trips).app.projector.splits_at_ids = lambda events: False
    stale = h.new_bus()
    try:
        for sid in SESSION_IDS:
            batches = [
                [user(every), assistant(None, [(f"call-{sid}", "read", '{"p": "ü"}')])],
                [tool(f"call-{sid}", big, name="read"), assistant("ok ✓")],
                [user("third"), user("fourth 😀")],
                [user("fifth")],
            ]
            for target in (h, reference):
                ok(target.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
            ok(h.do({"type": "append_messages", "session_id": sid, "messages": batches[0]}))
            ok(stale.dispatch_json({"type": "append_messages", "session_id": sid, "messages": batches[1]}))
            ok(two_trips.dispatch_json({"type": "append_messages", "session_id": sid, "messages": batches[2]}))
            # the stale bus's held copy is behind: its save conflicts, the locked writer retries
            ok(stale.dispatch_json({"type": "append_messages", "session_id": sid, "messages": batches[3]}))
            for batch in batches:
                ok(reference.do({"type": "append_messages", "session_id": sid, "messages": batch}))
        assert any(sid in stale.services._contended for sid in SESSION_IDS), "no append took the locked path"
        restarted = h.new_bus()
        for sid in SESSION_IDS:
            expected = _normal(_history(reference, sid))
            assert len(expected) == 7
            assert _normal(_history(h, sid)) == expected
            got = ok(restarted.dispatch_json({"type": "get_history", "session_id": sid,
                                               "include_invalidated": True}))["messages"]
            assert _normal(got) == expected
            # the snapshot (every event) restores the aggregate: the next append gets seq 8
            assert ok(restarted.dispatch_json({"type": "append_messages", "session_id": sid,
                                                "messages": [user("after restart")]}))["seqs"] == [8]
        _consistent(h)
        _verify_ok(h)
    finally:
        reference.close()


@pytest.mark.postgres
def test_the_largest_message_the_limits_allow_round_trips(pg_databases: Any) -> None:
    """A message of ``max_message_chars`` 4-byte characters (16 MB of UTF-8 in one
    ``bytea`` element of the states array), with a snapshot due in the same append,
    reads back whole, also from a new bus."""
    h: Harness = pg_databases.harness("largest", snapshot_interval=2)
    ok(h.do({"type": "start_session", "session_id": "s😀", "model": "gpt-4o"}))
    huge = "\U0001f600" * 4_000_000
    assert ok(h.do({"type": "append_messages", "session_id": "s😀",
                    "messages": [user(huge), user("after")]}))["seqs"] == [1, 2]
    for bus in (h.bus, h.new_bus()):
        got = ok(bus.dispatch_json({"type": "get_history", "session_id": "s😀"}))["messages"]
        assert [m["content"] == huge for m in got] == [True, False] and got[1]["content"] == "after"
    _consistent(h)


@pytest.mark.postgres
def test_the_pure_python_psycopg_writes_the_same_arrays(pg_databases: Any, tmp_path: Path) -> None:
    """ADR 0061's figures are for psycopg's pure-Python implementation (the test venv
    may have the C one): appends, a snapshot and the contended path on it, read back."""
    h: Harness = pg_databases.harness("pure", snapshot_interval=2)
    script = tmp_path / "pure.py"
    script.write_text(
        "import json, sys\n"
        "import psycopg\n"
        "assert psycopg.pq.__impl__ == 'python', psycopg.pq.__impl__\n"
        "from context_compaction import Settings, bootstrap\n"
        "url = sys.argv[1]\n"
        "a = bootstrap(Settings(database_url=url, summarizer='extractive', snapshot_interval=2))\n"
        "b = bootstrap(Settings(database_url=url, summarizer='extractive', snapshot_interval=2))\n"
        "out = [a.dispatch_json({'type': 'start_session', 'session_id': 'pür😀', 'model': 'gpt-4o'})]\n"
        "out.append(b.dispatch_json({'type': 'append_messages', 'session_id': 'pür😀',\n"
        "    'messages': [{'role': 'user', 'content': 'from b0'}]}))\n"
        "for n in range(3):\n"
        "    out.append(a.dispatch_json({'type': 'append_messages', 'session_id': 'pür😀',\n"
        "        'messages': [{'role': 'user', 'content': f'ä{n}'}, {'role': 'user', 'content': '😀' * 1000}]}))\n"
        "out.append(b.dispatch_json({'type': 'append_messages', 'session_id': 'pür😀',\n"
        "    'messages': [{'role': 'user', 'content': 'from b'}]}))\n"
        "print(json.dumps([o['ok'] for o in out]))\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PSYCOPG_IMPL": "python", "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    done = subprocess.run([sys.executable, str(script), h.url], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert json.loads(done.stdout.decode().strip().splitlines()[-1]) == [True] * 6
    history = _history(h, "pür😀")
    assert [(m["seq"], m["content"]) for m in history] == [
        (1, "from b0"), (2, "ä0"), (3, "😀" * 1000), (4, "ä1"), (5, "😀" * 1000), (6, "ä2"), (7, "😀" * 1000),
        (8, "from b")]
    assert ok(h.new_bus().dispatch_json({"type": "append_messages", "session_id": "pür😀",
                                         "messages": [user("x")]}))["seqs"] == [9]
    _consistent(h)
    _verify_ok(h)


@pytest.mark.postgres
def test_a_pooled_connection_replaced_mid_run_still_sends_binary_arrays(pg_databases: Any) -> None:
    """Every pooled connection is closed by the server between appends (a restart, an
    idle timeout, a max age): the replacements are new connection objects, registered
    on first use; no append is lost or doubled."""
    h: Harness = pg_databases.harness("replaced")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    app_name = os.environ["PGAPPNAME"]
    seqs: list[int] = []
    for n in range(4):
        got = h.do({"type": "append_messages", "session_id": "s", "messages": [user(f"m{n}")]})
        if got["ok"]:
            seqs += got["result"]["seqs"]
        with psycopg.connect(POSTGRES_URL, autocommit=True, application_name="ctxc-review-killer") as killer:
            killed = killer.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                    " WHERE application_name = %s AND pid <> pg_backend_pid()",
                                    (app_name,)).fetchall()
        assert killed, "no pooled connection to replace"
        time.sleep(0.05)
    got = h.do({"type": "append_messages", "session_id": "s", "messages": [user("last")]})
    assert got["ok"], got
    assert len(seqs) >= 3, seqs  # (a command on a dead pool replaces its connections and retries)
    history = _history(h, "s")
    contents = [m["content"] for m in history]
    assert len(contents) == len(set(contents))  # none doubled
    assert contents[-1] == "last"
    _consistent(h)


# =================================================================== lock order
def _deadlocks() -> int:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        return int(conn.execute(
            "SELECT coalesce(sum(deadlocks), 0) FROM pg_stat_database").fetchone()[0])  # type: ignore[index]


@pytest.mark.postgres
def test_appends_pins_and_invalidations_racing_on_one_session_never_deadlock(pg_databases: Any) -> None:
    """Two buses append to one session (lost races go the
    locked path), a third pins and unpins (FOR UPDATE first, then its other rows), a
    fourth deletes single messages and appends with reused command ids and a fifth
    compacts, all at once:
    every command succeeds or is refused as the contract says, the server detects no
    deadlock, and rm_sessions' counts, next seq and version match the events."""
    h: Harness = pg_databases.harness("race", postgres={"lock_timeout": 30},
                                      context_compaction={"keep_recent_tokens": 40})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("zero")]}))
    buses = [h.new_bus() for _ in range(5)]
    for bus in buses:
        ok(bus.dispatch_json({"type": "get_context_usage", "session_id": "s"}))
    rounds = 12
    errors: list[Any] = []
    deadlocks = _deadlocks()

    def appender(bus: Any, tag: str) -> None:
        for k in range(rounds):
            got = bus.dispatch_json({"type": "append_messages", "session_id": "s", "command_id": f"{tag}-{k}",
                                     "messages": [user(f"{tag}{k}a"), user(f"{tag}{k}b")]})
            if not got["ok"]:
                errors.append(got["error"])

    def pinner(bus: Any) -> None:
        for k in range(rounds):
            kind = "pin_messages" if k % 2 == 0 else "unpin_messages"
            got = bus.dispatch_json({"type": kind, "session_id": "s", "seqs": [1]})
            if not got["ok"]:
                errors.append(got["error"])

    def deleter(bus: Any) -> None:
        for k in range(rounds):
            got = bus.dispatch_json({"type": "append_messages", "session_id": "s", "command_id": f"a-{k}",
                                     "messages": [user(f"a{k}a"), user(f"a{k}b")]})  # a's ids: same messages
            if not got["ok"] and got["error"]["code"] != "idempotency_conflict":
                errors.append(got["error"])
            got = bus.dispatch_json({"type": "append_messages", "session_id": "s",
                                     "messages": [user(f"d{k}")]})
            if not got["ok"]:
                errors.append(got["error"])
                continue
            seq = got["result"]["seqs"][0]
            got = bus.dispatch_json({"type": "invalidate_history", "session_id": "s", "kind": "delete",
                                     "seqs": [seq]})
            if not got["ok"]:
                errors.append(got["error"])

    def compactor(bus: Any) -> None:
        for _ in range(4):
            got = bus.dispatch_json({"type": "compact", "session_id": "s"})
            if not got["ok"] and got["error"]["code"] != "summary_failed":  # (would not shrink: refused)
                errors.append(got["error"])

    threads = [threading.Thread(target=compactor, args=(buses[4],)),
               threading.Thread(target=appender, args=(buses[0], "a")),
               threading.Thread(target=appender, args=(buses[1], "b")),
               threading.Thread(target=pinner, args=(buses[2],)),
               threading.Thread(target=deleter, args=(buses[3],))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert any("s" in bus.services._contended for bus in buses), "no command took the locked path"
    time.sleep(1.2)  # (statistics reach pg_stat_database within a second)
    assert _deadlocks() == deadlocks, "the server detected a deadlock"
    history = _history(h, "s")
    texts = [m["content"] for m in history]
    for tag in ("a", "b"):
        for k in range(rounds):
            assert texts.count(f"{tag}{k}a") == 1 and texts.count(f"{tag}{k}b") == 1, (tag, k)
    assert [m["seq"] for m in history] == list(range(1, len(history) + 1))
    assert len(history) == 1 + 2 * 2 * rounds + rounds
    assert h.query("SELECT message_count, next_seq FROM {t}rm_sessions") == [(len(history), len(history) + 1)]
    _consistent(h)
    _verify_ok(h)


# =================================================================== snapshot steps
SID = "groups"
GROUPS = 530  # past 2 x GROUPS_PER_STEP: the step has doubled
SMALL = 12


def _group_turns(start: int, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(start, start + count):
        out += [assistant(None, [(f"g{n}", "read", "{}")]), tool(f"g{n}", f"result {n}", name="read")]
    return out


def _script() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"type": "start_session", "session_id": SID, "model": "gpt-4o"}]
    for start in range(0, GROUPS, 150):
        steps.append({"type": "append_messages", "session_id": SID,
                      "messages": [user(f"batch {start}"), *_group_turns(start, min(150, GROUPS - start))]})
    # one event a command: snapshots every step (3 x 2 once past 512 groups)
    steps += [{"type": "append_messages", "session_id": SID, "messages": [user(f"small {n}")]} for n in range(SMALL)]
    steps += [
        {"type": "append_messages", "session_id": SID, "messages": [user("tail"), assistant("ok")]},
        # seqs named far behind the newest snapshot (old tool groups)
        {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [3]},
        {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [3],
         "expand_tool_groups": True},
        {"type": "pin_messages", "session_id": SID, "seqs": [10, 11]},
        {"type": "compact", "session_id": SID},
        {"type": "append_messages", "session_id": SID, "messages": _group_turns(9000, 3)},
        {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [20, 21]},
        {"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 900},
        {"type": "append_messages", "session_id": SID, "messages": [tool("g5", "late result", name="read")]},
        {"type": "compact", "session_id": SID},
        {"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 40},
        {"type": "append_messages", "session_id": SID, "messages": [user("after rewind")]},
    ]
    return steps


_READS = [
    {"type": "get_history", "session_id": SID, "include_invalidated": True},
    {"type": "get_projection", "session_id": SID},
    {"type": "get_context_usage", "session_id": SID},
]


def _run(h: Harness, restart: bool) -> list[Any]:
    ids = CheckpointNames(keep=(SID,))
    out = []
    for step in _script():
        if restart:
            h.reopen()
        answer = h.do(step)
        if not answer["ok"]:
            answer["error"].pop("message", None)
        out.append(normal_answer(answer, ids, _VOLATILE))
    if restart:
        h.reopen()
    out += [normal_answer(h.do(read), ids, _VOLATILE) for read in _READS]
    return out


def _snapshot_versions(h: Harness) -> list[int]:
    from context_compaction.domain.session import session_aggregate_id

    app = h.inspect.app
    return [s.originator_version for s in app.snapshots.recorder.select_events(session_aggregate_id(SID))]


@pytest.mark.backends("sqlite", "postgres", "memory")
def test_a_session_of_many_tool_groups_restarted_from_its_sparse_snapshots_answers_as_the_held_copy(
    make_harness: MakeHarness, backend: str
) -> None:
    """A never-compacted session holding 530 tool groups (the step doubled), restarted
    before every command from its sparse snapshot and the events after it, then
    deletes and rewinds naming seqs far behind that snapshot, compactions, pins: every
    answer equals that of a bus that never restarted."""
    settings = {"context_compaction": {"keep_recent_tokens": 300}}
    held = _run(make_harness("held", snapshot_interval=10**6, **settings), restart=False)
    restarted_h = make_harness("restarted", snapshot_interval=3, **settings)
    restarted = _run(restarted_h, restart=True)
    assert len(held) == len(restarted)
    for n, (a, b) in enumerate(zip(held, restarted)):
        assert a == b, n
    versions = _snapshot_versions(restarted_h)
    big = 1 + 2 * GROUPS + len(range(0, GROUPS, 150))  # the version after the big batches
    small = [v for v in versions if big < v <= big + SMALL]
    assert 1 <= len(small) <= SMALL // 6 + 1, (big, versions)  # step 6, not 3


def _wait_blocked_by(pid: int, timeout: float = 10.0) -> None:
    waited = time.monotonic() + timeout
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        while time.monotonic() < waited:
            if conn.execute("SELECT 1 FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                            (pid,)).fetchone():
                return
            time.sleep(0.02)
    raise AssertionError("no backend waited for the lock")


@pytest.mark.postgres
def test_a_command_id_reused_on_another_session_does_not_deadlock_the_locked_writer(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host command id reused on another session while the locked writer (ADR 0021)
    holds the events lock: known as a deadlock since ADR 0053 (the one-trip append took
    the id before the lock). On the library's path (ADR 0073) every writer takes the
    events lock before any read-model row, so the other append waits for the lock and
    then meets the id: one ok, one idempotency_conflict, no deadlock."""
    h: Harness = pg_databases.harness("cmd-reuse")
    for sid in ("x", "y"):
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    stale, other = h.new_bus(), h.new_bus()
    ok(stale.dispatch_json({"type": "append_messages", "session_id": "y", "messages": [user("s0")]}))
    ok(other.dispatch_json({"type": "append_messages", "session_id": "x", "messages": [user("o0")]}))
    ok(h.do({"type": "append_messages", "session_id": "y", "messages": [user("h0")]}))  # stale is behind
    recorder = Inspect(stale).recorder
    entered, release = threading.Event(), threading.Event()
    insert = recorder.insert_events
    holders: list[int] = []

    def held_there(stored_events: Any, **kwargs: Any) -> Any:  # (a descheduled process, under the lock)
        writer = kwargs.get("locked_writer")
        if writer is not None:
            holders.append(writer.curs.connection.info.backend_pid)
            entered.set()
            release.wait(10)
        return insert(stored_events, **kwargs)

    monkeypatch.setattr(recorder, "insert_events", held_there)
    deadlocks = _deadlocks()
    writer, written = in_thread(lambda: stale.dispatch_json(
        {"type": "append_messages", "session_id": "y", "command_id": "C", "messages": [user("on y")]}))
    assert entered.wait(10), "the locked path was not taken"
    holder = holders[0]
    appender, appended = in_thread(lambda: other.dispatch_json(
        {"type": "append_messages", "session_id": "x", "command_id": "C", "messages": [user("on x")]}))
    _wait_blocked_by(holder)
    release.set()
    writer.join(30)
    appender.join(30)
    outcomes = sorted("ok" if out["result"]["ok"] else out["result"]["error"]["code"] for out in (written, appended))
    assert outcomes == ["idempotency_conflict", "ok"], (written, appended)
    time.sleep(1.2)
    assert _deadlocks() == deadlocks, "the server detected a deadlock"

