"""``verify`` while another bus appends and searches (the search index and its
marks move under it, ADR 0049 point 7): every report is clean."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from backends import MakeHarness
from helpers import Harness, ok, user

from context_compaction.infrastructure.verify import verify


@pytest.mark.backends("sqlite", "postgres")
def test_verify_stays_clean_while_appends_and_searches_move_the_index(make_harness: MakeHarness) -> None:
    h: Harness = make_harness("main")
    for sid in ("v1", "v2"):
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
        ok(h.do({"type": "append_messages", "session_id": sid, "messages": [user(f"kiwi {k}") for k in range(5)]}))
    worker = h.new_bus()
    done = threading.Event()
    errors: list[Any] = []
    rounds = [0]

    def work() -> None:
        k = 0
        while not done.is_set() and k < 20_000:  # (until the verifies are done)
            for sid in ("v1", "v2"):
                for command in ({"type": "append_messages", "session_id": sid, "messages": [user(f"kiwi {k}")]},
                                {"type": "search_history", "session_id": sid, "query": "kiwi", "limit": 5}):
                    answer = worker.dispatch_json(command)
                    if not answer["ok"]:
                        errors.append(answer["error"])
            k += 1
            rounds[0] = k

    thread = threading.Thread(target=work)
    thread.start()
    reports = []
    overlapped: list[bool] = []
    try:
        # (six verifies, and more until one overlapped a round: a loaded machine can
        # starve the worker through a verify)
        while len(reports) < 6 or (not any(overlapped) and len(reports) < 30):
            started = rounds[0]
            report = h.inspect.verify()
            reports.append({name: (t.missing[:3], t.extra[:3], t.different[:3])
                            for name, t in report.tables.items() if not t.ok})
            overlapped.append(rounds[0] > started)
    finally:
        done.set()
        thread.join(120)
    assert errors == []
    assert reports == [{}] * len(reports)
    assert any(overlapped)  # (the index moved while a verify ran)
