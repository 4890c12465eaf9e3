"""``verify`` and the lagging search index (ADR 0049 point 7)."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from helpers import Harness, assistant, ok, user
from rv_builders import RV, rv_session, rv_search

from context_compaction.domain.session import session_aggregate_id
from context_compaction.infrastructure.verify import verify

SID = "s"


def _session(make_harness: MakeHarness, texts: list[str]) -> Harness:
    h = make_harness("main")
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for i, text in enumerate(texts):  # one command per message: message seq k is version k + 1
        ok(h.do({"type": "append_messages", "session_id": SID,
                 "messages": [user(text) if i % 2 == 0 else assistant(text)]}))
    return h


def _search(h: Harness, query: str) -> list[int]:
    hits = ok(h.do({"type": "search_history", "session_id": SID, "query": query, "limit": 100}))["hits"]
    return sorted(hit["seq"] for hit in hits)


def _damage_state(h: Harness, version: int, state: bytes) -> None:
    table = h.inspect.events_table.qualified
    oid = session_aggregate_id(SID)
    with h.inspect.db.write() as cur:
        cur.execute(f"UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                    (state, oid if h.is_postgres else oid.hex, version))
        assert cur.rowcount == 1


@pytest.mark.backends("sqlite", "postgres")
def test_verify_reports_no_search_row_of_a_message_before_a_damaged_event(make_harness: MakeHarness) -> None:
    """Messages 1-2 are intact and indexed; message 3's stored event is damaged. The
    rebuild keeps rm_messages 1-2 of the session (it is left out from its damaged row
    on), so rm_search rows 1-2 are what the events say: verify must not call them
    unexpected. (verify.py ``_search_rows`` skips every message of a session in
    ``broken`` for the whole batch, including the ones before the damage.)"""
    h = _session(make_harness, ["kiwi one", "kiwi two", "kiwi three", "kiwi four"])
    assert _search(h, "kiwi") == [1, 2, 3, 4]
    _damage_state(h, 4, b'{"seq": 3, "role": "us')
    report = h.inspect.verify()
    assert not report.ok  # (the damage itself is reported)
    beyond = set(report.tables["rm_messages"].extra)  # the rows from the damaged one on
    assert {f"{SID}/3", f"{SID}/4"} <= beyond
    assert set(report.tables["rm_search"].extra) <= beyond, report.tables["rm_search"]


@pytest.mark.backends("sqlite", "postgres")
def test_verify_reports_a_search_row_above_the_mark_as_unexpected(make_harness: MakeHarness) -> None:
    h = _session(make_harness, ["kiwi one", "kiwi two"])
    assert _search(h, "kiwi") == [1, 2]
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("kiwi three")]}))
    h.execute("INSERT INTO {t}rm_search (session_id, seq, role, turn_id, body) VALUES (?, 3, 'user', NULL, 'kiwi three')",
              (SID,))
    report = h.inspect.verify()
    assert report.tables["rm_search"].extra == [f"{SID}/3"]
    assert _search(h, "kiwi") == [1, 2, 3]  # the next search does not trip over it
    assert h.inspect.verify().ok


# verify finds and rebuilds a derived full-text index that lost its rows (SQLite's FTS table).
def test_verify_finds_and_rebuilds_a_search_index_out_of_step(make_harness: MakeHarness) -> None:
    h = rv_session(make_harness)
    ok(h.do({"type": "append_messages", "session_id": RV, "messages": [user("bluefinch is the host"), assistant("ok")]}))
    assert rv_search(h, "bluefinch") == [1]
    app, rm = h.inspect.app, h.bus.services.read_model
    assert verify(app, rm).ok
    if h.is_postgres:
        return  # (PostgreSQL keeps its GIN index in step itself: there is no separate table to lose)
    h.execute("INSERT INTO rm_search_fts (rm_search_fts) VALUES ('delete-all')")
    assert rv_search(h, "bluefinch") == []  # the derived index lost its rows, rm_search did not
    report = verify(app, rm)
    assert not report.ok and report.search_index and "rebuilt" in report.text()
    assert report.to_dict()["search_index"] == report.search_index
    assert rv_search(h, "bluefinch") == [1]
    assert verify(app, rm).ok
