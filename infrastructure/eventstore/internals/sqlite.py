"""eventsourcing's SQLite recorder, projecting through its insert hook (see ``__init__``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor, SQLiteTransaction

from ...database import Cur, Dialect

if TYPE_CHECKING:
    from ...readmodel import ReadModelProjector


class LockedWriter(Protocol):
    """A write transaction holding the database's writer lock from its start: no other
    connection inserts events until it ends (ADR 0021). Passed to the recorder's
    ``insert_events`` as ``locked_writer=``; it then inserts inside it."""

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]: ...


class _ImmediateTransaction(SQLiteTransaction):
    """The library's transaction (commit, rollback, error mapping), begun IMMEDIATE:
    it takes the write lock before its first read."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        return cursor


class _SQLiteLockedWriter:
    def __init__(self, recorder: ProjectingSQLiteRecorder, c: SQLiteCursor) -> None:
        self.recorder = recorder
        self.c = c

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]:
        self.c.execute(
            self.recorder.select_events_statement + "AND originator_version>? ORDER BY originator_version ASC",
            (originator_id.hex, version),
        )
        return [
            StoredEvent(originator_id, row["originator_version"], row["topic"], bytes(row["state"]))
            for row in self.c.fetchall()
        ]


def _row(s: StoredEvent) -> tuple[Any, ...]:
    oid = s.originator_id
    return (oid.hex if isinstance(oid, UUID) else str(oid), s.originator_version, s.topic, s.state)


class ProjectingSQLiteRecorder(SQLiteApplicationRecorder):
    """Inserts a command's events, its read-model rows and its due snapshots in one
    transaction (ADR 0003). ``save(**kwargs)`` hands them down: ``projected_events``
    (the domain events, for the projector), ``snapshots`` (stored snapshots) and
    ``locked_writer`` (insert inside that transaction instead of a new one)."""

    def __init__(self, datastore: Any, projector: ReadModelProjector, dialect: Dialect) -> None:
        super().__init__(datastore)
        self.projector = projector
        self.dialect = dialect
        self.snapshot_recorder: Any = None  # wired by SessionsApplication

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        writer = kwargs.get("locked_writer")
        if writer is None:
            return super().insert_events(stored_events, **kwargs)
        return self._insert_events(writer.c, stored_events, **kwargs)

    @contextmanager
    def locked_writer(self) -> Iterator[LockedWriter]:
        with self.datastore.get_connection(commit=True) as conn, _ImmediateTransaction(conn, commit=True) as c, c:
            yield _SQLiteLockedWriter(self, c)

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        events = kwargs.get("projected_events")
        if ids and events is not None:
            self.projector.project_inline(Cur(c.sqlite_cursor, self.dialect), ids, events)
        snapshots = kwargs.get("snapshots")
        if snapshots:
            c.executemany(self.snapshot_recorder.insert_events_statement, [_row(s) for s in snapshots])
        return ids
