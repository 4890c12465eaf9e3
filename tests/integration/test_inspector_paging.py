"""The inspector reads pages, not sessions (issue 41): on a 100,000-message session
every page asks the bus for a bounded number of rows (counted, not timed; the timing is
``benchmarks/inspector_pages.py``). And ``read_session_events``, the query it pages by."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from inspector_fixture import SETTINGS

from context_compaction.infrastructure.inspector import chart, mount, views

ROWS = ("messages", "events", "hits", "sessions", "checkpoints", "attempts")


class CountingBus:
    """A bus that counts the rows each query answered with."""

    def __init__(self, bus: Any) -> None:
        self.bus = bus
        self.rows: dict[str, int] = {}

    def dispatch_json(self, command: dict[str, Any]) -> dict[str, Any]:
        envelope = self.bus.dispatch_json(command)
        result = envelope.get("result") or {}
        found = sum(len(result.get(k) or []) for k in ROWS)
        found += len((result.get("projection") or {}).get("messages") or [])
        self.rows[command["type"]] = self.rows.get(command["type"], 0) + found
        return envelope


@pytest.fixture(scope="module")
def big() -> Any:
    from helpers import memory_url

    from context_compaction import Settings, bootstrap

    bus = bootstrap(Settings(database_url=memory_url(), **SETTINGS))
    d = bus.dispatch_json
    assert d({"type": "start_session", "session_id": "big", "model": "tiny"})["ok"]
    for k in range(100):
        batch = []
        for n in range(500):
            # One file path per batch (what the search page looks for): a path in every
            # message gave each compaction's must-keep ledger ~1,500 items to merge, ten
            # times the rest of the build, and the pages' bounds count messages, events
            # and hits, not ledger items. The others are bare numbers: "step k n: go on"
            # made each compaction's summary read 5,000 requests, 6x the cost a message.
            text = f"step {k}-{n}: look at src/m{n}.py" if n == 7 else f"{k} {n}"
            batch += [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
        assert d({"type": "append_messages", "session_id": "big", "messages": batch})["ok"]
        # Compacted as a real session is, before its context outgrows the window by far:
        # every 5,000 messages, 20 checkpoints. Summarizing costs per message; each
        # compaction's fixed cost (~0.4 s) made one per batch ~40 s of this build (ADR 0089).
        if k % 5 == 4:
            assert d({"type": "compact", "session_id": "big"})["ok"]
    yield bus
    bus.close()


def test_every_page_of_a_100k_message_session_reads_a_bounded_number_of_rows(big: Any) -> None:
    counting = CountingBus(big)
    app = FastAPI()
    mount(app, counting, None)
    c = TestClient(app)
    version = big.dispatch_json({"type": "read_session_events", "session_id": "big", "limit": 1})["result"]["version"]
    assert version > 100_000
    cp = big.dispatch_json({"type": "list_checkpoints", "session_id": "big"})["result"]["checkpoints"][-1]
    pages = {
        "/ui": 2 * views.SESSIONS_PER_PAGE,
        "/ui/session?id=big": views.EVENTS_PER_PAGE + 1 + views.CHART_EVENTS + chart.MAX_START_TAIL + 200,
        "/ui/session?id=big&page=1000&chart=20": views.EVENTS_PER_PAGE + 1 + views.CHART_EVENTS
        + chart.MAX_START_TAIL + 200,
        "/ui/history?id=big": views.MESSAGES_PER_PAGE + 5000 + 100,
        "/ui/history?id=big&from=50000": views.MESSAGES_PER_PAGE + 5000 + 100,
        f"/ui/checkpoint?id=big&cp={cp['checkpoint_id']}": 20 + 200,
        "/ui/history?id=big&q=m7.py": views.MESSAGES_PER_PAGE + 50 + 5000 + 100,
    }
    for url, bound in pages.items():
        counting.rows.clear()
        answer = c.get(url)
        assert answer.status_code == 200, url
        read = sum(counting.rows.values())
        assert 0 < read <= bound, (url, counting.rows)
        if url.startswith("/ui/session"):
            rows = re.findall(r'<tr class="ev ', answer.text)
            assert len(rows) == views.EVENTS_PER_PAGE
        if url.startswith("/ui/history"):
            assert answer.text.count('<li id="m-') == views.MESSAGES_PER_PAGE
    # the last page of the timeline starts at version 1
    last = (version - 1) // views.EVENTS_PER_PAGE
    tail = c.get(f"/ui/session?id=big&page={last}").text
    assert re.findall(r'<tr class="ev [^"]*"><td class="num">(\d+)<', tail)[-1] == "1"
    assert "older events" not in tail


def test_read_session_events_pages_one_session_by_version(make_harness: Any, backend: str) -> None:
    bus = make_harness("main", **SETTINGS).bus
    d = bus.dispatch_json
    for sid in ("a", "b"):
        assert d({"type": "start_session", "session_id": sid, "model": "tiny"})["ok"]
        for n in range(3):
            assert d({"type": "append_messages", "session_id": sid,
                      "messages": [{"role": "user", "content": f"{sid}{n}"}]})["ok"]
    page = d({"type": "read_session_events", "session_id": "b", "from_version": 2, "limit": 2})["result"]
    assert page["version"] == 4 and page["session_id"] == "b"
    assert [(e["version"], e["type"]) for e in page["events"]] == [(2, "MessageAppended"), (3, "MessageAppended")]
    assert [e["payload"]["content"] for e in page["events"]] == ["b0", "b1"]
    everything = d({"type": "read_session_events", "session_id": "a"})["result"]["events"]
    assert [e["type"] for e in everything] == ["Started"] + ["MessageAppended"] * 3
    assert all(e["at"] for e in everything)
    assert d({"type": "read_session_events", "session_id": "a", "from_version": 9})["result"]["events"] == []
    assert d({"type": "read_session_events", "session_id": "zz"})["error"]["code"] == "session_not_found"
    for bad in ({"from_version": 0}, {"limit": 0}, {"limit": 1001}, {"from_version": "2"}):
        answer = d({"type": "read_session_events", "session_id": "a", **bad})
        assert answer["error"]["code"] == "invalid_command", bad


def test_replay_names_the_pins_and_cleared_results_of_its_version(make_harness: Any, backend: str) -> None:
    bus = make_harness("main", **SETTINGS).bus
    d = bus.dispatch_json
    assert d({"type": "start_session", "session_id": "p", "model": "tiny"})["ok"]
    d({"type": "append_messages", "session_id": "p", "messages": [{"role": "user", "content": "x"}] * 3})
    pinned = d({"type": "pin_messages", "session_id": "p", "seqs": [2]})["result"]["version"]
    assert d({"type": "replay_session", "session_id": "p", "at_version": pinned - 1})["result"]["pinned_seqs"] == []
    assert d({"type": "replay_session", "session_id": "p", "at_version": pinned})["result"]["pinned_seqs"] == [2]
    assert d({"type": "replay_session", "session_id": "p"})["result"]["cleared_seqs"] == []


def test_pages_of_a_session_never_compacted_do_not_replay_its_whole_history(make_harness: Any) -> None:
    """Without a checkpoint replay_session's projection is every message: the history
    page and the chart's starting state ask only for the state (replay_state)."""
    bus = make_harness("main", **SETTINGS).bus
    d = bus.dispatch_json
    assert d({"type": "start_session", "session_id": "raw", "model": "tiny"})["ok"]
    for k in range(12):
        assert d({"type": "append_messages", "session_id": "raw",
                  "messages": [{"role": "user", "content": f"m {k}-{n}"} for n in range(1000)]})["ok"]
    counting = CountingBus(bus)
    app = FastAPI()
    mount(app, counting, None)
    c = TestClient(app)
    for url, bound in {"/ui/history?id=raw": views.MESSAGES_PER_PAGE,
                       "/ui/history?id=raw&from=5000": views.MESSAGES_PER_PAGE,
                       "/ui/session?id=raw": views.EVENTS_PER_PAGE + 1 + views.CHART_EVENTS + chart.MAX_START_TAIL}.items():
        counting.rows.clear()
        assert c.get(url).status_code == 200, url
        assert sum(counting.rows.values()) <= bound, (url, counting.rows)


def test_replay_state_names_replay_session_s_state_without_the_projection(make_harness: Any, backend: str) -> None:
    from inspector_fixture import build

    bus = make_harness("main", **SETTINGS).bus
    build(bus, "s")
    d = bus.dispatch_json
    version = d({"type": "read_session_events", "session_id": "s", "limit": 1})["result"]["version"]
    for at in (None, 3, version // 2, version):
        asked = {"session_id": "s", **({"at_version": at} if at else {})}
        full = d({"type": "replay_session", **asked})["result"]
        state = d({"type": "replay_state", **asked})["result"]
        assert state == {k: v for k, v in full.items() if k != "projection"}, at
    assert d({"type": "replay_state", "session_id": "s", "at_version": version + 1})["error"]["code"] == (
        "invalid_command")
    assert d({"type": "replay_state", "session_id": "zz"})["error"]["code"] == "session_not_found"
