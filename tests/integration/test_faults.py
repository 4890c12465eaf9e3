"""Faults (issue 5): a locked SQLite database, dropped PostgreSQL connections, bad summaries.

Each fault gives a clear error code, emits no event, keeps the previous projection, and
the command succeeds when retried.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from backends import POSTGRES_URL, MakeHarness
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import Reply
from helpers import FAKE_MODEL, Harness, RecordingSummarizer, err, llm_settings, ok, user

SID = "s"


def build(h: Harness, turns: int = 6, model: str = "gpt-4o") -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    for t in coding_session(turns, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))


def test_a_locked_sqlite_database_is_a_storage_error_and_the_retry_succeeds(tmp_path: Path) -> None:
    h = Harness(tmp_path / "locked.db", summarizer="extractive", sqlite_lock_timeout=1,
                context_compaction={"keep_recent_tokens": 2000})
    build(h)
    live = ok(h.do({"type": "get_projection", "session_id": SID}))
    events = h.events()
    blocker = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        e = err(h.do({"type": "append_messages", "session_id": SID, "messages": [user("blocked?")]}),
                "storage_error")
        assert "retry" in e["message"] and time.monotonic() - started < 15
        err(h.do({"type": "compact", "session_id": SID}), "storage_error")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert h.events() == events
    assert ok(h.do({"type": "get_projection", "session_id": SID})) == live
    assert ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("now")]}))["seqs"]
    assert ok(h.do({"type": "compact", "session_id": SID}))["status"] == "compacted"
    h.close()


def _terminate_other_connections() -> int:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name = current_setting('application_name')"
        ).fetchall()
    return len(rows)


@pytest.mark.postgres
def test_dropped_postgres_connections_are_replaced_between_commands(pg_databases) -> None:
    h = pg_databases.harness("drop", context_compaction={"keep_recent_tokens": 2000})
    build(h)
    live = ok(h.do({"type": "get_projection", "session_id": SID}))
    for command in ({"type": "get_projection", "session_id": SID},
                    {"type": "get_history", "session_id": SID},
                    {"type": "compact", "session_id": SID}):
        assert _terminate_other_connections() >= 1
        assert h.do(command)["ok"], command
    assert ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]["trigger_reason"] == "manual"
    assert ok(h.do({"type": "get_projection", "session_id": SID}))["first_raw_seq"] > live["first_raw_seq"]
    assert _terminate_other_connections() >= 1
    seqs = ok(h.do({"type": "append_messages", "session_id": SID, "command_id": "after-drop",
                    "messages": [user("after the drop")]}))["seqs"]
    assert ok(h.do({"type": "append_messages", "session_id": SID, "command_id": "after-drop",
                    "messages": [user("after the drop")]}))["seqs"] == seqs


@pytest.mark.postgres
def test_a_connection_drop_during_the_summary_does_not_lose_the_commit(pg_databases) -> None:
    spy = RecordingSummarizer()
    spy.release = threading.Event()
    h = pg_databases.harness("drop2", adapters={"summarizer": spy}, context_compaction={"keep_recent_tokens": 2000})
    build(h)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(h.do({"type": "compact", "session_id": SID})))
    worker.start()
    assert spy.entered.wait(10)
    # The pool's connections (the one that loaded the session among them) are cut while
    # the summary runs; the commit must go through a new one.
    assert _terminate_other_connections() >= 1
    spy.release.set()
    worker.join(20)
    assert result["ok"], result
    assert ok(h.do({"type": "get_projection", "session_id": SID}))["checkpoint_id"] == result["result"]["checkpoint_id"]


@pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's serializer on the garbage reply
@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (Reply(delay=2.5), "timeout"),
        (Reply(status=500), "http 500"),
        (Reply(raw="{\"choices\": \"garbage\"}"), "garbage"),
        (Reply(text=""), "empty"),
        (Reply(text="## Objective\n" + "enormous " * 3000), "oversized"),
    ],
    ids=["timeout", "500", "garbage", "empty", "oversized"],
)
def test_summarizer_faults_are_summary_failed_and_change_nothing(
    make_harness: MakeHarness, provider, reply: Reply, why: str
) -> None:
    h = make_harness("faults", **llm_settings(provider.base_url, timeout=1.0),
                     context_compaction={"keep_recent_tokens": 2000})
    build(h, model=FAKE_MODEL)
    live = ok(h.do({"type": "get_projection", "session_id": SID}))
    events = h.events()
    provider.queue(reply)
    err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert h.events() == events, why
    assert ok(h.do({"type": "get_projection", "session_id": SID})) == live
    provider.queue(Reply(text="## Objective\nRecovered."))
    # The retry runs with a 10 s timeout: only the failure needs the short one, and a
    # loaded machine must not turn a good reply into a timeout.
    retry = h.new_bus(summary_timeout_seconds=10.0)
    assert ok(retry.dispatch_json({"type": "compact", "session_id": SID}))["status"] == "compacted"
