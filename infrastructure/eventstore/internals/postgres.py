"""eventsourcing's PostgreSQL recorder, projecting through its insert hooks (see ``__init__``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import MethodType
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import StoredEvent

from ...database import CHECK_FAILED, Cur, Dialect, PipelinedCur, drop_dead_connections
from .sqlite import CursorWriter, LockedWriter

if TYPE_CHECKING:
    from ...readmodel import ReadModelProjector


#: State bytes above which an append is not pipelined: psycopg's pipeline mode hung
#: sending a 16 MB parameter (psycopg 3.3.9, both implementations; a plain execute of
#: it does not), and the library sends states hex-encoded, twice their size. Below it
#: the library's own pipelined insert; above it the same statements, one by one.
PIPELINE_LIMIT = 4 * 2**20


#: A statement that fails the transaction it runs in, so that its COMMIT rolls back.
ROLL_BACK = "DO $$ BEGIN RAISE EXCEPTION 'the read-model projection failed: the append rolls back'; END $$"


def postgres_recorder_class() -> type:
    """The projecting PostgreSQL recorder (imported only when PostgreSQL is configured)."""
    from eventsourcing.postgres import PostgresApplicationRecorder
    from psycopg.rows import tuple_row
    from psycopg.sql import SQL, Identifier

    class ProjectingPostgresRecorder(PostgresApplicationRecorder):
        """The library's pipelined insert under its events lock; the read-model rows and
        the due snapshots go into the same transaction once the events have their ids."""

        def __init__(
            self, datastore: Any, projector: ReadModelProjector, dialect: Dialect, events_table_name: str
        ) -> None:
            if getattr(datastore, "enable_db_functions", False):
                # The library's insert function takes neither hook (no read-model rows,
                # no snapshots) nor its events lock (followers could skip an event).
                raise ValueError(
                    "POSTGRES_ENABLE_DB_FUNCTIONS cannot be used: its insert function bypasses "
                    "the read-model projection and the events lock (docs/storage.md)"
                )
            super().__init__(datastore, events_table_name=events_table_name)
            self.projector = projector
            self.dialect = dialect
            self.snapshot_recorder: Any = None  # wired by SessionsApplication
            self.notify_statement = SQL("NOTIFY {0}").format(Identifier(self.channel_name))

        def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
            writer = kwargs.get("locked_writer")
            if writer is not None:
                # Inside the writer's transaction, which holds the events lock already:
                # the library's NOTIFY and INSERT, then the same hook as its own path.
                writer.curs.execute(self.notify_statement)
                writer.curs.execute(self.insert_events_statement, (pg_rows(self, stored_events),))
                return self._fetch_ids_after_insert_events(writer.curs, stored_events, **kwargs)
            if sum(len(s.state) for s in (*stored_events, *(kwargs.get("snapshots") or ()))) < PIPELINE_LIMIT:
                failed: list[BaseException] = []
                try:
                    # (undecorated, as the reads: ``without_inner_retries``)
                    insert = PostgresApplicationRecorder.insert_events.__wrapped__  # type: ignore[attr-defined]
                    return insert(self, stored_events, **kwargs, projection_failed=failed)
                except Exception as exc:
                    cause = failed[0] if failed else exc  # (the rollback's error stands for it)
                    if not check_failed(cause):
                        if failed:
                            raise cause from None
                        raise
                # A check of the pipelined projection failed at the COMMIT (a read model
                # that lags, a command id another session took): rolled back.
            # The careful path (also for states too large for a pipeline): the same
            # statements in a plain transaction, which reads as it goes and decides.
            with self.locked_writer() as plain:
                return self.insert_events(stored_events, **{**kwargs, "locked_writer": plain})

        def _fetch_ids_after_insert_events(
            self, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
        ) -> Sequence[int] | None:
            ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
            events, snapshots = kwargs.get("projected_events"), kwargs.get("snapshots")
            if not ((ids and events is not None) or snapshots):
                return ids
            conn = curs.connection
            with conn.cursor(row_factory=tuple_row) as raw:
                if not conn.pgconn.pipeline_status:
                    self._write_rows(Cur(raw, self.dialect), ids, events, snapshots)
                    return ids
                # The library's pipelined transaction: the rows join its pipeline. The
                # library keeps an exception raised here until its transaction has ended
                # in a COMMIT: a refusal of ours must fail the transaction on the server,
                # or the events would stay.
                try:
                    self._write_rows(PipelinedCur(raw, self.dialect), ids, events, snapshots)
                except BaseException as exc:
                    failed = kwargs.get("projection_failed")
                    if failed is not None:
                        failed.append(exc)
                    raw.execute(ROLL_BACK)
                    raise
            return ids

        def _write_rows(self, cur: Cur, ids: Sequence[int], events: Any, snapshots: Any) -> None:
            if ids and events is not None:
                self.projector.project_inline(cur, ids, events)
            if snapshots:
                recorder = self.snapshot_recorder
                cur.raw.execute(recorder.insert_events_statement, (pg_rows(recorder, snapshots),))

        @contextmanager
        def locked_writer(self) -> Iterator[LockedWriter]:
            with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
                # The events lock every insert takes (the library's statements), held to
                # the end: no other writer can insert meanwhile.
                for statement in self.lock_table_statements:
                    curs.execute(statement)
                after = self.select_events_statement + SQL(" AND originator_version > %s ORDER BY originator_version")
                yield CursorWriter(curs, after, lambda originator_id: originator_id)

    return ProjectingPostgresRecorder


def pg_rows(recorder: Any, stored_events: Sequence[StoredEvent]) -> list[Any]:
    """The library's composite values of ``stored_events`` for ``recorder``'s INSERT."""
    return [
        recorder.construct_pg_stored_event(s.originator_id, s.originator_version, s.topic, s.state)
        for s in stored_events
    ]


def without_inner_retries(recorder: Any) -> None:
    """The recorder's reads without eventsourcing's retry decorator (ten tries on any
    ``OperationalError``, a lock wait among them; its public ``__wrapped__``), as its
    insert is: the callers' loops decide. A read whose pooled connection the server
    closed is still tried again at once, as the decorator did (docs/storage.md)."""
    for name in ("select_events", "select_notifications", "max_notification_id"):
        inner = getattr(getattr(type(recorder), name, None), "__wrapped__", None)
        if inner is not None:
            setattr(recorder, name, MethodType(_reconnecting(inner), recorder))


#: Tries of a read whose connection was found closed (each after dropping the dead ones).
READ_TRIES = 3


def _reconnecting(inner: Any) -> Any:
    def read(recorder: Any, *args: Any, **kwargs: Any) -> Any:
        for _ in range(READ_TRIES - 1):
            try:
                return inner(recorder, *args, **kwargs)
            except Exception as exc:
                if not connection_lost(exc):
                    raise
                drop_dead_connections(recorder.datastore)
        return inner(recorder, *args, **kwargs)

    return read


def connection_lost(exc: BaseException) -> bool:
    """The server closed the connection (class 08, or 57P01..57P03: terminated, shutting
    down, cannot connect now), not a lock wait, a cancel or a deadlock: a read may be
    repeated on another connection without waiting for anyone."""
    import psycopg

    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, psycopg.Error):
        cause = cause.__cause__
    if not isinstance(cause, (psycopg.OperationalError, psycopg.InterfaceError)):
        return False
    state = cause.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def check_failed(exc: BaseException) -> bool:
    """A pipelined projection's ``expect_one`` failed (the driver's error, whether or
    not the library wrapped it)."""
    cause: BaseException | None = exc
    while cause is not None:
        if getattr(cause, "sqlstate", None) == CHECK_FAILED:
            return True
        cause = cause.__cause__
    return False
