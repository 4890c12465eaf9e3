"""Review of issue 35 (ADR 0072): a purge that runs while another process is filling a
cache of the session's content (the search index, the Timeline) must not leave that
content behind: what that process read before the purge is not written after it."""

from __future__ import annotations

import threading
import time

import pytest

from backends import MakeHarness
from helpers import ok, user
from harness import Inspect

SECRET = "sk-live-TURNIP-5521"


@pytest.mark.backends("postgres", "sqlite")
def test_a_search_index_filled_during_a_purge_keeps_no_content(make_harness: MakeHarness, backend: str) -> None:
    h = make_harness("race")
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "p",
             "messages": [user(f"my key is {SECRET}"), user("and more words")]}))
    searcher = h.new_bus()  # another process: its search indexes the session first
    projector = searcher.services.read_model.projector
    reading, release = threading.Event(), threading.Event()
    decode = projector.decode_state

    def slow_decode(state: bytes) -> dict:
        reading.set()  # (the indexer has read the events: it holds the content)
        release.wait(30)
        return decode(state)

    projector.decode_state = slow_decode  # type: ignore[method-assign]
    answers: list[dict] = []
    search = threading.Thread(target=lambda: answers.append(searcher.dispatch_json(
        {"type": "search_history", "session_id": "p", "query": "key"})))
    search.start()
    assert reading.wait(30)
    purge = threading.Thread(target=lambda: answers.append(h.do({"type": "purge_session", "session_id": "p"})))
    purge.start()
    time.sleep(0.5)  # (lets the purge go as far as it can; the outcome must not depend on it)
    release.set()
    search.join(60)
    purge.join(60)
    assert not search.is_alive() and not purge.is_alive()
    assert any(a.get("ok") and "erased_events" in a["result"] for a in answers), answers
    rows = h.query("SELECT body FROM {t}rm_search WHERE session_id = ?", ("p",))
    assert SECRET not in repr(rows), "the indexer wrote what it read before the purge"


@pytest.mark.backends("postgres", "sqlite")
def test_a_timeline_entry_written_after_a_purge_is_not_stored(make_harness: MakeHarness, backend: str) -> None:
    from context_compaction.application.contracts.views import TimelineEntry
    from context_compaction.infrastructure.timeline import SqlTimelineStore

    h = make_harness("timeline")
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "p", "messages": [user(SECRET)]}))
    # A follower that read a checkpoint's summary before the purge writes it after.
    late = SqlTimelineStore(Inspect(h.new_bus()).db)
    ok(h.do({"type": "purge_session", "session_id": "p"}))
    late.put(TimelineEntry(key="context_checkpoint:cp_late", session_id="p", checkpoint_id="cp_late",
                           content=f"summary with {SECRET}", created_at="2026-01-01T00:00:00+00:00"))
    assert SECRET not in repr(h.query("SELECT * FROM {t}rm_timeline"))
    # (a live session's entries are written as before)
    ok(h.do({"type": "start_session", "session_id": "live", "model": "gpt-4o"}))
    late.put(TimelineEntry(key="context_checkpoint:cp_live", session_id="live", checkpoint_id="cp_live",
                           content="kept", created_at="2026-01-01T00:00:00+00:00"))
    assert [r[0] for r in h.query("SELECT content FROM {t}rm_timeline WHERE session_id = ?", ("live",))] == ["kept"]


@pytest.mark.backends("postgres", "sqlite")
def test_a_dry_run_candidate_keeps_no_content_after_a_purge(make_harness: MakeHarness, backend: str) -> None:
    """A dry run's candidate (issue 43) holds its summary in the attempt log; the purge
    rewrote attempts' ledgers but left candidates whole (review of issue 35)."""
    from helpers import RecordingSummarizer
    from purge_builders import _dump

    h = make_harness("candidate", adapters={"summarizer": RecordingSummarizer(text=f"## Goal\nKeep {SECRET}.")},
                     context_compaction={"keep_recent_tokens": 300})
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    for i in range(6):
        ok(h.do({"type": "append_messages", "session_id": "p", "messages": [
            user(f"step {i}: {SECRET} " + "word " * 300, turn_id=f"t{i}")]}))
    prepared = ok(h.do({"type": "compact", "session_id": "p", "dry_run": True}))
    assert prepared["status"] == "candidate", prepared
    assert SECRET.encode() in _dump(h)
    ok(h.do({"type": "purge_session", "session_id": "p"}))
    assert SECRET.encode() not in _dump(h), "the candidate's summary was left in the attempt log"


@pytest.mark.backends("postgres", "sqlite")
def test_an_attempt_recorded_after_a_purge_keeps_no_content(make_harness: MakeHarness, backend: str) -> None:
    """A compaction that read the session before the purge records its attempt (a
    ledger whose dropped items quote messages) after the erasure: the purge's rewrite
    missed it (review of issue 35)."""
    from context_compaction.domain.attempts import Attempt
    from purge_builders import _dump

    h = make_harness("attempt")
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "p", "messages": [user(f"my key is {SECRET}")]}))
    late = h.new_bus().services.attempts  # another process, its compaction still running
    ok(h.do({"type": "purge_session", "session_id": "p"}))
    late.record("p", Attempt(
        attempt_id="att_late", at="2026-01-01T00:00:00+00:00", reason="auto", outcome="compacted",
        stage="summarized", summarizer="llm", model="gpt-4o", prompt_version="v", duration_ms=1,
        tokens_before=10, tokens_after=5, error_code=None, at_seq=1,
        ledger={"items_total": 1, "in_summary": 0, "restored": 0, "dropped": 1,
                "dropped_items": [{"kind": "id", "value": SECRET, "seq": 1}]}))
    assert SECRET.encode() not in _dump(h), "the late attempt's ledger kept the content"
    assert len(late.attempts("p")) == 1  # (the fact of the attempt stays)
