"""``build_store``: the event store, read model and database of one configuration."""

from __future__ import annotations

import logging

from context_compaction.domain.errors import StorageError

from ..database import Database, Dialect, qualified_name, storage_errors
from ..readmodel import SCHEMA_VERSION, SqlReadModel
from .application import SessionsApplication
from .store import SqlEventStore

log = logging.getLogger("context_compaction.eventstore")


def build_store(
    env: dict[str, str],
    *,
    snapshot_interval: int,
    dialect: Dialect,
    postgres_schema: str | None = None,
    application_class: type[SessionsApplication] = SessionsApplication,
    read_only: bool = False,
) -> tuple[SessionsApplication, SqlEventStore, SqlReadModel, Database]:
    """The event store, read model and database of one configuration; ``application_class``
    may mix in eventsourcing's ``Leader``, so that followers are prompted after each save."""
    # The library's own setting: its tables are created below, only when the read
    # model's schema mark is missing or older, not with ~10 DDL statements a start.
    env = {**env, "CREATE_TABLE": "n"}
    app = application_class(
        env, snapshot_interval=snapshot_interval, dialect=dialect, postgres_schema=postgres_schema
    )
    db = Database(app.factory.datastore, dialect)  # type: ignore[attr-defined]
    assert app.projector is not None
    read_model = SqlReadModel(db, app.projector)
    snapshots = None
    if app.snapshots is not None:
        snapshots = app.snapshots.recorder.events_table_name  # type: ignore[attr-defined]
        if dialect.is_postgres:
            snapshots = qualified_name(postgres_schema, snapshots)
    events = app.projector.events_table.qualified
    stored = [events, *([snapshots] if snapshots else [])]
    version, missing = read_model.schema_state(*stored)
    if version is not None and events in missing:
        # A read model of events that are gone: creating an empty table would number
        # new events from 1 again, below the read model's position.
        cause = (f"the events table {events} is missing from a database whose read model is at "
                 f"schema {version} (dropped by hand?): restore it from a backup; nothing was created")
        raise StorageError(cause, details={"cause": cause})
    if read_only:
        read_model.read_only = True
        if version is None or version < SCHEMA_VERSION:
            cause = (f"it is read-only and its schema is {'missing' if version is None else version}; this "
                     f"release reads {SCHEMA_VERSION}: open it once with a role or file that can write")
            raise StorageError(cause, details={"cause": cause})
    elif version is None or version < SCHEMA_VERSION or snapshots in missing:
        # One marker read instead of ~20 DDL statements on every start (cold restore);
        # the snapshots' table, too, when a database made without snapshots gets them.
        with storage_errors():
            app.recorder.create_table()
            if app.snapshots is not None:
                app.snapshots.recorder.create_table()  # type: ignore[attr-defined]
        read_model.create_tables(previous=version)
        if version is not None and version < SCHEMA_VERSION:
            # The projected tables were dropped: replay now, before this process's
            # first append, whose projection reads its session's row (review of ADR
            # 0066: an append before any read failed with ProjectionOutOfOrder).
            read_model.catch_up()
        if dialect.is_postgres:  # (new, or an upgrade: this step already alters the schema)
            _fast_toast(db, stored)
    return app, SqlEventStore(app, db), read_model, db


def _fast_toast(db: Database, tables: list[str]) -> None:
    """PostgreSQL states compressed with lz4 instead of pglz when the server has it
    (pglz took half of an events INSERT under the events lock, ADR 0053). Best effort:
    the ALTER waits at most a second for its exclusive lock, else the start goes on
    with pglz and says so."""
    try:
        with db.write() as cur:
            cur.execute("SET LOCAL lock_timeout = '1s'")
            row = cur.execute(
                "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
            ).fetchone()
            if row is None:
                return
            for table in tables:
                done = cur.execute(
                    "SELECT attcompression = 'l' FROM pg_attribute"
                    " WHERE attrelid = %s::regclass AND attname = 'state'",
                    (table,),
                ).fetchone()
                if done is not None and not done[0]:
                    cur.execute(f"ALTER TABLE {table} ALTER COLUMN state SET COMPRESSION lz4")
    except StorageError as exc:  # (StorageBusy included: a lock wait timed out)
        log.warning("event states stay pglz-compressed (%s)", type(exc.__cause__ or exc).__name__)
