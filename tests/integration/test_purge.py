"""Issue 35 finding 2 (second half): ``purge_session`` erases a session's content for
good, in the event store too (ADR 0072). What remains: the session existed and was
purged; ``ctxc verify`` accepts it; the event feed carries the purge."""

from __future__ import annotations

from typing import Any

import pytest

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, ok, tool, user
from purge_builders import _dump

SECRET = "sk-live-PARSNIP-7731"


@pytest.mark.backends("sqlite", "postgres")
def test_purge_erases_the_content_everywhere_and_keeps_the_fact(make_harness: MakeHarness, backend: str) -> None:
    h = make_harness("purge", adapters={"summarizer": RecordingSummarizer(text=f"## Goal\nKeep {SECRET} safe.")},
                     context_compaction={"keep_recent_tokens": 300}, snapshot_interval=5)
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    ok(h.do({"type": "start_session", "session_id": "other", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "other", "messages": [user("the other turnip stays")]}))
    for i in range(8):
        ok(h.do({"type": "append_messages", "session_id": "p", "messages": [
            # (a participant's name is personal data too; reasoning and provider state
            # are the model's words about the content)
            user(f"step {i}: my key is {SECRET}", name=f"owner_{SECRET}"),
            assistant(None, [(f"c{i}", "grep", f'{{"q": "{SECRET}"}}')], reasoning_content=f"think {SECRET}"),
            tool(f"c{i}", f"found {SECRET} " + "line " * 30, name="grep"),
            assistant(f"done {i} with {SECRET}", provider_state={
                "provider": "openai", "model": "gpt-4o", "data": {"thinking_blocks": [{"text": SECRET}]}})]}))
    ok(h.do({"type": "compact", "session_id": "p"}))
    ok(h.do({"type": "invalidate_history", "session_id": "p", "kind": "delete", "seqs": [32],
             "reason": f"leaked {SECRET}"}))
    assert ok(h.do({"type": "search_history", "session_id": "p", "query": SECRET}))["hits"]
    assert SECRET.encode() in _dump(h)
    position = ok(h.do({"type": "read_events", "limit": 1000}))["events"][-1]["position"]

    purged = ok(h.do({"type": "purge_session", "session_id": "p"}))
    assert purged["erased_events"] >= 33

    assert SECRET.encode() not in _dump(h), "no byte of the content is left in any table"
    if not h.is_postgres:  # (and none in the files: freed pages zeroed, FTS merged, WAL emptied)
        path = h.url[len("sqlite:///"):]
        for suffix in ("", "-wal"):
            with open(path + suffix, "rb") as f:
                data = f.read().lower()
            assert SECRET.lower().encode() not in data and b"parsnip" not in data, suffix
    for read in ({"type": "get_history", "session_id": "p"}, {"type": "search_history", "session_id": "p",
                 "query": "step"}, {"type": "get_projection", "session_id": "p"}):
        err(h.do(read), "session_deleted")
    audit = ok(h.do({"type": "get_history", "session_id": "p", "include_deleted": True,
                     "include_invalidated": True}))["messages"]
    assert len(audit) == 32 and {m["content"] for m in audit} <= {"[purged]", None}
    assert [c["id"] for c in audit[1]["tool_calls"]] == ["c0"]  # (the shape stays)
    sessions = {s["session_id"]: s for s in ok(h.do({"type": "list_sessions"}))["sessions"]}
    assert sessions["p"]["deleted"] is True and sessions["p"]["message_count"] == 32
    assert ok(h.do({"type": "get_history", "session_id": "other"}))["messages"][0]["content"] == "the other turnip stays"
    feed = ok(h.do({"type": "read_events", "after": position}))["events"]
    assert [e["type"] for e in feed] == ["Purged"] and feed[0]["session_id"] == "p"
    # A fresh process reads the same; the aggregate replays from the rewritten events.
    h.reopen()
    replay = ok(h.do({"type": "replay_session", "session_id": "p", "include_deleted": True}))
    assert replay["deleted"] is True and SECRET not in str(replay)
    attempts = ok(h.do({"type": "list_compaction_attempts", "session_id": "p", "include_deleted": True}))["attempts"]
    assert attempts and SECRET not in str(attempts)
    # Purging again is harmless.
    ok(h.do({"type": "purge_session", "session_id": "p"}))


