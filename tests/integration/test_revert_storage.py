"""revert_checkpoint (issue 16): the active checkpoint is withdrawn, raw history untouched."""

from __future__ import annotations

import pytest

import threading

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, ok, user


SID = "v"


def start(make_harness: MakeHarness, summarizer: RecordingSummarizer | None = None) -> Harness:
    h = make_harness("revert", adapters={"summarizer": summarizer or RecordingSummarizer(text="## Goal\nGo on.")},
                     context_compaction={"keep_recent_tokens": 400})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def filler(h: Harness, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        ok(h.do({"type": "append_messages", "session_id": SID,
                 "messages": [user(f"step {i}"), assistant(f"done {i} " + "words " * 40)]}))


def compact(h: Harness) -> dict:
    return ok(h.do({"type": "compact", "session_id": SID}))


def projection(h: Harness) -> dict:
    return ok(h.do({"type": "get_projection", "session_id": SID}))


def revert(h: Harness, checkpoint_id: str, **extra) -> dict:
    return h.do({"type": "revert_checkpoint", "session_id": SID, "checkpoint_id": checkpoint_id, **extra})


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
    from context_compaction.infrastructure.verify import verify

    report = verify(h.bus.services.extra["app"], h.bus.services.read_model)
    assert all(t.ok for t in report.tables.values()), report.tables
    assert report.tables["rm_pins"].rebuilt == 1 and report.tables["rm_reverts"].rebuilt == 1
