"""The event store: an eventsourcing ``Application`` whose recorder also projects.

Choosing the engine is configuration (``database_url``); the code path is the same.
The recorder subclasses insert the events and run the read-model projector on the
same cursor, in the same transaction (ADR 0003).
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import (
    IntegrityError,
    JSONTranscoder,
    PersistenceError,
    Recording,
    StoredEvent,
    Transcoder,
)
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from context_compaction.application.ports import ConcurrencyConflict
from context_compaction.domain.errors import SessionNotFound, StorageError
from context_compaction.domain.session import Session, session_aggregate_id

from .database import Cur, Database, Dialect, StorageBusy, is_transient, storage_errors
from .readmodel import EventsTable, ReadModelProjector, SqlReadModel
from .transcoding import SafeJSONTranscoder

log = logging.getLogger("context_compaction.eventstore")


class ProjectingSQLiteRecorder(SQLiteApplicationRecorder):
    def __init__(self, datastore: Any, projector: ReadModelProjector, dialect: Dialect) -> None:
        super().__init__(datastore)
        self.projector = projector
        self.dialect = dialect

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        events = kwargs.get("projected_events")
        if ids and events is not None:
            self.projector.project_inline(Cur(c.sqlite_cursor, self.dialect), list(ids), events)
        return ids


def _postgres_recorder_class() -> type:
    from eventsourcing.postgres import PostgresApplicationRecorder
    from psycopg.rows import tuple_row

    class ProjectingPostgresRecorder(PostgresApplicationRecorder):
        def __init__(
            self,
            datastore: Any,
            projector: ReadModelProjector,
            dialect: Dialect,
            events_table_name: str,
        ) -> None:
            super().__init__(datastore, events_table_name=events_table_name)
            self.projector = projector
            self.dialect = dialect

        def insert_events(
            self, stored_events: Sequence[StoredEvent], **kwargs: Any
        ) -> Sequence[int] | None:
            # Like the base class, minus the pipeline: the projection must run inside
            # the transaction and any error in it must roll the events back too.
            # No retry here: a retry after an unacknowledged commit could append twice;
            # the application's command loop reloads and decides again instead.
            if not stored_events:
                return []
            with self.datastore.get_connection() as conn, conn.transaction():
                with conn.cursor() as curs:
                    self._insert_stored_events(curs, stored_events, **kwargs)
                    ids = [row["notification_id"] for row in curs.fetchall()]
                events = kwargs.get("projected_events")
                if events is not None:
                    cur = Cur(conn.cursor(row_factory=tuple_row), self.dialect)
                    self.projector.project_inline(cur, ids, events)
            return ids

    return ProjectingPostgresRecorder


class SessionsApplication(Application[UUID]):
    """Sessions as event-sourced aggregates; snapshots every ``snapshot_interval`` events."""

    name = "ContextCompaction"

    def __init__(
        self,
        env: dict[str, str],
        *,
        snapshot_interval: int,
        dialect: Dialect,
        postgres_schema: str | None = None,
    ) -> None:
        self._dialect = dialect
        self._postgres_schema = postgres_schema
        self.projector: ReadModelProjector | None = None
        self.snapshotting_intervals = {Session: snapshot_interval} if snapshot_interval else {}
        super().__init__(env=env)
        assert self.projector is not None
        self.projector.mapper = self.mapper

    def construct_transcoder(self) -> Transcoder:
        transcoder = SafeJSONTranscoder()
        self.register_transcodings(transcoder)
        return transcoder

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)

    def construct_recorder(self) -> Any:
        datastore = self.factory.datastore  # type: ignore[attr-defined]
        if self._dialect.is_postgres:
            table = f"{self.name.lower()}_events"
            self.projector = ReadModelProjector(
                EventsTable("postgres", table, self._postgres_schema)
            )
            recorder = _postgres_recorder_class()(
                datastore, self.projector, self._dialect, events_table_name=table
            )
        else:
            self.projector = ReadModelProjector(EventsTable("sqlite", "stored_events"))
            recorder = ProjectingSQLiteRecorder(datastore, self.projector, self._dialect)
        with storage_errors():
            recorder.create_table()
        return recorder

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        processing_event.saved_kwargs["projected_events"] = list(processing_event.events)
        return super()._record(processing_event)

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        # The events are committed by now; a failed snapshot only costs load time
        # later and must not make the command look failed (it would be retried).
        try:
            super()._take_snapshots(processing_event)
        except Exception as exc:  # noqa: BLE001
            log.warning("snapshot failed", extra={"error_class": type(exc).__name__})


class SqlEventStore:
    """Implements the application's EventStore port."""

    def __init__(self, app: SessionsApplication, db: Database) -> None:
        self.app = app
        self.db = db

    def load(self, session_id: str, version: int | None = None) -> Session:
        aggregate_id = session_aggregate_id(session_id)
        for attempt in range(5):
            try:
                with storage_errors():
                    session = self.app.repository.get(aggregate_id, version=version)
                break
            except AggregateNotFoundError:
                raise SessionNotFound(f"session {session_id!r} does not exist") from None
            except StorageBusy:
                if attempt == 4:
                    raise StorageError("the database stayed busy while loading") from None
                self.db.recover()
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        assert isinstance(session, Session)
        return session

    def save(self, session: Session) -> None:
        try:
            self.app.save(session)
        except IntegrityError as exc:
            # Another writer appended this version first (optimistic concurrency).
            raise ConcurrencyConflict(str(exc)) from exc
        except Exception as exc:
            if is_transient(exc):
                self.db.recover()
                raise ConcurrencyConflict(f"{type(exc).__name__}", busy=True) from exc
            if isinstance(exc, (PersistenceError, sqlite3.Error)) or type(
                exc
            ).__module__.startswith("psycopg"):
                raise StorageError(f"storage failed: {type(exc).__name__}") from exc
            raise


def build_store(
    env: dict[str, str],
    *,
    snapshot_interval: int,
    dialect: Dialect,
    postgres_schema: str | None = None,
) -> tuple[SessionsApplication, SqlEventStore, SqlReadModel, Database]:
    app = SessionsApplication(
        env, snapshot_interval=snapshot_interval, dialect=dialect, postgres_schema=postgres_schema
    )
    db = Database(app.factory.datastore, dialect)  # type: ignore[attr-defined]
    assert app.projector is not None
    read_model = SqlReadModel(db, app.projector)
    read_model.create_tables()
    return app, SqlEventStore(app, db), read_model, db
