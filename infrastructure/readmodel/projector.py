"""The projector: applies Session events to the read-model tables through a given cursor.

It runs *inside* the transaction that inserts the events (ADR 0003): the tables and
their position (``rm_position``) commit or roll back together with the events. The
same projector replays the notification log to catch up and to rebuild.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError, Mapper, Notification

from context_compaction.domain.errors import CorruptEvent, StorageError
from context_compaction.domain.session import Session

from ..database import Cur, PipelinedCur
from ..transcoding import PlainJSONTranscoder
from .handlers import EventHandlers, ProjectionOutOfOrder
from .ops import SqlOps, update_statement
from .schema import DAMAGE_TABLE, LOCK_FREE_MARK, POSITION, PROJECTED_TABLES, SEARCH_MARKS, TABLES, EventsTable

log = logging.getLogger("context_compaction.readmodel")

#: PostgreSQL: move the position from exactly ``previous`` to ``new``, or fail the
#: transaction. No result is read back (the insert is pipelined): a position that moved
#: makes ``COUNT(*)`` zero and the division fails on the server (SQLSTATE 22012).
ADVANCE_SQL = (
    "WITH moved AS (UPDATE {t}rm_position SET notification_id = ? WHERE name = ?"
    " AND notification_id = ? RETURNING 1) SELECT 1 / COUNT(*) FROM moved"
)

#: What a run of one session's appended messages projects before its notification ids,
#: when it carries no host command id: its ``rm_sessions`` row's update
#: (``EventHandlers._messages_appended``), as (table, columns set, columns added to,
#: key). PostgreSQL's append runs that update inside the events' function, so such an
#: append is one statement (ADR 0064; a new shape needs a new function version).
APPEND_TOUCH = ("rm_sessions", ("version", "updated_at", "next_seq"), ("message_count",), ("session_id",))
_TOUCH_SQL = update_statement(*APPEND_TOUCH)
_TOUCH_TYPES = tuple(
    TABLES[APPEND_TOUCH[0]].column_type(c) for c in (*APPEND_TOUCH[1], *APPEND_TOUCH[2], *APPEND_TOUCH[3])
)


def read_notifications(cur: Cur, events: EventsTable, start: int, limit: int, stop: int) -> list[Notification]:
    """The notifications with ``start <= id <= stop``, at most ``limit``, in id order,
    read through ``cur`` (its transaction's snapshot)."""
    return [notification_of(row) for row in cur.execute(events.select_sql, (start - 1, stop + 1, limit)).fetchall()]


def notification_of(row: Sequence[Any]) -> Notification:
    """A notification from a row of (id, originator_id, originator_version, topic, state)."""
    return Notification(
        id=int(row[0]),
        originator_id=row[1] if isinstance(row[1], UUID) else UUID(str(row[1])),
        originator_version=int(row[2]),
        topic=row[3],
        state=bytes(row[4]),
    )


def clear(cur: Cur) -> None:
    """Every projected row and the position: a rebuild replays into empty tables."""
    for table in (*PROJECTED_TABLES, DAMAGE_TABLE, SEARCH_MARKS):
        cur.execute(f"DELETE FROM {{t}}{table}")
    cur.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))


def lock_sessions_first(cur: Cur) -> None:
    """Every session's row, in the writers' order, before the events lock: a writer
    holds its session's row while it waits for the events table, so a rebuild that
    took the lock first and then deleted or replayed that row would deadlock with it
    (ADR 0053's order, ADR 0066)."""
    cur.execute("SELECT 1 FROM {t}rm_sessions ORDER BY aggregate_id FOR UPDATE")


class LockFreeDatabase(StorageError):
    """A writer under the events lock found the database marked lock-free: there the
    position is not moved by every append, and replaying from it would project the
    lock-free writers' events a second time (ADR 0066). The recorder follows the mark
    and writes again; nothing was written."""


def refuse_if_lock_free(cur: Cur) -> None:
    if cur.execute("SELECT 1 FROM {t}rm_position WHERE name = ?", (LOCK_FREE_MARK,)).fetchone() is not None:
        raise LockFreeDatabase(
            "this PostgreSQL database's appends run lock-free (postgres.ordering, ADR 0066)"
        )


class _Unanswered(Exception):
    """The projection asked the database (a row, a row count): not the touch alone."""


class _NotingCur:
    """Notes the statements the projection sends and answers nothing (``_Unanswered``)."""

    __slots__ = ("statements",)

    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _NotingCur:
        self.statements.append((sql, tuple(params)))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.statements.extend((sql, tuple(row)) for row in rows)

    def fetchone(self) -> Any:
        raise _Unanswered

    fetchall = fetchone

    @property
    def rowcount(self) -> int:
        raise _Unanswered


