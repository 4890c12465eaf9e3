"""A session's children are listed in one order on every backend (issue 37: ``rm_tree``
read through ``TableOps.select`` and sorted in Python): by creation time, then by
session id as code points (no database collation), for the tree of ``list_sessions``
and the ``children`` of ``get_context_usage`` alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from backends import MakeHarness
from helpers import ok, user

BACKENDS = ("memory", "sqlite", "postgres")


class SteppedClock:
    """``now()`` stands still until ``step()``: children created between two steps tie."""

    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def step(self) -> None:
        self.at += timedelta(seconds=1)


def _children(h: Any, sid: str) -> tuple[list[str], list[str]]:
    usage = ok(h.do({"type": "get_context_usage", "session_id": sid}))["children"]
    tree = ok(h.do({"type": "list_sessions", "tree": True}))["tree"]
    node = next(n for n in tree if n["session"]["session_id"] == sid)
    return [c["session_id"] for c in usage], [c["session"]["session_id"] for c in node["children"]]


def test_children_are_listed_by_creation_then_code_point_on_every_backend(make_harness: MakeHarness) -> None:
    clock = SteppedClock()
    h = make_harness("order", adapters={"clock": clock})
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "p", "messages": [user("one"), user("two")]}))
    clock.step()
    # Created in this order at one instant: listed by code point ("B" < "_" < "a" < "b"),
    # where a natural-language collation (en_US) would put "a" before "B".
    for new in ("b", "a", "_z", "B"):
        ok(h.do({"type": "fork_session", "session_id": "p", "new_session_id": new, "at_seq": 1}))
    clock.step()
    ok(h.do({"type": "fork_session", "session_id": "p", "new_session_id": "A", "at_seq": 2}))  # later: last
    want = ["B", "_z", "a", "b", "A"]
    assert _children(h, "p") == (want, want)
    h.reopen()  # read back from the store, not from a process's caches
    assert _children(h, "p") == (want, want)
