"""Issue 36 finding 5: a ``read_events`` page is bounded in bytes as well as in count
(at least one event a page); the HTTP and CLI feeds follow ``more`` (ADR 0071)."""

from __future__ import annotations

from typing import Any

from helpers import Harness, ok, user

BACKENDS = ("memory", "sqlite", "postgres")
BIG = 300_000


def _fill(h: Harness) -> None:
    ok(h.do({"type": "start_session", "session_id": "f", "model": "gpt-4o"}))
    for i in range(12):
        ok(h.do({"type": "append_messages", "session_id": "f", "messages": [user(f"{i} " + "x" * BIG)]}))


def test_pages_stop_at_their_bytes_and_hold_at_least_one_event(harness: Harness) -> None:
    _fill(harness)
    everything = ok(harness.do({"type": "read_events", "limit": 1000}))
    assert everything["more"] is False
    positions = [e["position"] for e in everything["events"]]
    assert len(positions) == 13

    recorder = harness.bus.services.feed.app.recorder
    fetched: list[int] = []
    select = recorder.select_notifications

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = select(*args, **kwargs)
        fetched.append(sum(len(n.state) for n in rows))
        return rows

    recorder.select_notifications = counted
    try:
        seen, after, pages = [], 0, []
        while True:
            fetched.clear()
            page = ok(harness.do({"type": "read_events", "after": after, "limit": 1000, "max_bytes": 1_000_000}))
            if not page["events"]:
                break
            pages.append(len(page["events"]))
            # (what was read from the store for one page stays near its bound, not 1000 events)
            assert sum(fetched) <= 1_000_000 + 2 * (BIG + 10_000), fetched
            seen += [e["position"] for e in page["events"]]
            after = seen[-1]
            if not page["more"]:
                break
        assert seen == positions
        assert pages[0] == 4 and max(pages[1:]) == 3 and len(pages) == 4, pages  # (3 × 300 kB fit in 1 MB)
        one = ok(harness.do({"type": "read_events", "after": positions[0], "limit": 1000, "max_bytes": 1}))
        assert len(one["events"]) == 1 and one["more"] is True
    finally:
        recorder.select_notifications = select


def test_http_pages_stop_at_max_bytes_and_say_more(harness: Harness) -> None:
    from fastapi.testclient import TestClient

    from context_compaction.infrastructure.http import create_app

    _fill(harness)
    client = TestClient(create_app(harness.bus, token=None, max_body_bytes=1_000_000))
    after, pages = 0, []
    while True:
        body = client.get(f"/v1/events?after={after}&max_bytes=1000000").json()
        assert body["ok"], body
        pages.append(len(body["result"]["events"]))
        after = body["result"]["events"][-1]["position"]
        if not body["result"]["more"]:
            break
    assert pages == [4, 3, 3, 3]
    assert client.get("/v1/events?max_bytes=0").json()["error"]["code"] == "invalid_command"
