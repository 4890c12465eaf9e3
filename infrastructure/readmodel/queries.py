"""Queries over the projected tables (the application's ReadModel port), caught up first."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from context_compaction.application.contracts.views import (
    CheckpointRow,
    CommandRecord,
    RevertRecord,
    SearchHit,
    SessionRow,
    SessionSnapshotView,
)
from context_compaction.domain.errors import StorageError
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.session import session_aggregate_id

from ..database import Cur, Database, StorageBusy
from ..transcoding import corrupt_event
from .ops import SqlOps
from .projector import ReadModelProjector
from .rows import DamagedMessage, LedgerCache, checkpoint_row, message_record, refuse_damaged, session_row
from .search import BEHIND_SQL, index_session, is_truncated, query_terms, search_query, snippet
from .schema import (
    CHECKPOINT_COLS,
    DAMAGE_TABLE,
    N_SESSION_COLS,
    POSITION,
    PROJECTED_TABLES,
    SCHEMA,
    SCHEMA_MARK,
    SCHEMA_VERSION,
    SEARCH_DERIVED,
    SEARCH_INDEX,
    SEARCH_MARKS,
    SESSION_COLS,
    lag_of,
)

log = logging.getLogger("context_compaction.readmodel")


class SqlReadModel:
    """Queries over the projected tables (implements the application's ReadModel port)."""

    def __init__(self, db: Database, projector: ReadModelProjector) -> None:
        self.db = db
        self.projector = projector
        self._ledgers = LedgerCache()
        #: Opened by a role or file that cannot write (issue 36, ADR 0071): reads answer
        #: from what is projected and indexed, nothing is caught up or indexed.
        self.read_only = False

    # ------------------------------------------------------------- schema
    def create_tables(self, previous: int | None = None) -> None:
        """Create the read-model tables; ``previous`` is the schema version the database
        was marked with (``schema_state``), None for a new one."""
        with self.db.write() as cur:
            if previous is not None and previous < SCHEMA_VERSION:
                # The read model is a projection: tables of an older shape are dropped
                # and the events replayed into the new ones (catch-up from position 0),
                # exactly as after losing them. Never altered in place (issue 37).
                for table in (*SEARCH_DERIVED, *PROJECTED_TABLES, DAMAGE_TABLE, SEARCH_MARKS):
                    cur.execute(f"DROP TABLE IF EXISTS {{t}}{table}")
                cur.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
                log.warning(
                    "read model schema upgraded, rebuilding from the events",
                    extra={"from_version": previous, "to_version": SCHEMA_VERSION},
                )
            for statement in SCHEMA:
                cur.execute(statement)
            for statement in SEARCH_INDEX[self.db.dialect.name]:
                cur.execute(statement)
            cur.execute(
                "INSERT INTO {t}rm_position (name, notification_id) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET notification_id = excluded.notification_id",
                (SCHEMA_MARK, SCHEMA_VERSION),
            )

    def schema_state(self, *tables: str) -> tuple[int | None, list[str]]:
        """(the database's read-model schema version, None: none; which of ``tables``,
        qualified on PostgreSQL, are missing), in the one read a start makes."""
        if self.db.dialect.is_postgres:
            there = "to_regclass(?) IS NOT NULL"
        else:
            there = "EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)"
        try:
            row = self.db.query_one(
                "SELECT (SELECT notification_id FROM {t}rm_position WHERE name = ?)"
                + "".join(", " + there for _ in tables),
                (SCHEMA_MARK, *tables),
            )
        except (StorageError, StorageBusy):
            return None, list(tables)
        assert row is not None
        version = int(row[0]) if row[0] is not None else None
        return version, [table for table, ok in zip(tables, row[1:]) if not ok]

    # ----------------------------------------------------------- catch-up
    def lag(self, cur: Cur) -> tuple[int, int]:
        """(read-model position, newest notification id)."""
        return lag_of(cur.execute(self.projector.events_table.lag_sql).fetchone())

    def catch_up(self) -> int:
        """Project every notification past the position; returns how many."""
        events = self.projector.events_table
        with self.db.write(events.lock_sql) as cur:
            position, newest = self.lag(cur)
            if position >= newest:
                return 0
            last = self.projector.replay(cur, after=position)
            log.info("read model caught up", extra={"from_id": position, "to_id": last})
            return last - position

    @contextmanager
    def fresh(self) -> Iterator[Cur]:
        """A read snapshot in which the read model has caught up with the events."""
        with self._fresh(self.projector.events_table.lag_sql) as (cur, _):
            yield cur

    @contextmanager
    def _fresh(
        self, head_sql: str, params: Sequence[Any] = ()
    ) -> Iterator[tuple[Cur, tuple[Any, ...]]]:
        """``fresh()`` whose lag check is a first query: its one row starts with
        (newest notification id, read-model position); it is handed on with the cursor."""
        for attempt in range(4):
            handed_on = False
            try:
                with self.db.read() as cur:
                    head = cur.execute(head_sql, params).fetchone()
                    position, newest = lag_of(head)
                    assert head is not None
                    if position >= newest or attempt == 3 or self.read_only:
                        # (after 3 catch-ups writers keep arriving; their rows are inline)
                        handed_on = True
                        yield cur, head
                        return
            except StorageBusy:
                if handed_on or attempt == 3:  # the caller's own queries are not ours to redo
                    raise
                self.db.recover()
                continue
            try:
                self.catch_up()
            except StorageBusy:  # (a lock wait timed out, a deadlock broken: look again)
                if attempt == 3:
                    raise
                self.db.recover()

    def rebuild(self) -> int:
        """Drop every projected row and replay the whole notification log."""
        # On PostgreSQL under the events lock, which every writer takes before its
        # read-model rows; on SQLite under the writer lock.
        with self.db.write(self.projector.events_table.lock_sql) as cur:
            return self.projector.rebuild(cur)

    def index_search(self, session_id: str, batch: int = 2_000) -> int:
        """Index the session's messages not yet in rm_search (ADR 0049); returns how
        many were read. ``batch`` messages per transaction (on SQLite each holds the
        writer lock); a cache's commit: a crash loses rows and mark together."""
        events, done = self.projector.events_table, 0
        while True:
            with self.db.write(durable=False) as cur:
                n = index_session(cur, events.messages_sql, self.projector.decode_state, session_id, batch)
            done += n
            if n < batch:
                return done

    def check_search_index(self) -> str | None:
        """What was wrong with SQLite's FTS5 index over ``rm_search`` (None: nothing), a
        table of its own that can lose step with its content: rebuilt when it did.
        PostgreSQL's GIN index is kept by the engine."""
        if self.db.dialect.is_postgres or self.read_only:  # (SQLite's check is an INSERT)
            return None
        with self.db.write() as cur:
            try:
                cur.execute("INSERT INTO rm_search_fts (rm_search_fts, rank) VALUES ('integrity-check', 1)")
                return None
            except sqlite3.DatabaseError:
                cur.execute("INSERT INTO rm_search_fts (rm_search_fts) VALUES ('rebuild')")
        log.warning("search index was out of step with rm_search; rebuilt")
        return "the full-text index (rm_search_fts) was out of step with rm_search; rebuilt"

    # ------------------------------------------------------------ queries
    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query, caught up."""
        with self.fresh() as cur:
            return cur.execute(sql, params).fetchall()

    def session(self, session_id: str) -> SessionRow | None:
        # (the session view's head: lag check, session row and damage in one round trip)
        sql = self.projector.events_table.session_view_sql
        with self._fresh(sql, (session_id, session_aggregate_id(session_id).hex)) as (_, head):
            row = head[2:]
        refuse_damaged(session_id, row[-2:])
        return session_row(row[:N_SESSION_COLS]) if row[0] is not None else None

    def sessions(self, limit: int = 100, offset: int = 0) -> list[SessionRow]:
        rows = self._all(
            "SELECT " + SESSION_COLS + " FROM {t}rm_sessions ORDER BY created_at, session_id LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [session_row(r) for r in rows]

    def messages(
        self,
        session_id: str,
        *,
        from_seq: int = 1,
        upto_seq: int | None = None,
        include_invalidated: bool = False,
        limit: int | None = None,
    ) -> list[MessageRecord]:
        with self.fresh() as cur:
            damage = cur.execute(
                f"SELECT version, problem FROM {{t}}{DAMAGE_TABLE} WHERE aggregate_id = ?",
                (session_aggregate_id(session_id).hex,),
            ).fetchone()
            refuse_damaged(session_id, damage or (None, None))
            return self._messages(cur, session_id, from_seq, upto_seq, include_invalidated, limit)

    def _messages(
        self,
        cur: Cur,
        session_id: str,
        from_seq: int,
        upto_seq: int | None,
        include_invalidated: bool,
        limit: int | None = None,
    ) -> list[MessageRecord]:
        sql = self.projector.events_table.messages_sql
        params: list[Any] = [session_id, from_seq]
        if upto_seq is not None:
            sql += " AND m.seq <= ?"
            params.append(upto_seq)
        if not include_invalidated:
            sql += " AND m.visible = 1"
        sql += " ORDER BY m.seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        decode = self.projector.decode_state
        rows = cur.execute(sql, params).fetchall()
        try:
            return [message_record(r, decode) for r in rows]
        except DamagedMessage as damaged:
            row = cur.execute(
                self.projector.events_table.message_version_sql, (session_id, damaged.seq)
            ).fetchone()
            raise corrupt_event(
                damaged.problem, version=int(row[0]) if row else None, session_id=session_id
            ) from None

    def session_view(
        self, session_id: str, *, tail_only: bool = True, after_seq: int = 0
    ) -> SessionSnapshotView | None:
        # One round trip for the lag check, the session row and its checkpoint.
        sql = self.projector.events_table.session_view_sql
        with self._fresh(sql, (session_id, session_aggregate_id(session_id).hex)) as (cur, head):
            row = head[2:]
            refuse_damaged(session_id, row[-2:])
            if row[0] is None:
                return None
            session = session_row(row[:N_SESSION_COLS])
            checkpoint = (
                checkpoint_row(row[N_SESSION_COLS:], self._ledgers, self._ledger_text)
                if session.active_checkpoint_id and row[N_SESSION_COLS] is not None
                else None
            )
            from_seq = checkpoint.first_retained_seq if (checkpoint and tail_only) else 1
            from_seq = max(from_seq, after_seq + 1)
            messages = self._messages(cur, session_id, from_seq, None, False)
            pinned_seqs = tuple(
                int(r[0]) for r in cur.execute(
                    "SELECT seq FROM {t}rm_pins WHERE session_id = ? ORDER BY seq", (session_id,)
                ).fetchall()
            )
            pinned: list[MessageRecord] = []
            boundary = checkpoint.first_retained_seq if checkpoint is not None and tail_only else 0
            if pinned_seqs and pinned_seqs[0] < boundary:
                rows = cur.execute(self.projector.events_table.pinned_sql, (session_id, boundary)).fetchall()
                pinned = [message_record(r, self.projector.decode_state) for r in rows]
            cleared: dict[int, str] = {}
            if session.cleared_count and after_seq == 0:
                # An incremental read adds appended messages only: a new clearing changes
                # cleared_count, and the context cache then reads the session in full.
                rows = cur.execute(
                    "SELECT seq, placeholder FROM {t}rm_cleared WHERE session_id = ? AND seq >= ?",
                    (session_id, from_seq),
                ).fetchall()
                cleared = {int(seq): text for seq, text in rows}
        return SessionSnapshotView(
            session=session, checkpoint=checkpoint, messages=messages, pinned=pinned,
            pinned_seqs=pinned_seqs, cleared=cleared,
        )

    def _ledger_text(self, checkpoint_id: str) -> str:
        """A checkpoint's stored ledger, which session views leave out (ADR 0059).
        Checkpoint rows are written once; read caught up, so that a read model being
        rebuilt has the row again."""
        rows = self._all(self.projector.events_table.ledger_sql, (checkpoint_id,))
        if not rows or rows[0][0] is None:
            raise StorageError(f"the ledger of checkpoint {checkpoint_id!r} is missing from the read model")
        return str(rows[0][0])

    def search(
        self, session_id: str, query: str, *, limit: int, include_invalidated: bool
    ) -> list[SearchHit]:
        """Messages of the session matching every term of ``query``, best first."""
        terms = query_terms(query)
        if not terms:
            return []
        sql, params = search_query(self.db.dialect.name, terms, session_id, limit, include_invalidated)
        rows: list[Any] = []
        for attempt in range(2):
            with self.fresh() as cur:
                last, mark = cur.execute(BEHIND_SQL, (session_id,)).fetchone() or (0, 0)
                # (after one indexing, messages appended since are not this search's)
                if attempt == 1 or int(last) <= int(mark or 0) or self.read_only:
                    rows = cur.execute(sql, params).fetchall()
                    break
            self.index_search(session_id)
        return [
            SearchHit(int(seq), role, turn_id, snippet(body, terms), round(float(score), 6),
                      bool(compacted), not visible, is_truncated(body))
            for seq, role, turn_id, body, score, visible, compacted in rows
        ]

    def reverts(self, session_id: str) -> list[RevertRecord]:
        return self._reverts("session_id = ? ORDER BY version", session_id)

    def revert_command(self, command_id: str) -> RevertRecord | None:
        found = self._reverts("command_id = ?", command_id)
        return found[0] if found else None

    def _reverts(self, where: str, key: str) -> list[RevertRecord]:
        rows = self._all(
            "SELECT checkpoint_id, session_id, version, now_active, generation, command_id"
            " FROM {t}rm_reverts WHERE " + where, (key,),
        )
        return [RevertRecord(r[0], r[1], int(r[2]), r[3], int(r[4]), r[5]) for r in rows]

    def cleared_results(self, session_id: str, upto_version: int | None = None) -> dict[int, str]:
        sql = "SELECT seq, placeholder FROM {t}rm_cleared WHERE session_id = ?"
        params: list[Any] = [session_id]
        if upto_version is not None:
            sql += " AND version <= ?"
            params.append(upto_version)
        return {int(seq): text for seq, text in self._all(sql, params)}

    def checkpoint(self, checkpoint_id: str) -> CheckpointRow | None:
        rows = self._all("SELECT " + CHECKPOINT_COLS + " FROM {t}rm_checkpoints WHERE checkpoint_id = ?",
                         (checkpoint_id,))
        return checkpoint_row(rows[0]) if rows else None

    def checkpoints(self, session_id: str) -> list[CheckpointRow]:
        rows = self._all(
            "SELECT " + CHECKPOINT_COLS + " FROM {t}rm_checkpoints WHERE session_id = ? ORDER BY generation",
            (session_id,),
        )
        return [checkpoint_row(r) for r in rows]

    def command(self, command_id: str) -> CommandRecord | None:
        rows = self._all(
            "SELECT command_id, session_id, kind, first_seq, last_seq FROM {t}rm_commands WHERE command_id = ?",
            (command_id,),
        )
        if not rows:
            return None
        command, session, kind, first_seq, last_seq = rows[0]
        return CommandRecord(command, session, kind, int(first_seq), int(last_seq))

    def select(self, table: str, columns: tuple[str, ...], where: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Rows of a projected table by column values, caught up (``TableOps.select``)."""
        with self.fresh() as cur:
            return SqlOps(cur).select(table, columns, where)

    def table_rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of one projected table in key order (for verify and tests)."""
        return self._all(f"SELECT * FROM {{t}}{table} ORDER BY {PROJECTED_TABLES[table]}")

