"""Builders of the compaction handler tests (unit) and their storage twins (integration)."""

from __future__ import annotations

import pytest
from backends import MakeHarness
from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, RecordingSummarizer, ok

SID = "s"


def make(make_harness: MakeHarness, summarizer: RecordingSummarizer | None = None, *, name: str = "c",
         **settings) -> Harness:
    settings.setdefault("summarizer", "extractive")
    settings.setdefault("context_compaction", {"keep_recent_tokens": 3000})
    adapters = {"summarizer": summarizer} if summarizer else {}
    h = make_harness(name, adapters=adapters, **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def add_turns(h: Harness, turns, *, sid: str = SID) -> None:
    for t in turns:
        ok(h.do({"type": "append_messages", "session_id": sid, "messages": t.messages(),
                 "command_id": f"{sid}:{t.turn_id}"}))


def compact(h: Harness, sid: str = SID) -> dict:
    return ok(h.do({"type": "compact", "session_id": sid}))


def projection(h: Harness, sid: str = SID) -> dict:
    return ok(h.do({"type": "get_projection", "session_id": sid}))


def history(h: Harness, sid: str = SID) -> list[dict]:
    return ok(h.do({"type": "get_history", "session_id": sid, "include_invalidated": True}))["messages"]


@pytest.fixture
def turns():
    return coding_session(8, big_output_chars=3_000)