class ReadModelProjector:
    """Applies Session events to the query tables through a given cursor (the
    handlers are every backend's, ``handlers.py``; here they run as SQL)."""

    def __init__(self, events_table: EventsTable) -> None:
        self.events_table = events_table
        self.mapper: Mapper[UUID] | None = None
        self.handlers = EventHandlers()

    # ----------------------------------------------------------- positions
    @staticmethod
    def position(cur: Cur) -> int:
        row = cur.execute(
            "SELECT notification_id FROM {t}rm_position WHERE name = ?", (POSITION,)
        ).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _advance(cur: Cur, notification_id: int) -> None:
        cur.execute(
            "INSERT INTO {t}rm_position (name, notification_id) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET notification_id = excluded.notification_id"
            " WHERE {t}rm_position.notification_id < excluded.notification_id",
            (POSITION, notification_id),
        )
        if cur.rowcount != 1:
            raise ProjectionOutOfOrder(
                f"read model position did not advance to {notification_id}"
            )

    # -------------------------------------------------------------- entry
    def project_inline(
        self, cur: Cur, ids: Sequence[int], events: Sequence[Any], position: int | None = None,
        *, unordered: bool = False,
    ) -> None:
        """Project freshly inserted events (same transaction), catching up any gap first.

        ``position`` (PostgreSQL) is the read model's position as read after the events
        lock was taken, in the insert's own pipeline: in the common case nothing here
        then waits for a result, and the projection goes to the server with the COMMIT.
        ``unordered`` (PostgreSQL, lock-free, ADR 0066): writers commit out of id order,
        so the position stays where the database was marked lock-free; the rows alone.
        """
        if not ids:
            return
        pairs = list(zip(ids, events, strict=True))
        if unordered:
            self.apply_all(cur, pairs, strict=True)
            return
        if position is not None:
            if position == ids[0] - 1:
                # Every writer of the position holds the events lock, so it cannot
                # have moved since it was read; the server still checks (ADVANCE_SQL).
                cur.execute(ADVANCE_SQL, (ids[-1], POSITION, position))
                self.apply_all(cur, pairs, strict=True)
                return
        else:
            # Common case in one statement: the read model is exactly at the notification
            # before these (SQLite rowids are contiguous). Otherwise the careful path.
            cur.execute(
                "UPDATE {t}rm_position SET notification_id = ? WHERE name = ? AND notification_id = ?",
                (ids[-1], POSITION, ids[0] - 1),
            )
            if cur.rowcount == 1:
                self.apply_all(cur, pairs, strict=True)
                return
            position = self.position(cur)
        if position < ids[0] - 1:
            refuse_if_lock_free(cur)
            self.replay(cur, after=position, before=ids[0])
        self.apply_all(cur, pairs, strict=True)
        self._advance(cur, ids[-1])

    @staticmethod
    def splits_at_ids(events: Sequence[Any]) -> bool:
        """Whether ``project_before_ids`` may project these events: not when an
        invalidation would read messages appended by the same command."""
        kinds = {type(e) for e in events}
        return not (Session.MessageAppended in kinds and Session.HistoryInvalidated in kinds)

    @staticmethod
    def locks_session_row_first(events: Sequence[Any]) -> bool:
        """Whether ``project_before_ids`` locks nothing before the session's own
        ``rm_sessions`` row: messages appended to one session, whose projection's first
        statement is that row's UPDATE (their ``rm_messages`` rows wait for the ids).
        Only such an append can be the one statement (``touch_before_ids``, ADR 0064),
        whose function retries that UPDATE when it finds no row. The pipelined append
        takes the row with ``SELECT … FOR UPDATE`` first all the same (ADR 0061 skipped
        it; ADR 0066's second review: an UPDATE that waited for a row a rebuild rewrote
        finds none, and a pipelined one is not checked)."""
        first = events[0].originator_id if events else None
        return bool(events) and all(
            type(e) is Session.MessageAppended and e.originator_id == first for e in events
        )

    def project_before_ids(self, cur: PipelinedCur, events: Sequence[Any]) -> list[tuple[Any, ...]]:
        """PostgreSQL's one-trip append (ADR 0053): the projection's statements that need
        no notification id, sent *before* the events lock (``splits_at_ids`` first).
        Returns the ``rm_messages`` rows ``(session id, seq, originator id, version)``
        left for the events INSERT to give ids to."""
        rows: list[tuple[Any, ...]] = []
        ops = SqlOps(cur)
        ops.messages_after_lock = rows
        self.handlers.apply_all(ops, [(0, e) for e in events], strict=True)
        return rows

    @staticmethod
    def append_touch() -> tuple[str, tuple[str, ...]]:
        """``APPEND_TOUCH``'s SQL (``{t}`` and ``?`` marks) and its parameters' types."""
        return _TOUCH_SQL, _TOUCH_TYPES

    def touch_before_ids(self, events: Sequence[Any]) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]] | None:
        """When all that ``events`` project before their ids is ``APPEND_TOUCH``: the
        ``rm_messages`` rows (``project_before_ids``) and the touch's parameters.
        Otherwise None; nothing is sent either way."""
        if not self.locks_session_row_first(events):
            return None
        cur = _NotingCur()
        try:
            rows = self.project_before_ids(cur, events)  # type: ignore[arg-type]
        except _Unanswered:  # (a session id not yet cached, a command id's registration)
            return None
        if len(cur.statements) != 1 or cur.statements[0][0] != _TOUCH_SQL:
            return None
        return rows, cur.statements[0][1]

    def rebuild(self, cur: Cur) -> int:
        """Every projected row dropped and the whole log replayed; returns the last id.
        The caller holds the sessions' rows and the events lock (``lock_sessions_first``)."""
        clear(cur)
        return self.replay(cur, after=0)

    def replay(self, cur: Cur, after: int, before: int | None = None, batch: int = 500) -> int:
        """Apply stored notifications with ``after < id < before``; returns the last id.

        One damaged row stops its own session (``rm_damaged``), never the catch-up of all.
        """
        last = after
        upper = before if before is not None else 2**62
        damaged = {row[0] for row in cur.execute(f"SELECT aggregate_id FROM {{t}}{DAMAGE_TABLE}").fetchall()}

        def note(notification: Notification, problem: str) -> None:
            cur.execute(
                f"INSERT INTO {{t}}{DAMAGE_TABLE} (aggregate_id, notification_id, version, problem)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (aggregate_id) DO NOTHING",
                (notification.originator_id.hex, notification.id, notification.originator_version, problem),
            )
            log.warning(
                "read model skipped a damaged event and the rest of its session",
                extra={"aggregate_id": notification.originator_id.hex, "notification_id": notification.id,
                       "version": notification.originator_version, "problem": problem},
            )

        while True:
            notifications = read_notifications(cur, self.events_table, last + 1, batch, upper - 1)
            if not notifications:
                return last
            self.apply_stored(cur, notifications, damaged, note)
            last = notifications[-1].id
            self._advance(cur, last)

    def apply_stored(
        self,
        cur: Cur,
        notifications: Sequence[Notification],
        damaged: set[str],
        on_damage: Callable[[Notification, str], None],
    ) -> None:
        """Decode and apply stored notifications in order (replay, ``verify``).

        A row that does not decode, or does not fit its session's earlier events (a seq
        already taken, an event before its session started), goes to ``on_damage``; it
        and the rest of its session (aggregate ids in ``damaged``, which grows) are left
        out. A batch is applied whole, and again event by event only when it fails.
        """
        assert self.mapper is not None, "projector used before the application wired it"
        decoded: list[tuple[Notification, Any]] = []
        for notification in notifications:
            if notification.originator_id.hex in damaged:
                continue  # unreadable from its damaged row on
            try:
                decoded.append((notification, self.mapper.to_domain_event(notification)))
            except CorruptEvent as exc:
                on_damage(notification, str(exc.details.get("problem", "unreadable")))
                damaged.add(notification.originator_id.hex)
        try:
            with _savepoint(cur):
                self.apply_all(cur, [(n.id, event) for n, event in decoded])
            return
        except Exception as exc:  # noqa: BLE001 - sorted out below
            if not _misfit(exc):
                raise
        for notification, event in decoded:
            if notification.originator_id.hex in damaged:
                continue
            try:
                with _savepoint(cur):
                    self.apply_all(cur, [(notification.id, event)])
            except Exception as exc:  # noqa: BLE001
                if not _misfit(exc):
                    raise
                on_damage(notification, "does not fit the session's earlier events")
                damaged.add(notification.originator_id.hex)

    def apply_all(self, cur: Cur, events: Sequence[tuple[int, Any]], *, strict: bool = False) -> None:
        """Apply (notification id, event) pairs in order (``EventHandlers.apply_all``)."""
        self.handlers.apply_all(SqlOps(cur), events, strict=strict)

    def decode_state(self, state: bytes) -> dict[str, Any]:
        """An event's stored state as plain values (what message queries read)."""
        assert self.mapper is not None
        mapper = self.mapper
        if mapper.cipher is not None:
            state = mapper.cipher.decrypt(state)
        if mapper.compressor is not None:
            state = mapper.compressor.decompress(state)
        transcoder = mapper.transcoder
        if isinstance(transcoder, PlainJSONTranscoder):
            return transcoder.decode_values(state)  # message fields need no datetimes
        return transcoder.decode(state)  # type: ignore[no-any-return]


@contextmanager
def _savepoint(cur: Cur) -> Iterator[None]:
    cur.execute("SAVEPOINT ctxc_apply")
    try:
        yield
    except BaseException:
        cur.execute("ROLLBACK TO SAVEPOINT ctxc_apply")
        raise
    finally:
        cur.execute("RELEASE SAVEPOINT ctxc_apply")


def _misfit(exc: BaseException) -> bool:
    """A stored event the read model cannot place: a key it repeats (a driver's
    integrity error) or a session it does not know."""
    if isinstance(exc, (ProjectionOutOfOrder, sqlite3.IntegrityError, IntegrityError)):
        return True
    return type(exc).__module__.startswith("psycopg") and str(getattr(exc, "sqlstate", "")).startswith("23")
