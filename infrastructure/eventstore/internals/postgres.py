"""eventsourcing's PostgreSQL recorders, extended beneath its API (see ``__init__``)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from types import MethodType
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.persistence import Notification, StoredEvent

from ...database import Cur, Dialect, PipelinedCur
from ...readmodel.projector import LockFreeDatabase, lock_sessions_first
from ...readmodel.schema import LOCK_FREE_MARK, POSITION
from ..gaps import Holes, select_in_order
from ..pgsql import (
    PARAMS,
    binary_arrays_on,
    columns,
    id_array,
    int8_array,
    ordered_function,
    ordered_insert,
    text_array,
    unnest_insert,
)

if TYPE_CHECKING:
    from ...readmodel import ReadModelProjector
    from .sqlite import LockedWriter

log = logging.getLogger("context_compaction.eventstore")


def postgres_recorder_class() -> type:
    """The projecting PostgreSQL recorder (imported only when PostgreSQL is configured)."""
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresSubscription
    from psycopg.rows import tuple_row
    from psycopg.sql import SQL, Identifier

    POSITION_SQL = "SELECT notification_id FROM {t}rm_position WHERE name = ?"
    #: The lock-free mark and the read model's position, whichever exist (ADR 0066).
    MARKS_SQL = f"SELECT name, notification_id FROM {{t}}rm_position WHERE name IN ('{LOCK_FREE_MARK}', '{POSITION}')"

    class ProjectingPostgresRecorder(PostgresApplicationRecorder):
        def __init__(
            self,
            datastore: Any,
            projector: ReadModelProjector,
            dialect: Dialect,
            events_table_name: str,
        ) -> None:
            super().__init__(datastore, events_table_name=events_table_name)
            self.lock_table_statements = without_redundant_lock_timeout(
                self.lock_table_statements, datastore
            )
            self.projector = projector
            self.dialect = dialect
            self.snapshot_recorder: Any = None  # wired by SessionsApplication
            self.notify = False  # ``postgres.notify``, set by SessionsApplication
            self._insert_into = functools.partial(
                unnest_insert, datastore.schema, id_type=datastore.originator_id_type
            )
            self.plain_insert_statement = self._insert_into(events_table_name) + SQL(" RETURNING notification_id")
            self._snapshot_insert: Any = None  # (the snapshot table is wired later)
            # The one-trip append (ADR 0053): the events, their rm_messages rows and the
            # read model's position in one statement. The position moves only from just
            # before these ids (every writer of it holds the lock); otherwise ``1 / 0``
            # fails the transaction and the caller takes the careful path.
            id_type = datastore.originator_id_type
            self.ordered_insert_statement = ordered_insert(
                self._insert_into(events_table_name), id_type, dialect.sql("{t}"), PARAMS
            )
            # ADR 0057: the events lock is taken inside the statement that inserts (a
            # function), so nothing the client does (encoding the parameters, being
            # descheduled on a busy machine) comes between the lock and the insert.
            locks = [s for s in self.lock_table_statements if "LOCK TABLE" in repr(s)]
            self.pre_lock_statements = [s for s in self.lock_table_statements if s not in locks]
            self.lock_in_function = len(locks) == 1
            touch, touch_types = projector.append_touch()
            touch_sql = (touch.replace("{t}", dialect.sql("{t}")), touch_types)
            self.create_ordered_function, self.ordered_call_statement = ordered_function(
                datastore.schema, events_table_name, id_type, dialect.sql("{t}"), locks[0] if locks else None,
                touch_sql,
            )
            # ``postgres.ordering = lock_free`` (ADR 0066; set by SessionsApplication):
            # the twin function and statement, without the events lock or the position.
            self.lock_free = False
            self._marked = False  # (this process has seen the database's lock-free mark)
            self._mark_checked = False  # (a locked process has looked for it once)
            self.create_unlocked_function, self.unlocked_call_statement = ordered_function(
                datastore.schema, events_table_name, id_type, dialect.sql("{t}"), None, touch_sql, lock_free=True
            )
            self.id_type = id_type
            self.qualified_events = f'"{datastore.schema}"."{events_table_name}"'
            self.holes_seen = Holes()  # (what this process's reads of the log noted, ADR 0066)
            self._marks_sql = dialect.sql(MARKS_SQL)  # (for a raw psycopg connection or cursor)
            #: (the touch's parameters of a call that has none: its key NULL, ADR 0064)
            self._no_touch = (None,) * len(touch_types)

        def _insert_stored_events(self, curs: Any, stored_events: Sequence[StoredEvent], **_: Any) -> None:
            # The library's lock and insert, with the rows as four plain arrays and the
            # states sent binary: its array of composite values goes as text, each
            # state hex-encoded and escaped with regular expressions (~1 ms of CPU and
            # twice the bytes per 9-message append; ADR 0043).
            self._lock_table(curs)
            self._notify_channel(curs)
            binary_arrays_on(curs)
            curs.execute(self.plain_insert_statement, columns(stored_events, self.id_type, curs.connection.info.encoding),
                         prepare=True)

        def _lock_table(self, curs: Any) -> None:
            # Lock-free (ADR 0066): no events lock (readers tell a running writer by the
            # table's ROW EXCLUSIVE lock its INSERT holds, ``gaps.py``).
            if not self.lock_free:
                super()._lock_table(curs)

        def _insert_snapshots(self, curs: Any, snapshots: Sequence[StoredEvent]) -> None:
            # The library's snapshot insert sends its composite rows as text too: a
            # snapshot (~40 KB, one every ~11 appends) hex-encoded and escaped in Python
            # cost more client time than the events of those appends (ADR 0057).
            if self._snapshot_insert is None:
                self._snapshot_insert = self._insert_into(self.snapshot_recorder.events_table_name)
            binary_arrays_on(curs)
            curs.execute(self._snapshot_insert, columns(snapshots, self.id_type, curs.connection.info.encoding),
                         prepare=True)

        def _notify_channel(self, curs: Any) -> None:
            # NOTIFY only when asked (``postgres.notify``, ADR 0043). Nothing of ours
            # LISTENs: the read model is projected inline and followers are prompted in
            # process after a save. A notifying commit takes a database-wide lock shared
            # with every other notifying transaction: ~8 of 22 ms per append, one writer.
            if self.notify:
                super()._notify_channel(curs)

        def select_notifications(
            self,
            start: int | None,
            limit: int,
            stop: int | None = None,
            topics: Sequence[str] = (),
            *,
            inclusive_of_start: bool = True,
        ) -> Sequence[Notification]:
            # The library's read, minus its retry decorator (``without_inner_retries``),
            # and never past a hole a running writer may still fill (ADR 0066). On
            # every database, whatever this process's ordering: another process may
            # append lock-free (the mark is the database's); under the events lock
            # every hole is a rollback, and the rule passes it after one look.
            with self.datastore.get_connection() as conn:
                return select_in_order(conn, self.qualified_events, start, limit, stop, topics,
                                       inclusive_of_start=inclusive_of_start, holes_seen=self.holes_seen)

        def subscribe(self, gt: int | None = None, topics: Sequence[str] = ()) -> Any:
            if self.notify:
                return _PollingSubscription(recorder=self, gt=gt, topics=topics)
            raise NotImplementedError(
                "context-compaction's PostgreSQL store sends no NOTIFY unless the setting"
                " postgres.notify is on: turn it on for eventsourcing subscriptions, follow"
                " the events in process (an eventsourcing System) or poll read_events (ADR 0043)"
            )

        def insert_events(
            self, stored_events: Sequence[StoredEvent], **kwargs: Any
        ) -> Sequence[int] | None:
            # Like the base class, pipelined, minus its retry decorator: a retry after an
            # unacknowledged commit could append twice; the command loop reloads and
            # decides again instead. The projection runs inside the transaction, and
            # any error in it rolls the events back too.
            writer = kwargs.get("locked_writer")
            if writer is not None:
                return self._insert_on(writer.conn, writer.curs, stored_events, **kwargs)
            if not stored_events:
                return []
            with self.datastore.get_connection() as conn:
                if self.lock_free and not self._marked:
                    self._mark_lock_free(conn)
                elif not self._mark_checked:
                    self._follow_mark(conn)
                try:
                    return self._insert(conn, stored_events, **kwargs)
                except LockFreeDatabase:
                    # Marked by another process since this one looked (follow it), or
                    # lock-free with the position gone (rebuild first); the transaction
                    # rolled back, nothing was written.
                    if self.lock_free:
                        self._mark_lock_free(conn)
                    else:
                        self._follow_mark(conn)
                    return self._insert(conn, stored_events, **kwargs)

        def _insert(self, conn: Any, stored_events: Sequence[StoredEvent], **kwargs: Any) -> list[int]:
            events = kwargs.get("projected_events")
            if events is not None and self.projector.splits_at_ids(events):
                ids = self._insert_one_trip(conn, stored_events, events, kwargs.get("snapshots"))
                if ids is not None:
                    return ids
                if self.lock_free:
                    self._mark_lock_free(conn)  # (its function failed the mark's check)
            with conn.pipeline() as pipeline, conn.transaction(), conn.cursor() as curs:
                return self._insert_pipelined(conn, pipeline, curs, stored_events, **kwargs)

        def _follow_mark(self, conn: Any) -> bool:
            """A database another process marked lock-free is written lock-free by this
            one too, whatever its setting (ADR 0066): a writer under the events lock
            would find the position behind and replay what is projected already.
            Returns whether the read model's position is there too."""
            self._mark_checked = True
            with conn.cursor(row_factory=tuple_row) as cur:
                rows = dict(cur.execute(self._marks_sql).fetchall())
            if LOCK_FREE_MARK in rows:
                if not self.lock_free:
                    log.info("the database appends lock-free (postgres.ordering); this process follows it")
                self.lock_free = self._marked = True
            return POSITION in rows

        def _mark_lock_free(self, conn: Any) -> None:
            """Make sure the database is marked lock-free (ADR 0066). Marked already
            (one plain read): nothing to do. Otherwise under the events lock: no locked
            writer is inserting meanwhile, and one after it sees the mark and follows.
            The read model catches up first, so every event after its position is then
            one a lock-free writer projected inline."""
            if self._follow_mark(conn) and self._marked:
                return
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as raw:
                cur = Cur(raw, self.dialect)
                # (the sessions' rows before the events lock, the writers' order: a
                # replay under the lock updates rows that waiting writers hold)
                lock_sessions_first(cur)
                PostgresApplicationRecorder._lock_table(self, raw)
                marks = dict(cur.execute(MARKS_SQL).fetchall())
                newest = int(cur.execute(self.projector.events_table.max_id_sql).fetchone()[0] or 0)
                if LOCK_FREE_MARK not in marks:
                    position = int(marks.get(POSITION, 0))
                    if position < newest:
                        self.projector.replay(cur, after=position)
                    log.info("database marked lock-free", extra={"position": newest})
                elif POSITION not in marks:
                    # Marked, and the position gone (a schema upgrade): lock-free writers
                    # may have projected into the new tables since; rebuild from empty ones.
                    self.projector.rebuild(cur)
                    log.info("lock-free read model rebuilt", extra={"position": newest})
                cur.executemany(
                    "INSERT INTO {t}rm_position (name, notification_id) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                    [(POSITION, newest), (LOCK_FREE_MARK, newest)],
                )
            self._marked = True

        def _insert_one_trip(
            self, conn: Any, stored_events: Sequence[StoredEvent], events: Sequence[Any], snapshots: Any
        ) -> list[int] | None:
            # One round trip (ADR 0053): BEGIN, the projection's statements that need no
            # notification id and the due snapshots, then the events lock, the one
            # ordered statement and the COMMIT. The lock is held for the server's work
            # and the commit's flush only. None: the read model's position was not just
            # before these ids; the transaction rolled back, nothing was written.
            # BEGIN and COMMIT are plain statements (the connection is autocommit):
            # psycopg's ``transaction()`` inside a pipeline syncs when it starts and twice
            # when it ends, three more round trips, one of them with the lock held.
            import psycopg

            binary_arrays_on(conn)
            curs = conn.cursor(row_factory=tuple_row)
            in_function = self.lock_in_function or self.lock_free
            call = self.unlocked_call_statement if self.lock_free else self.ordered_call_statement
            alone = in_function and not (snapshots or self.pre_lock_statements or self.notify)
            touch = self.projector.touch_before_ids(events) if alone else None
            try:
                if touch is not None:
                    # The session row's update is all these events project before their
                    # ids: the function runs it, and the append is one statement, its
                    # own transaction on this autocommit connection (ADR 0064).
                    rows, touch_params = touch
                    params = self._ordered_params(stored_events, rows, conn.info.encoding)
                    curs.execute(call, (*params, *touch_params), prepare=True)
                    return [int(row[0]) for row in curs.fetchall()]
                with conn.pipeline() as pipeline:
                    conn.execute("BEGIN")
                    cur = PipelinedCur(conn.cursor(row_factory=tuple_row), self.dialect, pipeline)
                    # The sessions' rows first, always: an UPDATE that waits for a row a
                    # rebuild deletes and writes again finds nothing (its snapshot cannot
                    # see the new row) and, pipelined, nothing checks its count; a SELECT
                    # … FOR UPDATE that waits the same way lets the UPDATE after it, in a
                    # snapshot of its own, find the new row (second review of ADR 0066).
                    self._lock_sessions(cur, (s.originator_id for s in stored_events))
                    rows = self.projector.project_before_ids(cur, events)
                    if snapshots:
                        with conn.cursor() as snap:
                            self._insert_snapshots(snap, snapshots)
                    self._notify_channel(curs)
                    params = self._ordered_params(stored_events, rows, conn.info.encoding)
                    if in_function:
                        for statement in self.pre_lock_statements:
                            curs.execute(statement, prepare=True)
                        curs.execute(call, (*params, *self._no_touch), prepare=True)
                    else:
                        self._lock_table(curs)
                        curs.execute(self.ordered_insert_statement, params, prepare=True)
                    conn.execute("COMMIT")
                    # (the pipeline's exit sends it all with one Sync and waits for it)
                return [int(row[0]) for row in curs.fetchall()]
            except psycopg.errors.DivisionByZero:
                return None
            except (psycopg.errors.UndefinedFunction, psycopg.errors.InternalError_) as exc:
                # A database whose tables were made before ADR 0057 and not since: make
                # the function; this append takes the careful path, the next one not.
                # (Another process making it at the same moment is as good.) Dropped
                # between the call's parse and its execution, the server says "cache
                # lookup failed for function" (XX000) instead: the same case.
                if isinstance(exc, psycopg.errors.InternalError_) and not (
                    exc.diag.message_primary or ""
                ).startswith("cache lookup failed for function"):
                    raise
                conn.rollback()
                with suppress(psycopg.errors.DuplicateFunction, psycopg.errors.UniqueViolation):
                    with conn.transaction():
                        conn.execute(self.create_unlocked_function if self.lock_free else self.create_ordered_function)
                return None
            finally:
                # A failed statement makes the server skip the queued COMMIT; a refusal
                # raised here (a taken command id) leaves the transaction open.
                status = psycopg.pq.TransactionStatus
                if conn.info.transaction_status in (status.INTRANS, status.INERROR):
                    conn.rollback()

        def _lock_sessions(self, cur: Cur, originator_ids: Any) -> None:
            # The sessions' read-model rows before the events lock, on every write path
            # (``locked_writer`` too, ADR 0053): the projection writes rows keyed by its
            # sessions, before the lock on the one-trip path and after it otherwise, so
            # writers of one session must meet here first or they can deadlock.
            cur.execute(
                "SELECT 1 FROM {t}rm_sessions WHERE aggregate_id = ANY(?) ORDER BY aggregate_id FOR UPDATE",
                (sorted({_hex(o) for o in originator_ids}),),
            )

        def _ordered_params(
            self, stored_events: Sequence[StoredEvent], rows: list[tuple[Any, ...]], encoding: str
        ) -> tuple[Any, ...]:
            return (
                *columns(stored_events, self.id_type, encoding),
                text_array([r[0] for r in rows], encoding),
                int8_array([r[1] for r in rows]),
                id_array(self.id_type, [r[2] for r in rows], encoding),
                int8_array([r[3] for r in rows]),
                LOCK_FREE_MARK if self.lock_free else POSITION,
            )

        def _insert_pipelined(
            self, conn: Any, pipeline: Any, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
        ) -> list[int]:
            # Two round trips in all (ADR 0043): BEGIN, the table lock, the events, the
            # due snapshots and the read model's position, then one sync for the
            # notification ids; then the projection and the COMMIT, sent together when
            # the transaction ends. The lock is held for about one round trip and
            # the commit's flush, instead of one round trip per statement.
            self._lock_sessions(Cur(conn.cursor(), self.dialect), (s.originator_id for s in stored_events))
            self._insert_stored_events(curs, stored_events, **kwargs)
            snapshots = kwargs.get("snapshots")
            if snapshots:
                with conn.cursor() as snap:
                    self._insert_snapshots(snap, snapshots)
            events = kwargs.get("projected_events")
            cur = PipelinedCur(conn.cursor(row_factory=tuple_row), self.dialect, pipeline)
            if events is not None:
                # Lock-free: both rows must be there (the mark and the position, which
                # a schema upgrade drops), as the one-statement function checks.
                if self.lock_free:
                    cur.execute(MARKS_SQL)
                else:
                    cur.execute(POSITION_SQL, (POSITION,))
            pipeline.sync()  # (a version conflict raises here, as IntegrityError)
            ids = [row["notification_id"] for row in curs.fetchall()]
            if events is not None:
                if self.lock_free:
                    if len(cur.fetchall()) < 2:
                        raise LockFreeDatabase("the read model's position is gone: rebuild first")
                    self.projector.project_inline(cur, ids, events, unordered=True)
                else:
                    row = cur.fetchone()
                    self.projector.project_inline(cur, ids, events, position=int(row[0]) if row else None)
            return ids

        def _insert_on(
            self, conn: Any, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
        ) -> list[int]:
            # (inside ``locked_writer``: not pipelined, the contended path reads first)
            # The library's insert: the table lock (no NOTIFY: ``_notify_channel``), the
            # rows; then its way of reading back the notification ids.
            self._insert_stored_events(curs, stored_events, **kwargs)
            ids = [row["notification_id"] for row in curs.fetchall()]
            snapshots = kwargs.get("snapshots")
            if snapshots:
                self._insert_snapshots(curs, snapshots)
            events = kwargs.get("projected_events")
            if events is not None:
                cur = Cur(conn.cursor(row_factory=tuple_row), self.dialect)
                self.projector.project_inline(cur, ids, events, unordered=self.lock_free)
            return ids

        @contextmanager
        def locked_writer(self) -> Iterator[LockedWriter]:
            # The events table's EXCLUSIVE lock is the one every event insert takes
            # (eventsourcing orders notifications by it): taken by ``events_after`` (after
            # the session's row) and held to the end, no other writer can insert meanwhile.
            with self.datastore.get_connection() as conn, conn.transaction():
                with conn.cursor() as curs:
                    yield _PostgresLockedWriter(self, conn, curs)

    class _PollingSubscription(PostgresSubscription):
        """eventsourcing's LISTEN/NOTIFY subscription that also pulls every 0.1 s without
        a NOTIFY. Its read stops before a hole whose writer may still commit (ADR 0066);
        if that writer rolls back, nothing notifies, and the events above the hole would
        wait for some later append to be delivered."""

        def _listen(self) -> None:
            # (the library's loop, which already wakes every 0.1 s to check for a stop;
            # here each wake-up also pulls: one short read when nothing is new)
            try:
                with self._recorder.datastore.get_connection() as conn:
                    conn.execute(SQL("LISTEN {0}").format(Identifier(self._recorder.channel_name)))
                    while not self._has_been_stopped and not self._thread_error:
                        for _ in conn.notifies(timeout=0.1, stop_after=1):
                            pass
                        self._has_been_notified.set()
            except BaseException as exc:  # noqa: BLE001 - handed to the subscriber, as the library does
                if self._thread_error is None:
                    self._thread_error = exc
                self.stop()

    class _PostgresLockedWriter:
        def __init__(self, recorder: ProjectingPostgresRecorder, conn: Any, curs: Any) -> None:
            self.recorder = recorder
            self.conn = conn
            self.curs = curs

        def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]:
            # The session's read-model row first, then the events lock: a one-trip
            # append takes them in that order (its projection runs before the lock, ADR
            # 0053); this writer taking the lock first could deadlock with it.
            self.recorder._lock_sessions(Cur(self.curs, self.recorder.dialect), [originator_id])
            self.recorder._lock_table(self.curs)
            if not self.recorder.lock_free:
                # (under the events lock: no process can mark the database meanwhile)
                self.recorder._follow_mark(self.conn)
            self.curs.execute(
                self.recorder.select_events_statement
                + SQL(" AND originator_version > %s ORDER BY originator_version ASC"),
                (originator_id, version),
            )
            return [
                StoredEvent(originator_id, row["originator_version"], row["topic"], bytes(row["state"]))
                for row in self.curs.fetchall()
            ]

    return ProjectingPostgresRecorder


