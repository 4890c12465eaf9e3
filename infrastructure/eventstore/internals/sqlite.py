"""eventsourcing's SQLite recorder, projecting through its insert hook (see ``__init__``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from ...database import Cur, Dialect, ImmediateTransaction

if TYPE_CHECKING:
    from ...readmodel import ReadModelProjector


class LockedWriter(Protocol):
    """A write transaction holding the database's writer lock from its start: no other
    connection inserts events until it ends (ADR 0021). Passed to the recorder's
    ``insert_events`` as ``locked_writer=``; it then inserts inside it."""

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]: ...


class CursorWriter:
    """The ``LockedWriter`` of both SQL engines: the locked transaction's cursor, the
    statement that selects an aggregate's events above a version, and the aggregate id
    as that statement binds it."""

    def __init__(self, curs: Any, events_after_sql: Any, bound_id: Callable[[UUID], Any]) -> None:
        self.curs = curs
        self.events_after_sql = events_after_sql
        self.bound_id = bound_id

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]:
        self.curs.execute(self.events_after_sql, (self.bound_id(originator_id), version))
        return [
            StoredEvent(originator_id, row["originator_version"], row["topic"], bytes(row["state"]))
            for row in self.curs.fetchall()
        ]


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
        return self._insert_events(writer.curs, stored_events, **kwargs)

    @contextmanager
    def locked_writer(self) -> Iterator[LockedWriter]:
        after = self.select_events_statement + "AND originator_version>? ORDER BY originator_version ASC"
        with self.datastore.get_connection(commit=True) as conn, ImmediateTransaction(conn, commit=True) as c, c:
            yield CursorWriter(c, after, lambda originator_id: originator_id.hex)

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        events = kwargs.get("projected_events")
        if ids and events is not None:
            self.projector.project_inline(Cur(c.sqlite_cursor, self.dialect), ids, events)
        snapshots = kwargs.get("snapshots")
        if snapshots:
            rows = [(s.originator_id.hex, s.originator_version, s.topic, s.state) for s in snapshots]
            c.executemany(self.snapshot_recorder.insert_events_statement, rows)
        return ids
