"""The eventsourcing ``Application`` of Session aggregates.

``save`` hands the recorder what it writes in the events' transaction through
``save(**kwargs)``, as eventsourcing's own examples do: the domain events for the
read-model projector (ADR 0003) and the snapshots that are due (ADR 0016).
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import Mapper, Recording, StoredEvent, Transcoder
from eventsourcing.utils import Environment

from context_compaction.domain.session import Session

from ..database import Dialect, storage_errors
from ..readmodel import EventsTable, ReadModelProjector
from ..transcoding import PlainJSONTranscoder
from .internals import ProjectingSQLiteRecorder, postgres_recorder_class, without_inner_retries
from .mapper import EventMapper

log = logging.getLogger("context_compaction.eventstore")

#: Sessions held in memory by the repository's cache (brought up to date on use).
AGGREGATE_CACHE_SIZE = 256


#: Tool groups a snapshot holds before the step between snapshots doubles (ADR 0061).
GROUPS_PER_STEP = 256
#: The most the step grows: a cold load replays at most this many intervals.
MAX_STEP_FACTOR = 16


def snapshot_step(interval: int, live_groups: int) -> int:
    """Events between snapshots: ``interval``, doubled each time the tool groups the
    snapshot holds double past ``GROUPS_PER_STEP``, up to ``MAX_STEP_FACTOR`` times: a
    never-compacted session's snapshot grows with N, and keyed by what it holds the
    snapshot bytes per event stay bounded (ADR 0061)."""
    factor = 1
    while factor < MAX_STEP_FACTOR and live_groups >= 2 * factor * GROUPS_PER_STEP:
        factor *= 2
    return interval * factor


class SessionsApplication(Application[UUID]):
    """Sessions as event-sourced aggregates; a snapshot every ``snapshot_interval``
    events, sparser while a snapshot would hold many tool groups (``snapshot_step``)."""

    name = "ContextCompaction"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # PostgreSQL's table names derive from the name (contextcompaction_events, ...):
        # a subclass (a Leader, say) keeps the stored data's.
        cls.name = SessionsApplication.name

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
        self.snapshot_interval = snapshot_interval
        # The repository's cache holds each session as last saved, no copy per load
        # (the store evicts an unsaved decision), fast-forwarded when asked.
        super().__init__(env={
            "AGGREGATE_CACHE_MAXSIZE": str(AGGREGATE_CACHE_SIZE),
            "AGGREGATE_CACHE_FASTFORWARD": "y",
            "DEEPCOPY_FROM_AGGREGATE_CACHE": "n",
            **env,
        })
        assert self.projector is not None
        self.projector.mapper = self.mapper
        if self.snapshots is not None:
            self.recorder.snapshot_recorder = self.snapshots.recorder  # type: ignore[attr-defined]
        if dialect.is_postgres:
            for recorder in (self.recorder, getattr(self.snapshots, "recorder", None)):
                without_inner_retries(recorder)

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
            # Every pooled connection waits for a lock no longer than the library's
            # inserts do (else a table locked elsewhere blocks a read indefinitely);
            # libpq sets it at connect, so before the recorder opens the pool.
            datastore.pool.kwargs["options"] = f"-c lock_timeout={int(datastore.lock_timeout)}s"
        table = f"{self.name.lower()}_events"
        self.projector = ReadModelProjector(EventsTable("postgres", table, self._postgres_schema))
        recorder = postgres_recorder_class()(
            datastore, self.projector, self._dialect, events_table_name=table
        )
        # The composite types' adapters, which writes use, for a database whose tables
        # exist (``build_store`` creates them otherwise, which registers them too).
        with storage_errors():
            datastore.register_type_adapters()
        return recorder

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """The library's save, handing the recorder the sessions' domain events (for the
        read model) and any snapshot that is due, written in the events' transaction."""
        return super().save(*objs, **self.write_kwargs(objs), **kwargs)

    def write_kwargs(self, objs: tuple[Any, ...]) -> dict[str, Any]:
        """What the recorder writes beside ``objs``' pending events (``save(**kwargs)``)."""
        events = [e for obj in objs for e in obj.pending_events]
        return {"projected_events": events, "snapshots": self._due_snapshots(objs)}

    def _due_snapshots(self, sessions: tuple[Any, ...]) -> list[StoredEvent]:
        # Taken from the state we hold when this save crosses a step boundary. A snapshot
        # that cannot be made only costs load time later: it must not fail the command.
        interval = self.snapshot_interval
        if not interval or self.snapshots is None:
            return []
        due = []
        try:
            for session in sessions:
                if not isinstance(session, Session):
                    continue  # (a compaction attempt log: a short log, no snapshots)
                first = session.version - len(session.pending_events)
                step = snapshot_step(interval, len(session.tool_groups))
                if session.version // step > first // step:
                    due.append(self.mapper.to_stored_event(Session.Snapshot.take(session)))
        except Exception as exc:  # noqa: BLE001
            log.warning("snapshot failed", extra={"error_class": type(exc).__name__})
            return []
        return due