def _hex(originator_id: Any) -> str:
    return originator_id.hex if isinstance(originator_id, UUID) else str(originator_id)


def without_redundant_lock_timeout(statements: list[Any], datastore: Any) -> list[Any]:
    """The library's lock statements minus ``SET LOCAL lock_timeout`` when every pooled
    connection already has that timeout from connect (``-c lock_timeout``, set by
    ``SessionsApplication.construct_recorder``): one round trip fewer per insert
    (ADR 0030, R1). Anything unexpected keeps the statements as they are.

    NOTIFY is dropped by the recorder itself (``_notify_channel``, ADR 0043).
    """
    timeout = getattr(datastore, "lock_timeout", 0)
    options = str(getattr(getattr(datastore, "pool", None), "kwargs", {}).get("options", ""))
    if not timeout or f"-c lock_timeout={int(timeout)}s" not in options:
        return statements
    return [statement for statement in statements if "lock_timeout" not in repr(statement)]


def without_inner_retries(recorder: Any) -> None:
    """eventsourcing retries each PostgreSQL query ten times on an ``OperationalError``,
    a lock wait that timed out among them; inside our own retries (loading a session,
    the command loop) that made fifty lock waits of one command. The recorder's reads
    are used undecorated: the callers' loops decide how often to try again."""
    for name in ("select_events", "select_notifications", "max_notification_id"):
        inner = getattr(getattr(type(recorder), name, None), "__wrapped__", None)
        if inner is not None:
            setattr(recorder, name, MethodType(inner, recorder))
