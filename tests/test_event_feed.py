"""The event feed (issue 15): ``read_events``, ``GET /v1/events``, ``ctxc events``.

A follower keeps the last position it processed and asks for what comes after it:
started late, stopped and resumed, it sees every stored event once, in order.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from backends import Databases
from context_compaction.domain.attempts import attempts_aggregate_id
from context_compaction.domain.session import Session
from helpers import Harness, assistant, err, ok, tool, user

SMALL_KEEP: dict[str, Any] = {"context_compaction": {"keep_recent_tokens": 10}}


def stored(h: Harness) -> list[tuple[int, str, int]]:
    """(position, aggregate id, version) of every stored event, as the recorder lists them."""
    app = h.bus.services.extra["app"]
    return [(n.id, n.originator_id.hex, n.originator_version)
            for n in app.recorder.select_notifications(start=1, limit=100_000)]


def work(h: Harness, session: str, turns: int) -> None:
    for n in range(turns):
        ok(h.do({"type": "append_messages", "session_id": session, "messages": [
            user(f"step {n}", turn_id=f"t{n}"),
            assistant("reading", [(f"c{n}", "read_file", '{"path": "x.py"}')]),
            tool(f"c{n}", f"line {n}\n" * 100),
            assistant(f"done {n}"),
        ]}))


class Follower:
    """What the README shows: a position kept between runs, pages read after it."""

    def __init__(self) -> None:
        self.position = 0
        self.seen: list[dict[str, Any]] = []

    def run(self, h: Harness, *, page: int, pages: int | None = None) -> None:
        while pages is None or pages > 0:
            events = ok(h.do({"type": "read_events", "after": self.position, "limit": page}))["events"]
            if not events:
                return
            self.seen += events
            self.position = events[-1]["position"]
            pages = None if pages is None else pages - 1


def test_a_late_follower_that_stops_and_resumes_sees_every_event_once_in_order(
    databases: Databases,
) -> None:
    h = databases.harness(**SMALL_KEEP)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    work(h, "a", 3)
    follower = Follower()  # starts late: events are already stored
    ok(h.do({"type": "start_session", "session_id": "b", "model": "gpt-4o"}))
    follower.run(h, page=3, pages=2)  # stops after two pages
    work(h, "b", 2)
    ok(h.do({"type": "compact", "session_id": "a"}))
    reader = h.reopen()  # a restart: the follower resumes from its kept position
    assert reader is h.bus
    follower.run(h, page=4)
    ok(h.do({"type": "delete_session", "session_id": "b"}))
    follower.run(h, page=1000)

    expected = stored(h)
    assert [(e["position"], e["version"]) for e in follower.seen] == [(n, v) for n, _, v in expected]
    for e, (_, oid, _) in zip(follower.seen, expected, strict=True):
        assert oid in (Session.create_id(e["session_id"]).hex, attempts_aggregate_id(e["session_id"]).hex)
    assert len(expected) > 15
    types = [e["type"] for e in follower.seen]
    assert {"Started", "MessageAppended", "CheckpointCommitted", "Deleted"} <= set(types)
    assert "Session.Started" not in types  # the class name, not the qualified name
    for e in follower.seen:
        at = datetime.fromisoformat(e["at"])
        assert at.utcoffset() == timedelta(0)
        assert "originator_id" not in e["payload"] and "timestamp" not in e["payload"]
    appended = next(e for e in follower.seen if e["type"] == "MessageAppended")
    assert appended["session_id"] == "a" and appended["payload"]["content"] == "step 0"
    assert appended["payload"]["seq"] == 1 and appended["payload"]["role"] == "user"
    # Nothing after the last position.
    assert ok(h.do({"type": "read_events", "after": follower.position}))["events"] == []


def test_the_attempt_log_events_name_their_session(databases: Databases) -> None:
    h = databases.harness(**SMALL_KEEP)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    work(h, "s", 3)
    ok(h.do({"type": "compact", "session_id": "s"}))
    events = ok(h.do({"type": "read_events", "limit": 1000}))["events"]
    attempts = [e for e in events if stored_id(h, e["position"]) == attempts_aggregate_id("s").hex]
    assert attempts and all(e["session_id"] == "s" for e in attempts)
    # A page that starts after the aggregate's first event still names the session.
    late = ok(h.do({"type": "read_events", "after": attempts[-1]["position"] - 1, "limit": 1}))
    assert late["events"][0]["session_id"] == "s"


def stored_id(h: Harness, position: int) -> str:
    return next(oid for n, oid, _ in stored(h) if n == position)


def test_bad_positions_and_limits_are_invalid_and_default_limit_is_100(harness: Harness) -> None:
    for bad in ({"after": -1}, {"limit": 0}, {"limit": 1001}, {"after": "3"}, {"limit": 2.5}):
        err(harness.do({"type": "read_events", **bad}), "invalid_command")
    ok(harness.do({"type": "start_session", "session_id": "x", "model": "gpt-4o"}))
    for n in range(60):
        ok(harness.do({"type": "append_messages", "session_id": "x",
                       "messages": [user(f"m{n}"), user(f"n{n}")]}))
    assert len(ok(harness.do({"type": "read_events"}))["events"]) == 100
    assert len(ok(harness.do({"type": "read_events", "limit": 1000}))["events"]) == 121
