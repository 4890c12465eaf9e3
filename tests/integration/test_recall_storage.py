"""Recall of compacted history (issue 16): get_history ranges, search_history."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from helpers import Harness, assistant, err, ok, user


SID = "r"


def start(make_harness: MakeHarness, **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 400})
    h = make_harness("recall", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def append(h: Harness, *messages: dict) -> list[int]:
    return ok(h.do({"type": "append_messages", "session_id": SID, "messages": list(messages)}))["seqs"]


def history(h: Harness, **query) -> list[dict]:
    return ok(h.do({"type": "get_history", "session_id": SID, **query}))["messages"]


def turn(i: int, fact: str = "") -> list[dict]:
    return [user(f"step {i}: please continue with the work {fact}".strip()),
            assistant(f"done with step {i}; " + "details " * 40)]


@pytest.mark.backends("sqlite", "postgres")  # (user text never reaches SQL as syntax)
def test_search_query_is_text_never_syntax(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    (seq,) = append(h, user('he said "OR" NEAR the end; it\'s 50% done * (x:y) ^ -z \x07bell\nline'))
    for query in ('"OR"', "NEAR", "it's", "50%", "(x:y)", "^", "-z", "'; DROP TABLE rm_messages; --",
                  "AND OR NOT", '"', "*", "x:y"):
        result = h.do({"type": "search_history", "session_id": SID, "query": query})
        assert result["ok"], (query, result)
    assert [x["seq"] for x in ok(h.do({"type": "search_history", "session_id": SID, "query": "NEAR"}))["hits"]] == [seq]
    assert ok(h.do({"type": "search_history", "session_id": SID, "query": "*"}))["hits"] == []
    snippet = ok(h.do({"type": "search_history", "session_id": SID, "query": "bell"}))["hits"][0]["snippet"]
    assert "\x07" not in snippet and "\n" not in snippet and "bell line" in snippet
    assert history(h) and len(history(h)) == 1  # nothing was dropped
    err(h.do({"type": "search_history", "session_id": SID, "query": ""}), "invalid_command")
    err(h.do({"type": "search_history", "session_id": SID, "query": "x", "limit": 0}), "invalid_command")
    err(h.do({"type": "search_history", "session_id": "nobody", "query": "x"}), "session_not_found")


def test_search_index_is_rebuilt_from_the_events(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, user("the deploy uses version 3.2.1"), assistant("noted: version 3.2.1"))
    before = ok(h.do({"type": "search_history", "session_id": SID, "query": "3.2.1"}))["hits"]
    assert len(before) == 2
    rm = h.bus.services.read_model
    rm.rebuild()
    assert ok(h.do({"type": "search_history", "session_id": SID, "query": "3.2.1"}))["hits"] == before
    from context_compaction.infrastructure.verify import verify

    report = verify(h.bus.services.extra["app"], rm)
    assert report.tables["rm_search"].ok and report.tables["rm_search"].rebuilt == 2


def test_a_version_6_read_model_gains_its_search_index_without_a_rebuild(make_harness: MakeHarness, caplog) -> None:
    h = start(make_harness)
    append(h, user("the cache lives in /var/cache/ctxc"), assistant("understood"))
    if not h.is_postgres:
        h.execute("DROP TABLE rm_search_fts")
    h.execute("DROP TABLE {t}rm_search")
    h.execute("UPDATE {t}rm_position SET notification_id = 6 WHERE name = 'schema'")
    position = h.query("SELECT notification_id FROM {t}rm_position WHERE name = 'read_model'")
    h.reopen()
    hits = ok(h.do({"type": "search_history", "session_id": SID, "query": "/var/cache/ctxc"}))["hits"]
    assert [x["seq"] for x in hits] == [1]
    assert h.query("SELECT notification_id FROM {t}rm_position WHERE name = 'read_model'") == position
    assert "rebuilding" not in caplog.text
    append(h, user("a later /var/cache/ctxc note"))
    assert len(ok(h.do({"type": "search_history", "session_id": SID, "query": "/var/cache/ctxc"}))["hits"]) == 2
