"""Many processes appending to ONE session never fail because others were busy
(issue 13, item 3).

A write that lost a race decides again holding the database's writer lock (ADR 0021):
on PostgreSQL the events table's EXCLUSIVE lock, on SQLite ``BEGIN IMMEDIATE``, taken
before the session's newer events are read; the retry budget for anything left is
time, not a count of attempts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from backends import MakeHarness
from helpers import in_thread, ok, user

WORKER = str(Path(__file__).parents[1] / "support" / "contention_worker.py")
PROCESSES, APPENDS = 8, 300


@pytest.mark.slow
def test_eight_processes_appending_to_one_session_never_give_up(
    make_harness: MakeHarness, tmp_path: Path, record_property: Any
) -> None:
    contended(make_harness("contended"), tmp_path, record_property)


def contended(h: Any, tmp_path: Path, record_property: Any) -> None:
    ok(h.do({"type": "start_session", "session_id": "one", "model": "gpt-4o"}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    outs = [tmp_path / f"w{i}.jsonl" for i in range(PROCESSES)]
    procs = [subprocess.Popen([sys.executable, WORKER, h.url, "one", str(i), str(APPENDS), str(outs[i])],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for i in range(PROCESSES)]
    waited = time.monotonic() + 120
    while not all(Path(f"{out}.ready").exists() for out in outs):  # imported and connected
        assert time.monotonic() < waited and all(p.poll() is None for p in procs), "a worker did not start"
        time.sleep(0.05)
    # A follower of the notification log polls while the 8 processes write (issue 37):
    # it must never pass an id that a later commit fills in.
    recorder = h.inspect.app.recorder
    writing = True
    seen: list[int] = []

    def follow() -> None:
        while True:
            last = not writing
            seen.extend(n.id for n in recorder.select_notifications(start=seen[-1] + 1 if seen else 1, limit=100))
            if last:
                return
            time.sleep(0.005)

    follower, followed = in_thread(follow)
    began = time.monotonic()
    for out in outs:
        Path(f"{out}.go").touch()
    for proc in procs:
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr.decode()[-2000:]
    elapsed = time.monotonic() - began
    writing = False
    follower.join(120)
    assert "error" not in followed, followed.get("error")
    stored_ids = [n.id for n in recorder.select_notifications(start=1, limit=10**6)]
    assert seen == stored_ids, "the follower saw every event once, in order"
    feed: list[int] = []
    while True:  # read_events, page by page
        page = ok(h.do({"type": "read_events", "after": feed[-1] if feed else 0, "limit": 500}))
        feed += [e["position"] for e in page["events"]]
        if not page["more"]:
            break
    assert feed == stored_ids, "read_events gave every event once, in order"
    record_property("followed_events", len(seen))
    results = [json.loads(line) for out in outs for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(results) == PROCESSES * APPENDS
    codes = Counter("ok" if r["envelope"]["ok"] else r["envelope"]["error"]["code"] for r in results)
    failures = [r["envelope"]["error"] for r in results if not r["envelope"]["ok"]]
    assert codes == {"ok": PROCESSES * APPENDS}, (codes, failures[:3])
    history = ok(h.do({"type": "get_history", "session_id": "one"}))["messages"]
    assert [m["seq"] for m in history] == list(range(1, PROCESSES * APPENDS + 1))
    stored = Counter(m["turn_id"] for m in history)
    assert all(stored[r["tag"]] == 1 for r in results), "every acknowledged append exactly once"
    by_tag = {m["turn_id"]: m["seq"] for m in history}
    assert all(r["envelope"]["result"]["seqs"] == [by_tag[r["tag"]]] for r in results)
    slowest = max(r["seconds"] for r in results)
    record_property("appends", len(results))
    record_property("give_ups", len(failures))
    record_property("slowest_append_s", round(slowest, 2))
    print(f"\nFIGURE contention {h.url.split(':')[0]}: {PROCESSES} processes x {APPENDS} appends on one session: "
          f"{dict(codes)} in {elapsed:.1f} s; slowest append {slowest:.2f} s")


def test_a_write_that_lost_a_race_is_decided_again_under_the_writer_lock(make_harness: MakeHarness) -> None:
    h = make_harness("race")
    a, b = h.bus, h.new_bus()  # two processes' worth of caches on one database
    ok(a.dispatch_json({"type": "start_session", "session_id": "one", "model": "gpt-4o"}))
    ok(a.dispatch_json({"type": "append_messages", "session_id": "one", "messages": [user("a1")]}))
    ok(b.dispatch_json({"type": "append_messages", "session_id": "one", "messages": [user("b1")]}))
    # a's held copy is one version behind: its optimistic save conflicts, the locked retry wins.
    assert ok(a.dispatch_json({"type": "append_messages", "session_id": "one", "messages": [user("a2")]}))["seqs"] == [3]
    assert "one" in a.services._contended, "the retry took the locked path"
    # On that path a refusal still changes nothing, and the next command still succeeds.
    events = h.events()
    ok(b.dispatch_json({"type": "append_messages", "session_id": "one", "messages": [user("b2")]}))
    refused = a.dispatch_json({"type": "append_messages", "session_id": "one",
                               "messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]})
    assert refused["error"]["code"] == "invalid_message"
    assert h.events() == events + 1
    assert ok(a.dispatch_json({"type": "invalidate_history", "session_id": "one", "kind": "rewind",
                               "to_seq": 3}))["context_generation"] == 1
    history = ok(b.dispatch_json({"type": "get_history", "session_id": "one", "include_invalidated": True}))
    assert [m["content"] for m in history["messages"]] == ["a1", "b1", "a2", "b2"]


def test_the_locked_retry_decides_without_another_connection(pg_databases: Any) -> None:
    """The decision under the writer lock never reads the database (ADR 0021): with a
    pool of one connection, a host command id's lost race still succeeds at once (it
    waited for a second connection, then gave up as "the session kept changing")."""
    h = pg_databases.harness("one-connection", postgres={"pool_size": 1, "max_overflow": 0})
    a, b = h.bus, h.new_bus()
    ok(a.dispatch_json({"type": "start_session", "session_id": "one", "model": "gpt-4o"}))
    ok(a.dispatch_json({"type": "append_messages", "session_id": "one", "messages": [user("a1")]}))
    ok(b.dispatch_json({"type": "append_messages", "session_id": "one", "messages": [user("b1")]}))
    began = time.monotonic()
    result = ok(a.dispatch_json({"type": "append_messages", "session_id": "one", "command_id": "host-1",
                                 "messages": [user("a2")]}))
    assert result["seqs"] == [3] and time.monotonic() - began < 5
    assert "one" in a.services._contended, "the retry took the locked path"
