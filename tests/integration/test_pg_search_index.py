"""PostgreSQL's search index (issue 18, ADR 0054): the catch-up writes a batch in one
INSERT, and ``rm_search`` stores each body's tsvector (``words``, GIN-indexed) instead
of an index on an expression that ranking had to recompute; a database of the previous
schema gains the column and keeps finding what it had indexed."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import Harness, assistant, ok, user

pytestmark = pytest.mark.postgres

SID = "pg-idx"


def start(pg_databases: Any, name: str) -> Harness:
    h: Harness = pg_databases.harness(name)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def seqs(h: Harness, query: str) -> list[int]:
    hits = ok(h.do({"type": "search_history", "session_id": SID, "query": query, "limit": 100}))["hits"]
    return sorted(hit["seq"] for hit in hits)


def count_insert_statements(h: Harness) -> None:
    """A statement-level trigger counts the INSERT statements the server runs on
    rm_search (executemany sends one per row, however the driver batches them)."""
    h.execute("CREATE TABLE {t}ctxc_inserts (n INT NOT NULL)")
    h.execute("CREATE OR REPLACE FUNCTION {t}ctxc_count() RETURNS trigger AS $$"
              " BEGIN INSERT INTO {t}ctxc_inserts VALUES (1); RETURN NULL; END $$ LANGUAGE plpgsql")
    h.execute("CREATE TRIGGER ctxc_count AFTER INSERT ON {t}rm_search"
              " FOR EACH STATEMENT EXECUTE FUNCTION {t}ctxc_count()")


def test_the_catch_up_inserts_each_batch_in_one_statement(pg_databases: Any) -> None:
    h = start(pg_databases, "one-insert")
    count_insert_statements(h)
    texts = [f"kiwi {i} in src/app/main_{i}.py" for i in range(7)]
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [user(t) if i % 2 == 0 else assistant(t) for i, t in enumerate(texts)]}))
    assert h.bus.services.read_model.index_search(SID, batch=3) == 7
    assert h.count("rm_search") == 7
    assert h.count("ctxc_inserts") == 3  # batches of 3, 3 and 1 messages
    assert seqs(h, "kiwi") == list(range(1, 8)) and seqs(h, "main_4.py") == [5]
    assert h.count("ctxc_inserts") == 3  # (nothing left to index)


def test_rm_search_stores_the_tsvector_and_the_search_ranks_with_it(pg_databases: Any) -> None:
    h = start(pg_databases, "stored-words")
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [user("see docs/Résumé-notes.md"), assistant("kiwi kiwi kiwi"), user("one kiwi")]}))
    assert seqs(h, "kiwi") == [2, 3] and seqs(h, "résumé") == [1] and seqs(h, "notes") == [1]
    rows = h.query("SELECT seq, words::text FROM {t}rm_search ORDER BY seq")
    assert [seq for seq, _ in rows] == [1, 2, 3] and "'kiwi':1,2,3" in rows[1][1]
    indexes = h.query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'rm_search'"
                      " AND schemaname = ?", (h.url.split("schema=")[1],))
    gin = [d for _, d in indexes if "gin" in d.lower()]
    assert len(gin) == 1 and gin[0].endswith("(words)"), indexes
    # the replace chain is translate's text, character for character (faster, ADR 0054)
    from context_compaction.infrastructure.readmodel.search import PG_JOINERS, pg_words

    text = f"a{PG_JOINERS}b/c.d-é_ü:数@x=y+z~w#v&u"
    same = h.query(f"SELECT {pg_words('?')} = translate(?, ?, ?), {pg_words('?')}",
                   (text, text, PG_JOINERS, " " * len(PG_JOINERS), text))
    assert same[0][0] is True and not any(j in same[0][1] for j in PG_JOINERS)
    hits = ok(h.do({"type": "search_history", "session_id": SID, "query": "kiwi", "limit": 10}))["hits"]
    assert [x["seq"] for x in hits] == [2, 3] and hits[0]["score"] > hits[1]["score"]


