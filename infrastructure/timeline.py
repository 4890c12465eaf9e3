"""Timeline (spec §13): one recallable memory per non-degraded checkpoint.

A follower of the notification log, separate from the read-model projector on
purpose: it runs after the checkpoint's transaction has committed, its store may
fail, and a failure only leaves its position behind (retried at the next catch-up);
it can never roll a checkpoint back. Restore never reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from uuid import UUID

from eventsourcing.persistence import Notification

from context_compaction.application.contracts.ports import TimelineStore
from context_compaction.application.contracts.views import TimelineEntry
from context_compaction.domain.errors import CorruptEvent
from context_compaction.domain.session import Session
from context_compaction.domain.summary import storable_text

from .database import Database
from .readmodel import ReadModelProjector
from .readmodel.projector import notification_of
from .readmodel.search import PURGE_SHARED_LOCK_SQL

log = logging.getLogger("context_compaction.timeline")

POSITION = "timeline"
CHECKPOINT_TOPIC = "context_compaction:Session.CheckpointCommitted"


def timeline_key(checkpoint_id: str) -> str:
    return f"context_checkpoint:{checkpoint_id}"


class SqlTimelineStore:
    """Implements the TimelineStore port on the ``rm_timeline`` table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, entry: TimelineEntry) -> None:
        """Stored unless its session is deleted: an entry read from a checkpoint before a
        purge and written after it would keep the summary the purge erased (ADR 0072).
        The purge's ``Purged`` event marks the session deleted before the erasure runs;
        on PostgreSQL the erasure's session lock orders an insert already under way."""
        with self.db.write() as cur:
            if self.db.dialect.is_postgres:
                cur.execute(PURGE_SHARED_LOCK_SQL, (entry.session_id,))
            cur.execute(
                "INSERT INTO {t}rm_timeline (key, session_id, checkpoint_id, content, created_at)"
                " SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS"
                " (SELECT 1 FROM {t}rm_sessions WHERE session_id = ? AND deleted <> 0)"
                " ON CONFLICT (key) DO NOTHING",
                (entry.key, entry.session_id, entry.checkpoint_id, entry.content, entry.created_at,
                 entry.session_id),
            )

    def entries(self, session_id: str, query: str | None = None, limit: int = 20) -> list[TimelineEntry]:
        sql = (
            "SELECT key, session_id, checkpoint_id, content, created_at FROM {t}rm_timeline"
            " WHERE session_id = ?"
        )
        params: list[object] = [session_id]
        if query:
            escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            sql += " AND LOWER(content) LIKE ? ESCAPE '\\'"
            params.append(f"%{escaped}%")
        sql += " ORDER BY created_at DESC, key LIMIT ?"
        params.append(limit)
        with self.db.read() as cur:
            rows = cur.execute(sql, params).fetchall()
        return [TimelineEntry(*row) for row in rows]


class TimelineFollower:
    """Writes Timeline entries for committed checkpoints it has not seen yet."""

    def __init__(self, db: Database, projector: ReadModelProjector, store: TimelineStore) -> None:
        # (a plain read of the events table: every insert takes the library's events
        # lock, so ids commit in order and a position never passes a later-filled hole)
        self.db = db
        self.projector = projector
        self.store = store
        table = projector.events_table
        self._select = (
            f"SELECT {table.id_column}, originator_id, originator_version, topic, state"
            f" FROM {table.qualified} WHERE {table.id_column} > ? AND topic = ?"
            f" ORDER BY {table.id_column} LIMIT 100"
        )

    def _position(self) -> int:
        with self.db.read() as cur:
            row = cur.execute(
                "SELECT notification_id FROM {t}rm_position WHERE name = ?", (POSITION,)
            ).fetchone()
        return int(row[0]) if row else 0

    def _advance(self, notification_id: int) -> None:
        with self.db.write() as cur:
            cur.execute(
                "INSERT INTO {t}rm_position (name, notification_id) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET notification_id = excluded.notification_id"
                " WHERE {t}rm_position.notification_id < excluded.notification_id",
                (POSITION, notification_id),
            )

    def catch_up(self) -> int:
        """Returns how many entries were written. Raises if the store fails."""
        assert self.projector.mapper is not None
        written = 0
        position = self._position()
        while True:
            notes = self._next(position)
            if not notes:
                return written
            for note in notes:
                originator_id = note.originator_id
                try:
                    event = self.projector.mapper.to_domain_event(note)
                except CorruptEvent as exc:
                    # Derived, best-effort data: a damaged row costs its entry, not
                    # every entry after it (``ctxc verify`` reports the row).
                    log.warning("timeline skipped a damaged event", extra=dict(exc.details))
                    event = None
                if isinstance(event, Session.CheckpointCommitted) and not event.degraded:
                    session_id = self._session_id(originator_id)
                    self.store.put(
                        TimelineEntry(
                            key=timeline_key(event.checkpoint_id),
                            session_id=session_id,
                            checkpoint_id=event.checkpoint_id,
                            content=storable_text(event.summary),
                            created_at=event.created_at,
                        )
                    )
                    written += 1
                    log.info(
                        "timeline entry written",
                        extra={"session_id": session_id, "checkpoint_id": event.checkpoint_id},
                    )
                position = note.id
                self._advance(position)

    def _next(self, position: int) -> Sequence[Notification]:
        with self.db.read() as cur:
            return [notification_of(r) for r in cur.execute(self._select, (position, CHECKPOINT_TOPIC)).fetchall()]

    def _session_id(self, aggregate_id: UUID) -> str:
        with self.db.read() as cur:
            row = cur.execute(
                "SELECT session_id FROM {t}rm_sessions WHERE aggregate_id = ?", (aggregate_id.hex,)
            ).fetchone()
        return str(row[0]) if row else aggregate_id.hex
