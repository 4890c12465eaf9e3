"""Issue 35 finding 2 (first half): a deleted session's content is no ordinary read.
History, search, projection, usage and replay answer ``session_deleted``; history and
replay read it for an audit with ``include_deleted: true`` (ADR 0072)."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from helpers import Harness, assistant, err, ok, user

BACKENDS = ("memory", "sqlite", "postgres")


def test_ordinary_reads_of_a_deleted_session_answer_session_deleted(harness: Harness) -> None:
    ok(harness.do({"type": "start_session", "session_id": "gone", "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": "gone",
                   "messages": [user("the secret is parsnip"), assistant("noted parsnip")]}))
    before = ok(harness.do({"type": "get_history", "session_id": "gone"}))
    ok(harness.do({"type": "delete_session", "session_id": "gone"}))
    reads = [
        {"type": "get_history", "session_id": "gone"},
        {"type": "get_history", "session_id": "gone", "include_invalidated": True},
        {"type": "search_history", "session_id": "gone", "query": "parsnip"},
        {"type": "get_projection", "session_id": "gone"},
        {"type": "get_context_usage", "session_id": "gone"},
        {"type": "replay_session", "session_id": "gone"},
        {"type": "replay_session", "session_id": "gone", "at_version": 2},
        {"type": "recall_timeline", "session_id": "gone"},
    ]
    for read in reads:
        err(harness.do(read), "session_deleted")
    audit = ok(harness.do({"type": "get_history", "session_id": "gone", "include_deleted": True}))
    assert audit["messages"] == before["messages"]
    replay = ok(harness.do({"type": "replay_session", "session_id": "gone", "include_deleted": True}))
    assert replay["deleted"] is True
    assert [m["content"] for m in replay["projection"]["messages"]] == ["the secret is parsnip", "noted parsnip"]
    # (a live session reads as before, with or without the flag)
    ok(harness.do({"type": "start_session", "session_id": "live", "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": "live", "messages": [user("hi")]}))
    for flag in (False, True):
        assert len(ok(harness.do({"type": "get_history", "session_id": "live", "include_deleted": flag}))["messages"]) == 1


@pytest.mark.backends("sqlite")
def test_http_answers_a_deleted_session_with_its_error(harness: Harness, backend: str) -> None:
    from fastapi.testclient import TestClient

    from context_compaction.infrastructure.http import create_app

    ok(harness.do({"type": "start_session", "session_id": "gone", "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": "gone", "messages": [user("parsnip")]}))
    ok(harness.do({"type": "delete_session", "session_id": "gone"}))
    client = TestClient(create_app(harness.bus, token=None, max_body_bytes=1_000_000))
    answer = client.post("/v1/commands", json={"type": "search_history", "session_id": "gone", "query": "parsnip"})
    assert answer.json()["error"]["code"] == "session_deleted" and answer.status_code != 200


@pytest.mark.backends("sqlite")
def test_ctxc_history_reads_a_deleted_session_only_when_asked(harness: Harness, backend: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from cli_inprocess import run_cli

    ok(harness.do({"type": "start_session", "session_id": "gone", "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": "gone", "messages": [user("parsnip soup")]}))
    ok(harness.do({"type": "delete_session", "session_id": "gone"}))
    capsys.readouterr()
    assert run_cli(["history", "gone", "--db", harness.url]) != 0
    assert "session_deleted" in capsys.readouterr().err
    assert run_cli(["history", "gone", "--include-deleted", "--db", harness.url]) == 0
    assert "parsnip soup" in capsys.readouterr().out
    assert run_cli(["replay", "gone", "--at-version", "2", "--include-deleted", "--db", harness.url]) == 0


def test_checkpoints_attempts_and_resummarize_of_a_deleted_session_are_no_ordinary_read(
        make_harness: MakeHarness) -> None:
    """A checkpoint's summary and an attempt's dropped ledger items are the session's
    content: listing them is an audit read too (review of issue 35)."""
    h = make_harness("cpdeleted", context_compaction={"keep_recent_tokens": 200})
    ok(h.do({"type": "start_session", "session_id": "gone", "model": "gpt-4o"}))
    for i in range(6):
        ok(h.do({"type": "append_messages", "session_id": "gone", "messages": [
            user(f"step {i}: parsnip{i} " + "words " * 80), assistant(f"noted parsnip{i} " + "more " * 80)]}))
    ok(h.do({"type": "compact", "session_id": "gone"}))
    listed = ok(h.do({"type": "list_checkpoints", "session_id": "gone"}))
    assert "parsnip" in str(listed)
    checkpoint_id = listed["checkpoints"][0]["checkpoint_id"]
    ok(h.do({"type": "delete_session", "session_id": "gone"}))
    for read in ({"type": "list_checkpoints", "session_id": "gone"},
                 {"type": "list_compaction_attempts", "session_id": "gone"},
                 {"type": "resummarize", "session_id": "gone", "checkpoint_id": checkpoint_id}):
        err(h.do(read), "session_deleted")
    audit = ok(h.do({"type": "list_checkpoints", "session_id": "gone", "include_deleted": True}))
    assert audit["checkpoints"] == listed["checkpoints"]
    assert ok(h.do({"type": "list_compaction_attempts", "session_id": "gone", "include_deleted": True}))["attempts"]
    err(h.do({"type": "list_checkpoints", "session_id": "nobody"}), "session_not_found")
