"""Shared by the tests of session tree and their neighbours."""

from __future__ import annotations

import json
from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, ok, user


SID = "p"


def start(make_harness: MakeHarness, summarizer: RecordingSummarizer | None = None, *, name: str = "tree",
          sid: str = SID) -> Harness:
    h = make_harness(name, adapters={"summarizer": summarizer or RecordingSummarizer(text="## Goal\nGo on.")},
                     context_compaction={"keep_recent_tokens": 400})
    ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    return h


def filler(h: Harness, n: int, start: int = 0, sid: str = SID) -> None:
    for i in range(start, start + n):
        ok(h.do({"type": "append_messages", "session_id": sid,
                 "messages": [user(f"{sid} step {i}"), assistant(f"{sid} done {i} " + "words " * 40)]}))


def history(h: Harness, sid: str, invalidated: bool = True) -> list[dict]:
    return ok(h.do({"type": "get_history", "session_id": sid, "include_invalidated": invalidated}))["messages"]


def fork(h: Harness, new: str, sid: str = SID, **at: int) -> dict:
    return ok(h.do({"type": "fork_session", "session_id": sid, "new_session_id": new, **at}))
