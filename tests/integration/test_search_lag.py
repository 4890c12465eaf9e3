"""The search index lags the appends (issue 18, ADR 0049).

An append writes no ``rm_search`` row; ``search_history`` first indexes its session's
messages above the session's mark, then queries. Whatever was appended before a search
is found by it, once, on every backend; ``verify`` compares ``rm_search`` up to the mark.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from backends import MakeHarness
from helpers import Harness, assistant, ok, user
from legacy_fixture import build_legacy_db

BACKENDS = ("memory", "sqlite", "postgres")
SID = "lag"


def start(make_harness: MakeHarness, name: str = "lag") -> Harness:
    h = make_harness(name)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def append(h: Harness, *texts: str, sid: str = SID) -> list[int]:
    messages = [user(t) if i % 2 == 0 else assistant(t) for i, t in enumerate(texts)]
    return ok(h.do({"type": "append_messages", "session_id": sid, "messages": messages}))["seqs"]


def seqs(h: Harness, query: str, sid: str = SID, **extra: object) -> list[int]:
    hits = ok(h.do({"type": "search_history", "session_id": sid, "query": query, "limit": 100, **extra}))["hits"]
    return sorted(hit["seq"] for hit in hits)


def mark(h: Harness) -> int | None:
    if h.is_memory:
        return h.inspect.memory.recorder.tables.search_marks.get(SID)
    rows = h.query("SELECT seq FROM {t}rm_search_marks WHERE session_id = ?", (SID,))
    return int(rows[0][0]) if rows else None


def test_an_append_writes_no_search_row_and_the_next_search_indexes_it(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, "the kiwi build", "kiwi noted")
    assert h.count("rm_search") == 0 and mark(h) is None  # (the append's cost, moved)
    assert seqs(h, "kiwi") == [1, 2]
    assert h.count("rm_search") == 2 and mark(h) == 2
    assert seqs(h, "kiwi") == [1, 2] and h.count("rm_search") == 2


def test_a_search_finds_what_was_appended_after_the_last_search(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, "kiwi one")
    assert seqs(h, "kiwi") == [1]
    append(h, "kiwi two", "no fruit here", "kiwi three")
    assert seqs(h, "kiwi") == [1, 2, 4]
    assert seqs(h, "fruit") == [3]
    append(h, "kiwi four")
    assert seqs(h, "kiwi") == [1, 2, 4, 5] and mark(h) == 5


@pytest.mark.backends("sqlite", "postgres")  # (a restart of an in-memory store loses it all)
def test_a_search_after_a_restart_finds_messages_appended_before_and_after_it(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, "kiwi before the restart")
    assert seqs(h, "kiwi") == [1]
    append(h, "kiwi unindexed at the restart")
    h.reopen()
    assert seqs(h, "kiwi") == [1, 2]
    append(h, "kiwi after the restart")
    assert seqs(h, "kiwi") == [1, 2, 3]


def test_invalidated_messages_stay_indexed_and_new_seqs_after_a_rewind_are_found(
    make_harness: MakeHarness,
) -> None:
    h = start(make_harness)
    append(h, "kiwi a", "kiwi b", "kiwi c", "kiwi d")
    assert seqs(h, "kiwi") == [1, 2, 3, 4]
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 2}))
    assert seqs(h, "kiwi") == [1, 2]
    append(h, "kiwi e", "kiwi f")  # seqs are never reused: 5 and 6, above the mark
    assert seqs(h, "kiwi") == [1, 2, 5, 6]
    assert seqs(h, "kiwi", include_invalidated=True) == [1, 2, 3, 4, 5, 6]
    # invalidated before they were ever indexed: found only with include_invalidated
    append(h, "kiwi g")
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [7]}))
    assert seqs(h, "kiwi") == [1, 2, 5, 6]
    assert seqs(h, "kiwi", include_invalidated=True) == [1, 2, 3, 4, 5, 6, 7]
    assert h.count("rm_search") == 7


@pytest.mark.backends("sqlite", "postgres")  # (the importer writes through SQL)
def test_a_legacy_import_is_searchable(tmp_path: Path, make_harness: MakeHarness) -> None:
    from context_compaction.infrastructure.legacy import import_legacy

    h = make_harness("legacy")
    legacy = tmp_path / "picobot.db"
    build_legacy_db(legacy)
    report = import_legacy(h.bus, legacy)
    assert report.imported > 0 and h.count("rm_search") == 0
    sid = "feishu:oc:dialog-1"
    history = ok(h.do({"type": "get_history", "session_id": sid, "include_invalidated": True}))
    expected = sorted(m["seq"] for m in history["messages"]
                      if isinstance(m.get("content"), str) and "import" in m["content"])
    found = ok(h.do({"type": "search_history", "session_id": sid, "query": "import",
                     "include_invalidated": True, "limit": 100}))["hits"]
    assert len(expected) == 3 and sorted(x["seq"] for x in found) == expected


@pytest.mark.backends("sqlite", "postgres")
def test_two_buses_searching_while_a_third_appends_give_no_error_and_every_hit_once(
    make_harness: MakeHarness,
) -> None:
    h = start(make_harness)
    searchers = [h.new_bus(), h.new_bus()]
    appender = h.new_bus()
    errors: list[BaseException] = []
    rounds = 15

    def search_loop(bus) -> None:
        try:
            for _ in range(rounds):
                result = bus.dispatch_json({"type": "search_history", "session_id": SID, "query": "kiwi",
                                            "limit": 1000})
                assert result["ok"], result
                found = [x["seq"] for x in result["result"]["hits"]]
                assert len(found) == len(set(found))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def append_loop() -> None:
        try:
            for i in range(rounds):
                result = appender.dispatch_json({"type": "append_messages", "session_id": SID,
                                                 "messages": [user(f"kiwi {i}"), assistant(f"kiwi {i} ok")]})
                assert result["ok"], result
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=append_loop)] + [
        threading.Thread(target=search_loop, args=(bus,)) for bus in searchers
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert seqs(h, "kiwi") == list(range(1, 2 * rounds + 1))
    assert h.count("rm_search") == 2 * rounds and mark(h) == 2 * rounds


@pytest.mark.backends("sqlite", "postgres")
def test_verify_compares_the_index_up_to_the_mark_and_finds_a_deleted_row(make_harness: MakeHarness) -> None:
    from context_compaction.infrastructure.verify import verify

    h = start(make_harness)
    append(h, "kiwi one", "kiwi two", "kiwi three")
    assert seqs(h, "kiwi") == [1, 2, 3]
    append(h, "kiwi four (not indexed yet)")
    app, rm = h.inspect.app, h.bus.services.read_model
    report = verify(app, rm)
    assert report.ok and report.tables["rm_search"].rebuilt == 3
    h.execute("DELETE FROM {t}rm_search WHERE session_id = ? AND seq = 2", (SID,))
    report = verify(app, rm)
    assert not report.ok and report.tables["rm_search"].missing == [f"{SID}/2"]
    assert seqs(h, "kiwi") == [1, 3, 4]  # (a later search does not hide it: below the mark)
    h.execute("UPDATE {t}rm_search SET body = 'plum' WHERE session_id = ? AND seq = 3", (SID,))
    assert verify(app, rm).tables["rm_search"].different == [f"{SID}/3"]


@pytest.mark.backends("sqlite", "postgres")
def test_a_rebuild_empties_the_index_and_its_marks(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, "kiwi one", "kiwi two")
    assert seqs(h, "kiwi") == [1, 2]
    h.bus.services.read_model.rebuild()
    assert h.count("rm_search") == 0 and mark(h) is None
    assert seqs(h, "kiwi") == [1, 2]


@pytest.mark.backends("sqlite", "postgres")
def test_indexing_goes_in_batches_until_the_session_is_indexed(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, "kiwi 1", "kiwi 2", "kiwi 3", "kiwi 4", "kiwi 5")
    assert h.bus.services.read_model.index_search(SID, batch=2) == 5
    assert mark(h) == 5 and h.count("rm_search") == 5
    assert h.bus.services.read_model.index_search(SID, batch=2) == 0