@pytest.mark.backends("sqlite", "postgres")
def test_ctxc_verify_accepts_a_purged_session(make_harness: MakeHarness, backend: str) -> None:
    from context_compaction.infrastructure.verify import verify

    h = make_harness("purgeverify", adapters={"summarizer": RecordingSummarizer(text=f"## Goal\n{SECRET}")},
                     context_compaction={"keep_recent_tokens": 300}, snapshot_interval=5)
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    for i in range(8):
        ok(h.do({"type": "append_messages", "session_id": "p",
                 "messages": [user(f"step {i} {SECRET}"), assistant(f"done {i} " + "words " * 30)]}))
    ok(h.do({"type": "compact", "session_id": "p"}))
    ok(h.do({"type": "search_history", "session_id": "p", "query": "step"}))
    ok(h.do({"type": "purge_session", "session_id": "p"}))
    report = h.inspect.verify()
    assert report.ok, report.to_dict()


def test_purge_of_an_unknown_session_is_session_not_found(harness: Harness) -> None:
    err(harness.do({"type": "purge_session", "session_id": "nobody"}), "session_not_found")


BACKENDS: Any = ("sqlite", "postgres")


@pytest.mark.backends("memory")
def test_memory_says_it_cannot_purge_and_changes_nothing(harness: Harness, backend: str) -> None:
    ok(harness.do({"type": "start_session", "session_id": "m", "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": "m", "messages": [user(SECRET)]}))
    events = harness.events()
    err(harness.do({"type": "purge_session", "session_id": "m"}), "invalid_command")
    assert harness.events() == events
    assert ok(harness.do({"type": "get_history", "session_id": "m"}))["messages"][0]["content"] == SECRET


@pytest.mark.backends("sqlite")
def test_a_purge_says_when_an_open_read_kept_the_wal(make_harness: MakeHarness, backend: str) -> None:
    """Another connection's open read keeps a checkpoint from emptying the WAL, which
    then still holds the pages as they were: the purge says so instead of answering as
    if no byte were left (review of issue 35); once the read is over, again completes it."""
    import sqlite3

    h = make_harness("walbusy")
    path = h.url[len("sqlite:///"):]
    ok(h.do({"type": "start_session", "session_id": "w", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "w", "messages": [user(SECRET + " pad" * 2000)]}))
    reader = sqlite3.connect(path, timeout=1)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM rm_sessions").fetchall()  # (its snapshot stays open)
    try:
        first = ok(h.do({"type": "purge_session", "session_id": "w"}))
        with open(path + "-wal", "rb") as f:
            kept = SECRET.encode() in f.read()
        assert first["files_scrubbed"] is (not kept) and kept, first
    finally:
        reader.rollback()
        reader.close()
    again = ok(h.do({"type": "purge_session", "session_id": "w"}))
    assert again["files_scrubbed"] is True
    for suffix in ("", "-wal"):
        with open(path + suffix, "rb") as f:
            assert SECRET.encode() not in f.read(), suffix


@pytest.mark.backends("postgres")
def test_postgres_purge_does_not_claim_the_files_scrubbed(make_harness: MakeHarness, backend: str) -> None:
    h = make_harness("pgscrub")
    ok(h.do({"type": "start_session", "session_id": "w", "model": "gpt-4o"}))
    assert ok(h.do({"type": "purge_session", "session_id": "w"}))["files_scrubbed"] is None


@pytest.mark.backends("postgres")
def test_postgres_planner_statistics_keep_no_content_after_a_purge(make_harness: MakeHarness, backend: str) -> None:
    """``ANALYZE`` (autovacuum runs it by itself) copies sample values of each column
    into ``pg_statistic``: short bodies of rm_search and the events' states were still
    there after the purge (review of issue 35). The purge analyzes those tables again."""
    import psycopg

    from backends import POSTGRES_URL

    h = make_harness("pgstats")
    schema = h.url.split("schema=")[1]
    ok(h.do({"type": "start_session", "session_id": "x", "model": "gpt-4o"}))
    for i in range(50):
        ok(h.do({"type": "append_messages", "session_id": "x", "messages": [user(f"{SECRET} {i % 3}")]}))
    ok(h.do({"type": "start_session", "session_id": "y", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "y", "messages": [user("other words")]}))
    for sid, query in (("x", "PARSNIP"), ("y", "other")):
        ok(h.do({"type": "search_history", "session_id": sid, "query": query}))
    hexed = SECRET.encode().hex()
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'SET search_path = "{schema}"')
        conn.execute("ANALYZE")

        def sampled() -> list[Any]:
            return conn.execute(
                "SELECT tablename, attname FROM pg_stats WHERE schemaname = %s AND ("
                " most_common_vals::text ILIKE %s OR histogram_bounds::text ILIKE %s"
                " OR most_common_vals::text ILIKE %s OR histogram_bounds::text ILIKE %s)",
                (schema, f"%{SECRET}%", f"%{SECRET}%", f"%{hexed}%", f"%{hexed}%")).fetchall()

        assert sampled(), "the statistics held the content before"
        ok(h.do({"type": "purge_session", "session_id": "x"}))
        assert sampled() == []
