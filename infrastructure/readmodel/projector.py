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

from context_compaction.domain.errors import CorruptEvent

from ..database import Cur, PipelinedCur
from ..transcoding import PlainJSONTranscoder
from .handlers import EventHandlers, ProjectionOutOfOrder
from .ops import SqlOps
from .schema import DAMAGE_TABLE, POSITION, PROJECTED_TABLES, SEARCH_MARKS, EventsTable

log = logging.getLogger("context_compaction.readmodel")

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


class ReadModelProjector:
    """Applies Session events to the query tables through a given cursor (the
    handlers are every backend's, ``handlers.py``; here they run as SQL)."""

    def __init__(self, events_table: EventsTable) -> None:
        self.events_table = events_table
        self.mapper: Mapper[UUID] | None = None
        self.handlers = EventHandlers()
        # The position moves to the new events' last id if no stored event lies between
        # it and them (ids a rolled-back insert took leave none).
        id_column = events_table.id_column
        self._move_sql = (
            "UPDATE {t}rm_position SET notification_id = ? WHERE name = ? AND notification_id < ?"
            f" AND NOT EXISTS (SELECT 1 FROM {events_table.qualified} e"
            f" WHERE e.{id_column} > {{t}}rm_position.notification_id AND e.{id_column} < ?)"
        )

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
    def project_inline(self, cur: Cur, ids: Sequence[int], events: Sequence[Any]) -> None:
        """Project freshly inserted events (same transaction, after the events' insert
        and its lock), catching up any gap first."""
        if not ids:
            return
        pairs = list(zip(ids, events, strict=True))
        cur.execute(self._move_sql, (ids[-1], POSITION, ids[0], ids[0]))  # (the common case)
        if isinstance(cur, PipelinedCur):
            # Nothing is read back before the COMMIT: a check there fails the transaction
            # unless the position moved (a lagging read model, rare): the recorder then
            # appends again on the careful path below.
            cur.expect_one("rm_position", {"name": POSITION, "notification_id": ids[-1]})
        elif cur.rowcount != 1:  # a read model that lags: the careful path, catching up
            position = self.position(cur)
            if position < ids[0] - 1:
                self.replay(cur, after=position, before=ids[0])
            self.apply_all(cur, pairs, strict=True)
            self._advance(cur, ids[-1])
            return
        self.apply_all(cur, pairs, strict=True)

    def rebuild(self, cur: Cur) -> int:
        """Every projected row dropped and the whole log replayed; returns the last id.
        The caller holds the events lock (PostgreSQL) or the writer lock (SQLite)."""
        for table in (*PROJECTED_TABLES, DAMAGE_TABLE, SEARCH_MARKS):
            cur.execute(f"DELETE FROM {{t}}{table}")
        cur.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
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

        A row that does not decode or fit its session's earlier events goes to
        ``on_damage``; it and the rest of its session (``damaged``, which grows) are left
        out. A batch is applied whole, and event by event only when that fails.
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

    #: An event's stored state as plain values (what message queries read; message
    #: fields need no datetimes): our mapper neither compresses nor encrypts (ADR 0005).
    decode_state = staticmethod(PlainJSONTranscoder.decode_values)


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
