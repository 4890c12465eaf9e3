"""The event store: an eventsourcing ``Application`` whose recorder also projects.

Choosing the engine is configuration (``database_url``); the code path is the same.
The recorder subclasses insert the events and run the read-model projector on the
same cursor, in the same transaction (ADR 0003).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import MethodType
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.application import (
    AggregateNotFoundError,
    Application,
    ProcessingEvent,
    project_aggregate,
)
from eventsourcing.domain import CanMutateAggregate, Snapshot
from eventsourcing.persistence import (
    IntegrityError,
    Mapper,
    Recording,
    StoredEvent,
    Transcoder,
)
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor, SQLiteTransaction
from eventsourcing.utils import Environment, get_topic

from context_compaction.application.ports import ConcurrencyConflict
from context_compaction.domain.errors import (
    ContextCompactionError,
    CorruptEvent,
    SessionNotFound,
    StorageError,
)
from context_compaction.domain.session import Session, session_aggregate_id, snapshot_problem

from .database import (
    Cur,
    Database,
    Dialect,
    StorageBusy,
    is_transient,
    storage_cause,
    storage_errors,
    storage_failure,
)
from .readmodel import SCHEMA_VERSION, EventsTable, ReadModelProjector, SqlReadModel
from .transcoding import (
    PlainJSONTranscoder,
    corrupt_event,
    field_checks,
    message_problem,
    naming_session,
    required_fields,
)

log = logging.getLogger("context_compaction.eventstore")


T = TypeVar("T")


class LockedWriter(Protocol):
    """A write transaction holding the database's writer lock from its start: no other
    connection inserts events until it ends (ADR 0021)."""

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]: ...

    def insert(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None: ...


class _ImmediateTransaction(SQLiteTransaction):
    """eventsourcing's transaction (commit, rollback, error mapping), begun IMMEDIATE:
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
        raw = self.c.sqlite_cursor
        raw.execute(
            self.recorder.select_events_statement
            + "AND originator_version>? ORDER BY originator_version ASC",
            (originator_id.hex, version),
        )
        return [
            StoredEvent(originator_id, row["originator_version"], row["topic"], bytes(row["state"]))
            for row in raw.fetchall()
        ]

    def insert(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        return self.recorder._insert_events(self.c, stored_events, **kwargs)


class ProjectingSQLiteRecorder(SQLiteApplicationRecorder):
    def __init__(self, datastore: Any, projector: ReadModelProjector, dialect: Dialect) -> None:
        super().__init__(datastore)
        self.projector = projector
        self.dialect = dialect
        self.snapshot_recorder: Any = None  # wired by SessionsApplication

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # The datastore's transaction() minus its two generator context managers: the
        # same pooled writer connection, BEGIN, commit or rollback and error mapping.
        pool = self.datastore.pool
        conn = pool.get_connection(is_writer=True)
        try:
            with SQLiteTransaction(conn, commit=True) as c, c:
                return self._insert_events(c, stored_events, **kwargs)
        finally:
            pool.put_connection(conn)

    @contextmanager
    def locked_writer(self) -> Iterator[LockedWriter]:
        pool = self.datastore.pool
        conn = pool.get_connection(is_writer=True)
        try:
            with _ImmediateTransaction(conn, commit=True) as c, c:
                yield _SQLiteLockedWriter(self, c)
        finally:
            pool.put_connection(conn)

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # One executemany per command; eventsourcing executes row by row to read each
        # lastrowid. The writer holds the database lock and a rowid table without
        # AUTOINCREMENT gives each new row max(rowid) + 1, so the batch's ids are the
        # consecutive ones ending at last_insert_rowid().
        raw = c.sqlite_cursor
        rows = []
        prev: Any = None
        key = ""
        for s in stored_events:
            oid = s.originator_id
            if oid is not prev:  # a command's events share one originator: one .hex
                prev, key = oid, (oid.hex if isinstance(oid, UUID) else str(oid))
            rows.append((key, s.originator_version, s.topic, s.state))
        raw.executemany(self.insert_events_statement, rows)
        last = int(raw.execute("SELECT last_insert_rowid()").fetchone()[0])
        ids = list(range(last - len(stored_events) + 1, last + 1))
        events = kwargs.get("projected_events")
        if ids and events is not None:
            self.projector.project_inline(Cur(raw, self.dialect), ids, events)
        snapshots = kwargs.get("snapshots")
        if snapshots:
            self.snapshot_recorder._insert_events(c, snapshots)
        return ids


def _event_classes() -> dict[str, type]:
    """Stored topic → class, for our own event classes only (and the snapshot)."""
    classes: dict[str, type] = {get_topic(Snapshot): Snapshot}
    for value in vars(Session).values():
        if isinstance(value, type) and issubclass(value, CanMutateAggregate):
            classes[get_topic(value)] = value
    return classes


class EventMapper(Mapper[UUID]):
    """eventsourcing's ``Mapper``, encoding events on a direct path when no compressor
    or cipher is configured (our store configures neither, ADR 0005), and decoding
    only what our own classes can be (ADR 0022).

    Same stored form as the base class (topic, state without the originator fields,
    ``class_version`` when above 1); per event it skips the generic steps, which are
    a tenth of an append's CPU: one event per message.

    A stored topic is looked up in an allow-list of our event classes, never imported
    (eventsourcing would import any module a topic names). A row that does not decode
    into one of them with every field its class needs is ``CorruptEvent``, naming the
    aggregate and version.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._classes = _event_classes()
        self._required = {cls: required_fields(cls) for cls in self._classes.values()}
        self._checks = {cls: field_checks(cls) for cls in self._classes.values()}
        self._aggregates = {get_topic(Session): Session}

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        cls = self._classes.get(stored_event.topic)
        if cls is None:
            raise self._corrupt(stored_event, "unknown event topic")
        try:
            state = stored_event.state
            if self.cipher is not None:
                state = self.cipher.decrypt(state)
            if self.compressor is not None:
                state = self.compressor.decompress(state)
            event_state = self.transcoder.decode(state)
        except Exception as exc:  # noqa: BLE001 - any undecodable row is the same fault
            raise self._corrupt(stored_event, f"state does not decode: {type(exc).__name__}") from None
        if not isinstance(event_state, dict):
            raise self._corrupt(stored_event, "state is not an object")
        event_state["originator_id"] = stored_event.originator_id
        event_state["originator_version"] = stored_event.originator_version
        class_version = getattr(cls, "class_version", 1)
        from_version = event_state.pop("class_version", 1)
        try:
            while from_version < class_version:
                getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(event_state)
                from_version += 1
        except Exception as exc:  # noqa: BLE001
            raise self._corrupt(stored_event, f"cannot upcast: {type(exc).__name__}") from None
        missing = self._required[cls] - event_state.keys()
        if missing:
            raise self._corrupt(stored_event, f"missing {', '.join(sorted(missing)[:4])}")
        for name, test in self._checks[cls]:
            if name in event_state and not test(event_state[name]):
                raise self._corrupt(stored_event, f"{name} has the wrong type")
        if cls is Session.MessageAppended:
            problem = message_problem(event_state)
            if problem is not None:
                raise self._corrupt(stored_event, problem)
        if cls is Snapshot:
            if self._aggregates.get(event_state["topic"]) is None:
                raise self._corrupt(stored_event, "snapshot of an unknown aggregate topic")
            problem = snapshot_problem(event_state["state"])
            if problem is not None:
                raise self._corrupt(stored_event, f"snapshot: {problem}")
        domain_event = object.__new__(cls)
        object.__setattr__(domain_event, "__dict__", event_state)
        return domain_event

    @staticmethod
    def _corrupt(stored_event: StoredEvent, problem: str) -> CorruptEvent:
        oid = stored_event.originator_id
        notification_id = getattr(stored_event, "id", None)
        return corrupt_event(
            problem,
            version=stored_event.originator_version,
            aggregate_id=oid.hex if isinstance(oid, UUID) else str(oid),
            notification_id=notification_id if isinstance(notification_id, int) else None,
        )

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if self.compressor is not None or self.cipher is not None:
            return super().to_stored_event(domain_event)
        cls = type(domain_event)
        state = domain_event.__dict__.copy()
        stored = object.__new__(StoredEvent)  # a frozen dataclass: set its fields directly
        fields = stored.__dict__
        fields["originator_id"] = state.pop("originator_id")
        fields["originator_version"] = state.pop("originator_version")
        fields["topic"] = get_topic(cls)
        class_version = getattr(cls, "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        fields["state"] = self.transcoder.encode(state)
        return stored


def _postgres_recorder_class() -> type:
    from eventsourcing.postgres import PostgresApplicationRecorder
    from psycopg.rows import tuple_row
    from psycopg.sql import SQL

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
            self.snapshot_recorder: Any = None  # wired by SessionsApplication

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
                    return self._insert_on(conn, curs, stored_events, **kwargs)

        def _insert_on(
            self, conn: Any, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
        ) -> list[int]:
            self._insert_stored_events(curs, stored_events, **kwargs)
            ids = [row["notification_id"] for row in curs.fetchall()]
            snapshots = kwargs.get("snapshots")
            if snapshots:
                self.snapshot_recorder._insert_stored_events(curs, snapshots)
            events = kwargs.get("projected_events")
            if events is not None:
                cur = Cur(conn.cursor(row_factory=tuple_row), self.dialect)
                self.projector.project_inline(cur, ids, events)
            return ids

        @contextmanager
        def locked_writer(self) -> Iterator[LockedWriter]:
            # The events table's EXCLUSIVE lock is the one every event insert takes
            # (eventsourcing orders notifications by it): held from the start, no other
            # writer can insert until this transaction ends.
            with self.datastore.get_connection() as conn, conn.transaction():
                with conn.cursor() as curs:
                    self._lock_table(curs)
                    yield _PostgresLockedWriter(self, conn, curs)

    class _PostgresLockedWriter:
        def __init__(self, recorder: ProjectingPostgresRecorder, conn: Any, curs: Any) -> None:
            self.recorder = recorder
            self.conn = conn
            self.curs = curs

        def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]:
            self.curs.execute(
                self.recorder.select_events_statement
                + SQL(" AND originator_version > %s ORDER BY originator_version ASC"),
                (originator_id, version),
            )
            return [
                StoredEvent(originator_id, row["originator_version"], row["topic"], bytes(row["state"]))
                for row in self.curs.fetchall()
            ]

        def insert(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
            return self.recorder._insert_on(self.conn, self.curs, stored_events, **kwargs)

    return ProjectingPostgresRecorder


def snapshot_step(interval: int, version: int) -> int:
    """Events between snapshots: ``interval``, doubled as the session grows.

    A snapshot holds state that grows with the session (its tool groups), so a fixed
    interval would make the snapshot bytes written per appended event grow with N.
    The step is ``interval`` times the largest power of two not above
    ``version / (8 * interval)``: snapshot bytes per event stay flat, and a cold load
    replays at most about an eighth of the session's events after its snapshot.
    Steps are nested powers of two, so a crossing at a larger step is one at a
    smaller step too.
    """
    ratio = version // (8 * interval)
    return interval * (1 << (ratio.bit_length() - 1)) if ratio > 1 else interval


def _without_inner_retries(recorder: Any) -> None:
    """eventsourcing retries each PostgreSQL query ten times on an ``OperationalError``,
    a lock wait that timed out among them; inside our own retries (loading a session,
    the command loop) that made fifty lock waits of one command. The recorder's reads
    are used undecorated: the callers' loops decide how often to try again."""
    for name in ("select_events", "select_notifications", "max_notification_id"):
        inner = getattr(getattr(type(recorder), name, None), "__wrapped__", None)
        if inner is not None:
            setattr(recorder, name, MethodType(inner, recorder))


class SessionsApplication(Application[UUID]):
    """Sessions as event-sourced aggregates; snapshots every ``snapshot_interval`` events
    (more sparsely as a session grows, see ``snapshot_step``)."""

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
        if self.snapshots is not None:
            self.recorder.snapshot_recorder = self.snapshots.recorder  # type: ignore[attr-defined]
        if dialect.is_postgres:
            for recorder in (self.recorder, getattr(self.snapshots, "recorder", None)):
                _without_inner_retries(recorder)

    def construct_env(self, name: str, env: Any = None) -> Environment:
        # Only the configuration we pass: eventsourcing would also merge os.environ,
        # so a host's own eventsourcing settings (PERSISTENCE_MODULE, CIPHER_TOPIC,
        # COMPRESSOR_TOPIC, ...) would silently reconfigure our store.
        return Environment(name, dict(env or {}))

    def construct_transcoder(self) -> Transcoder:
        return PlainJSONTranscoder()

    def construct_mapper(self) -> Mapper[UUID]:
        return EventMapper(transcoder=self.construct_transcoder())

    def construct_recorder(self) -> Any:
        datastore = self.factory.datastore  # type: ignore[attr-defined]
        if not self._dialect.is_postgres:
            self.projector = ReadModelProjector(EventsTable("sqlite", "stored_events"))
            return ProjectingSQLiteRecorder(datastore, self.projector, self._dialect)
        if datastore.lock_timeout:
            # Every connection of the pool (reads, catch-up, schema statements) waits for
            # a lock no longer than eventsourcing lets its inserts wait; without it a
            # table locked elsewhere blocks a query indefinitely. libpq passes it at
            # connect (no statement per transaction), so it is set before the pool
            # opens: constructing the recorder opens it.
            datastore.pool.kwargs["options"] = f"-c lock_timeout={int(datastore.lock_timeout)}s"
        table = f"{self.name.lower()}_events"
        self.projector = ReadModelProjector(EventsTable("postgres", table, self._postgres_schema))
        recorder = _postgres_recorder_class()(
            datastore, self.projector, self._dialect, events_table_name=table
        )
        # Always: besides creating tables it registers the composite type adapters.
        with storage_errors():
            recorder.create_table()
        return recorder

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        # Application.save minus its runtime Protocol isinstance checks (tens of µs per
        # call): we only ever save Session aggregates.
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        for aggregate in objs:
            processing_event.events.extend(aggregate.collect_events())
            processing_event.aggregates[aggregate.id] = aggregate
        processing_event.saved_kwargs.update(kwargs)
        return self._record(processing_event)

    def save_with(self, writer: LockedWriter, session: Session) -> None:
        """``save``, inside ``writer``'s transaction."""
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        processing_event.events.extend(session.collect_events())
        processing_event.aggregates[session.id] = session
        self._record(processing_event, writer)

    def _record(
        self, processing_event: ProcessingEvent[UUID], writer: LockedWriter | None = None
    ) -> list[Recording[UUID]]:
        # eventsourcing's EventStore.put minus what only followers use: a Recording and
        # a Notification object per event, and its repository cache. Nothing follows
        # this application (the read model is projected in the same transaction) and
        # the session cache is ours (SqlEventStore).
        events = processing_event.events
        kwargs = processing_event.saved_kwargs
        kwargs["projected_events"] = list(events)
        kwargs["snapshots"] = self._due_snapshots(processing_event)
        to_stored_event = self.mapper.to_stored_event
        insert = self.recorder.insert_events if writer is None else writer.insert
        insert([to_stored_event(e) for e in events], tracking=processing_event.tracking, **kwargs)
        return []

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        """Snapshots are written with the events instead (``_due_snapshots``)."""

    def _due_snapshots(self, processing_event: ProcessingEvent[UUID]) -> list[StoredEvent]:
        # Written in the events' transaction: no commit (fsync) of their own. Taken
        # from the state we hold (no re-read) when this save crosses a step boundary.
        # A snapshot that cannot be made only costs load time later; it must not fail
        # the command.
        interval = self.snapshotting_intervals.get(Session)
        if not interval or self.snapshots is None:
            return []
        due = []
        try:
            for aggregate in processing_event.aggregates.values():
                own = aggregate.id
                first = aggregate.version - sum(
                    1 for e in processing_event.events
                    if e.originator_id is own or e.originator_id == own
                )
                step = snapshot_step(interval, aggregate.version)
                if aggregate.version // step > first // step:
                    due.append(self.mapper.to_stored_event(Session.Snapshot.take(aggregate)))
        except Exception as exc:  # noqa: BLE001
            log.warning("snapshot failed", extra={"error_class": type(exc).__name__})
            return []
        return due


class SqlEventStore:
    """Implements the application's EventStore port.

    Keeps the last saved state of recently used sessions in memory and brings it up to
    date with the events stored since (other processes may have written), instead of
    decoding a snapshot and up to ``snapshot_interval`` events per command. Callers that
    mutate hold the session's lock (``services.mutate``); a failed save evicts the
    entry, so a half-applied decision is never reused.
    """

    def __init__(self, app: SessionsApplication, db: Database, *, cache_size: int = 256) -> None:
        self.app = app
        self.db = db
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, session_id: str, version: int | None = None, *, allow_stale: bool = False) -> Session:
        if version is None:
            cached = self._cached(session_id, fast_forward=not allow_stale)
            if cached is not None:
                return cached
        aggregate_id = session_aggregate_id(session_id)
        for attempt in range(5):
            try:
                with storage_errors():
                    session = self.app.repository.get(aggregate_id, version=version)
                break
            except AggregateNotFoundError:
                raise SessionNotFound(f"session {session_id!r} does not exist") from None
            except CorruptEvent as exc:
                session = self._from_events(session_id, aggregate_id, version, exc)
                break
            except StorageBusy as exc:
                if attempt == 4:
                    raise StorageError(
                        f"the database stayed busy while loading: {exc.details.get('cause')}",
                        details=exc.details,
                    ) from None
                self.db.recover()
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        assert isinstance(session, Session)
        if version is None:
            self._remember(session_id, session)
        return session

    def _from_events(
        self, session_id: str, aggregate_id: UUID, version: int | None, damaged: CorruptEvent
    ) -> Session:
        """The session rebuilt from its events alone, when ``damaged`` may be its snapshot:
        a snapshot is a cache of the events, so a damaged one costs a full replay, not the
        session (ADR 0022). A damaged event is raised as such."""
        if self.app.snapshots is None:
            raise naming_session(damaged, session_id) from None
        try:
            with storage_errors():
                session = project_aggregate(None, self.app.events.get(aggregate_id, lte=version))
        except CorruptEvent as exc:
            raise naming_session(exc, session_id) from None
        if session is None:
            raise SessionNotFound(f"session {session_id!r} does not exist")
        log.warning(
            "damaged snapshot skipped, the session was replayed from its events",
            extra={"session_id": session_id, "version": damaged.details.get("version"),
                   "problem": damaged.details.get("problem")},
        )
        return session  # type: ignore[no-any-return]

    def _cached(self, session_id: str, *, fast_forward: bool) -> Session | None:
        with self._lock:
            session = self._cache.get(session_id)
            if session is None:
                return None
            self._cache.move_to_end(session_id)
        if session.pending_events:  # a decision that was never saved: not trustworthy
            self.forget(session_id)
            return None
        if not fast_forward:
            return session
        try:
            with storage_errors():
                newer = list(self.app.events.get(session.id, gt=session.version))
        except (StorageBusy, StorageError):
            self.forget(session_id)
            return None
        except CorruptEvent as exc:
            self.forget(session_id)
            raise naming_session(exc, session_id) from None
        for domain_event in newer:
            domain_event.mutate(session)
        return session

    def is_current(self, session: Session) -> bool:
        """Has nothing been stored for this session after ``session.version``?"""
        try:
            with storage_errors():
                newer = self.app.recorder.select_events(session.id, gt=session.version, limit=1)
        except (StorageBusy, StorageError):
            return False
        return not newer

    def _remember(self, session_id: str, session: Session) -> None:
        with self._lock:
            self._cache[session_id] = session
            self._cache.move_to_end(session_id)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._cache.pop(session_id, None)

    def save(self, session: Session) -> None:
        try:
            self.app.save(session)
        except Exception as exc:
            self.forget(session.session_id)
            failure = self._write_failure(exc)
            if failure is exc:
                raise
            raise failure from exc
        self._remember(session.session_id, session)

    def decide_exclusively(
        self, session_id: str, decide: Callable[[Session], T]
    ) -> tuple[T, Session, bool]:
        """Bring the session up to date, decide and save, all in one transaction that
        holds the database's writer lock: no other writer can come in between, so
        this cannot conflict (ADR 0021). The path of a command that lost a race."""
        session = self.load(session_id, allow_stale=True)  # the held copy or a cold load
        to_domain_event = self.app.mapper.to_domain_event
        try:
            with self.app.recorder.locked_writer() as writer:  # type: ignore[attr-defined]
                for stored in writer.events_after(session.id, session.version):
                    to_domain_event(stored).mutate(session)
                result = decide(session)
                saved = bool(session.pending_events)
                if saved:
                    self.app.save_with(writer, session)
        except CorruptEvent as exc:
            self.forget(session_id)
            raise naming_session(exc, session_id) from None
        except ContextCompactionError as exc:
            if not isinstance(exc, StorageError) and not session.pending_events:
                raise  # decide's refusal: the copy it saw is current and unchanged
            self.forget(session_id)
            if isinstance(exc, StorageBusy):
                raise self._write_failure(exc) from exc
            raise
        except Exception as exc:
            self.forget(session_id)
            failure = self._write_failure(exc)
            if failure is exc:
                raise
            raise failure from exc
        self._remember(session_id, session)
        return result, session, saved

    def _write_failure(self, exc: Exception) -> Exception:
        """What a failed write means to the command loop (``exc`` itself: a bug)."""
        if isinstance(exc, IntegrityError):
            # Another writer appended this version first (optimistic concurrency).
            return ConcurrencyConflict(str(exc))
        if is_transient(exc):
            self.db.recover()
            return ConcurrencyConflict(storage_cause(exc), busy=True)
        return storage_failure(exc) or exc


def build_store(
    env: dict[str, str],
    *,
    snapshot_interval: int,
    dialect: Dialect,
    postgres_schema: str | None = None,
) -> tuple[SessionsApplication, SqlEventStore, SqlReadModel, Database]:
    if not dialect.is_postgres:
        env = {**env, "CREATE_TABLE": "n"}  # created below, only when the schema is not there yet
    app = SessionsApplication(
        env, snapshot_interval=snapshot_interval, dialect=dialect, postgres_schema=postgres_schema
    )
    db = Database(app.factory.datastore, dialect)  # type: ignore[attr-defined]
    assert app.projector is not None
    read_model = SqlReadModel(db, app.projector)
    version = read_model.schema_version()
    if version is None or version < SCHEMA_VERSION:
        # One marker read instead of ~20 DDL statements on every start (cold restore).
        with storage_errors():
            if not dialect.is_postgres:
                app.recorder.create_table()
                if app.snapshots is not None:
                    app.snapshots.recorder.create_table()  # type: ignore[attr-defined]
        read_model.create_tables(previous=version)
    return app, SqlEventStore(app, db), read_model, db
