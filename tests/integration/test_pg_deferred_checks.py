"""ADR 0084 on PostgreSQL: the pipelined projection's checks fail the transaction at its
COMMIT, and a failed check appends again on the careful path; the read-model rows go as
multi-row INSERTs in chunks of ``ROWS_PER_STATEMENT``."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from backends import POSTGRES_URL
from context_compaction.infrastructure.eventstore.internals import postgres
from context_compaction.infrastructure.readmodel import ops
from helpers import Harness, fingerprint, ok, user


def _rebuilt_equals_live(h: Harness) -> None:
    live = fingerprint(h.bus)
    h.bus.services.read_model.rebuild()
    assert fingerprint(h.bus) == live


def test_a_read_model_that_lags_fails_the_check_and_the_append_goes_the_careful_way(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    h: Harness = pg_databases.harness("lag")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for i in range(3):
        ok(h.do({"type": "append_messages", "session_id": "s", "command_id": f"c{i}",
                 "messages": [user(f"m{i}")]}))
    # An event stored without the projection (as by a writer that does not project):
    # the read model's position lags behind the newest event by one.
    projector = h.inspect.app.projector
    monkeypatch.setattr(projector, "project_inline", lambda *args, **kwargs: None)
    ok(h.do({"type": "start_session", "session_id": "t", "model": "gpt-4o"}))
    monkeypatch.undo()
    # (the event arrives after the command's reads caught up: they see no lag)
    # (the store's own read model: the bus's is the tree wrapper around it, ADR 0081)
    read_model = getattr(h.bus.services.read_model, "inner", h.bus.services.read_model)
    monkeypatch.setattr(read_model, "catch_up", lambda: 0)
    failed = _counted_checks(monkeypatch)
    done = ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "c9",
                    "messages": [user("after the lag"), user("and one more")]}))
    assert failed == [True], "the deferred check failed at the COMMIT and the append was decided again"
    assert done["seqs"] == [4, 5]
    assert h.query("SELECT seq FROM {t}rm_messages ORDER BY seq") == [(n,) for n in range(1, 6)]
    again = ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "c9",
                     "messages": [user("after the lag"), user("and one more")]}))
    assert again["duplicate"] is True and again["seqs"] == [4, 5]  # one effect
    position = h.query("SELECT notification_id FROM {t}rm_position WHERE name = 'read_model'")[0][0]
    events = h.inspect.app.projector.events_table
    assert position == h.query(f"SELECT max({events.id_column}) FROM {events.qualified}")[0][0]
    _rebuilt_equals_live(h)


@pytest.mark.parametrize("count", [ops.ROWS_PER_STATEMENT - 1, ops.ROWS_PER_STATEMENT,
                                   ops.ROWS_PER_STATEMENT + 1, 2 * ops.ROWS_PER_STATEMENT + 1])
def test_a_batch_across_the_chunk_boundary_projects_every_message_once(pg_databases: Any, count: int) -> None:
    h: Harness = pg_databases.harness(f"chunks{count}")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("first")]}))
    messages = [user(f"é中🙂 {i}" + "x" * (i % 5) * 3000) for i in range(count)]
    done = ok(h.do({"type": "append_messages", "session_id": "s", "messages": messages}))
    assert done["seqs"] == list(range(2, count + 2))
    rows = h.query("SELECT seq FROM {t}rm_messages WHERE session_id = 's' ORDER BY seq")
    assert rows == [(n,) for n in range(1, count + 2)]
    assert h.query("SELECT message_count, next_seq FROM {t}rm_sessions") == [(count + 1, count + 2)]
    history = ok(h.do({"type": "get_history", "session_id": "s", "limit": 10_000}))
    assert [m["content"] for m in history["messages"]] == ["first", *(m["content"] for m in messages)]
    _rebuilt_equals_live(h)


@pytest.mark.parametrize("path", ["pipelined", "careful"])
def test_ids_a_rolled_back_insert_took_are_stepped_over_without_the_careful_path(
    pg_databases: Any, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """A rolled-back INSERT leaves its ids unused (the sequence does not go back): the one
    position UPDATE steps over them, so the next pipelined append commits as it is and
    does not fail its check; a careful (large) append steps over them too. (On SQLite the
    id is the rowid, ``max + 1``: a rollback leaves no gap.)"""
    h: Harness = pg_databases.harness(f"gap{path}")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("before")]}))
    events = h.inspect.app.projector.events_table
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:  # what a rolled-back INSERT leaves
        conn.execute(f"SELECT nextval(pg_get_serial_sequence('{events.qualified}', 'notification_id'))"
                     " FROM generate_series(1, 3)")
    failed = _counted_checks(monkeypatch)
    if path == "careful":
        monkeypatch.setattr(postgres, "PIPELINE_LIMIT", 0)
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [user("after"), user("the gap")]}))
    assert failed == [], "no check failed: the position moved over the gap in the same statement"
    ids = [r[0] for r in h.query(f"SELECT {events.id_column} FROM {events.qualified} ORDER BY 1")]
    assert ids[-2] - ids[-3] == 4, ids  # the gap is there
    position = h.query("SELECT notification_id FROM {t}rm_position WHERE name = 'read_model'")[0][0]
    assert position == ids[-1]
    assert h.query("SELECT seq FROM {t}rm_messages ORDER BY seq") == [(1,), (2,), (3,)]
    _rebuilt_equals_live(h)


def _counted_checks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each deferred check's verdict, in order, as the append path sees it."""
    failed: list[bool] = []
    real = postgres.check_failed

    def counted(exc: BaseException) -> bool:
        failed.append(real(exc))
        return failed[-1]

    monkeypatch.setattr(postgres, "check_failed", counted)
    return failed
