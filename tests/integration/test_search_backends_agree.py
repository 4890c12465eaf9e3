"""The lagging search index answers alike on memory, SQLite and PostgreSQL
through rewinds, re-appended seqs, deletes, clears, pins and compactions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backends import Databases, MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, event_count, ok, tool, user
from rv_builders import RV, rv_session, rv_search

SID = "sb"


def _turn(n: int) -> list[dict[str, Any]]:
    return [user(f"kiwi step {n} " + "please " * 20), assistant(None, [(f"c{n}", "grep", '{"q": "kiwi"}')]),
            tool(f"c{n}", f"kiwi result {n} " + "line " * 20, name="grep"), assistant(f"kiwi done {n}")]


def _script(h: Harness) -> list[Any]:
    out: list[Any] = []

    def search(**extra: Any) -> None:
        for query in ("kiwi", "grep", "result 3", "nothing-here"):
            answer = h.do({"type": "search_history", "session_id": SID, "query": query, "limit": 200, **extra})
            out.append(sorted((x["seq"], x["compacted"], x.get("invalidated")) for x in answer["result"]["hits"])
                       if answer["ok"] else answer["error"]["code"])

    steps = [
        {"type": "start_session", "session_id": SID, "model": "gpt-4o"},
        {"type": "append_messages", "session_id": SID, "messages": [m for n in range(6) for m in _turn(n)]},
        None,
        {"type": "compact", "session_id": SID},
        {"type": "append_messages", "session_id": SID, "messages": _turn(6)},
        None,
        {"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": 10},
        {"type": "append_messages", "session_id": SID, "messages": _turn(7)},
        None,
        {"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [6, 7]},
        {"type": "pin_messages", "session_id": SID, "seqs": [2]},
        None,
        {"type": "invalidate_history", "session_id": SID, "kind": "clear"},
        {"type": "append_messages", "session_id": SID, "messages": _turn(8)},
        None,
    ]
    for step in steps:
        if step is None:
            search()
            search(include_invalidated=True)
        else:
            answer = h.do(step)
            out.append(answer["ok"] or answer["error"]["code"])
    return out


def test_search_answers_alike_on_every_backend(tmp_path: Path, request: Any) -> None:
    answers = {}
    for kind in ("memory", "sqlite", "postgres"):
        if kind == "postgres":
            request.getfixturevalue("pg_databases")
        (tmp_path / kind).mkdir()
        dbs = Databases(kind, tmp_path / kind)
        try:
            answers[kind] = _script(dbs.harness("main", adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo.")},
                                                context_compaction={"keep_recent_tokens": 300}))
        finally:
            dbs.cleanup()
    assert answers["memory"] == answers["sqlite"], answers
    assert answers["sqlite"] == answers["postgres"], answers


# Search finds file names, parts of paths and words inside Chinese or Japanese text, and
# no query text is syntax, on SQLite and PostgreSQL alike.
BODY = ("Edit src/app/main.py and lib/util-helpers.ts; see https://example.com/docs/page, "
        "ticket ABC-123, release v1.2.3.")


@pytest.mark.parametrize(
    "query",
    ["main.py", "src/app/main.py", "app/main.py", "util-helpers.ts", "example.com", "docs/page",
     "ABC-123", "abc-123", "v1.2.3", "main", "helpers", "EDIT SRC"],
)
def test_search_finds_a_file_name_or_part_of_a_path_on_both_backends(make_harness: MakeHarness, query: str) -> None:
    h = rv_session(make_harness)
    ok(h.do({"type": "append_messages", "session_id": RV, "messages": [user(BODY), assistant("ok")]}))
    assert rv_search(h, query) == [1]


@pytest.mark.parametrize(
    ("query", "expected"),
    [("数据库", [2]), ("连接失败", [2]), ("数据库 timeout", [2]), ("データベース", [3]),
     ("数据 库", [2]), ("不存在", [])],
)
def test_search_finds_a_word_inside_chinese_or_japanese_text(
    make_harness: MakeHarness, query: str, expected: list[int]
) -> None:
    h = rv_session(make_harness)
    ok(h.do({"type": "append_messages", "session_id": RV, "messages": [
        user("请继续"), assistant("我们的数据库连接失败了 (timeout)"), user("データベースの接続に失敗しました")]}))
    assert rv_search(h, query) == expected


NASTY = ['"', "a\"b", "NEAR(x y)", "col:val", "^start", "-neg", "(", "a AND", "\\", "&", "|", "!",
         "<->", ":*", "foo & bar | !baz", "''", "_", "🙂", "e\u0301", "?", "%", "%s", "'; DROP TABLE rm_search; --",
         "数据库 ' OR 1=1", "x" * 1000]


def test_no_query_text_is_syntax_on_either_backend(make_harness: MakeHarness) -> None:
    h = rv_session(make_harness)
    ok(h.do({"type": "append_messages", "session_id": RV, "messages": [user("foo and bar"), assistant("数据库")]}))
    events = event_count(h)
    for query in NASTY:
        assert rv_search(h, query) == [], query
    assert rv_search(h, "foo* bar") == [1] and rv_search(h, "数据库 \"") == [2]
    assert event_count(h) == events
    err(h.do({"type": "search_history", "session_id": RV, "query": ""}), "invalid_command")
    err(h.do({"type": "search_history", "session_id": "nobody", "query": "x"}), "session_not_found")


# The memory backend (the handler unit tests', ADR 0045) answers as the SQL backends
# do: a term of Chinese, Japanese or Korean is a substring of the text there too
# (review of the storage simplification: memory found none of them).
UNSPACED_BODIES = ["我们的数据库连接失败了 (timeout)", "データベースの接続に失敗しました", "한국어 텍스트입니다", "plain words"]
UNSPACED_QUERIES = ["数据库", "连接失败", "数据库 timeout", "数据 库", "データ", "한국어", "텍스트", "不存在",
                    "plain", "数据库 plain"]


def _answers(kind: str, tmp_path: Path, request: Any, bodies: list[str], queries: list[str]) -> dict[str, Any]:
    if kind == "postgres":
        request.getfixturevalue("pg_databases")
    (tmp_path / kind).mkdir()
    dbs = Databases(kind, tmp_path / kind)
    try:
        h = dbs.harness("main")
        ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user(b) for b in bodies]}))
        out = {}
        for query in queries:
            answer = ok(h.do({"type": "search_history", "session_id": SID, "query": query, "limit": 50}))
            out[query] = sorted(x["seq"] for x in answer["hits"])
        return out
    finally:
        dbs.cleanup()


def test_memory_search_finds_chinese_japanese_and_korean_as_sql_does(tmp_path: Path, request: Any) -> None:
    answers = {kind: _answers(kind, tmp_path, request, UNSPACED_BODIES, UNSPACED_QUERIES)
               for kind in ("memory", "sqlite", "postgres")}
    assert answers["sqlite"]["数据库"] == [1] and answers["sqlite"]["텍스트"] == [3]
    assert answers["memory"] == answers["sqlite"] == answers["postgres"], answers


# Each body holds one spelling only, so a hit shows that the engine folded it.
FOLDED = {"ﬁle": "file", "Straße": "strasse", "Σίσυφος": "σισυφος", "x²": "x2", "ǅemal": "dzemal",
          "ё": "е", "ﬃx": "ffix"}


@pytest.mark.xfail(strict=True, reason=(
    "memory folds words by NFKD and casefold and drops every combining mark (term_words); SQLite's "
    "unicode61 lowercases, folds Latin diacritics only and keeps ligatures, superscripts and ß: memory "
    "finds 'file' in 'ﬁle', 'strasse' in 'Straße', 'σισυφος' in 'Σίσυφος' where SQLite does not"))
def test_memory_search_folds_words_as_sqlite_does(tmp_path: Path, request: Any) -> None:
    bodies, queries = list(FOLDED), list(FOLDED.values())
    answers = {kind: _answers(kind, tmp_path, request, bodies, queries) for kind in ("memory", "sqlite")}
    assert answers["memory"] == answers["sqlite"], answers
