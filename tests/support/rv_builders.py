"""The ``rv`` session of the issue-16 tests (pins, revert, search), which were folded
into several modules: one definition here, since test modules do not import each other."""

from __future__ import annotations

from backends import MakeHarness
from helpers import Harness, assistant, ok, user

RV = "rv"


def rv_session(make_harness: MakeHarness, **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 400})
    h = make_harness("rev16", **settings)
    ok(h.do({"type": "start_session", "session_id": RV, "model": "gpt-4o"}))
    return h


def rv_filler(h: Harness, n: int, start: int = 0, sid: str = RV) -> None:
    for i in range(start, start + n):
        ok(h.do({"type": "append_messages", "session_id": sid,
                 "messages": [user(f"step {i}"), assistant(f"done {i} " + "words " * 40)]}))


def rv_search(h: Harness, query: str, **extra) -> list[int]:
    found = ok(h.do({"type": "search_history", "session_id": RV, "query": query, **extra}))
    return [hit["seq"] for hit in found["hits"]]
