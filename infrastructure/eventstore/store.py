"""``SqlEventStore``: the application's EventStore port over ``SessionsApplication``."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from context_compaction.application.contracts.ports import ConcurrencyConflict
from context_compaction.domain.errors import (
    ContextCompactionError,
    CorruptEvent,
    SessionNotFound,
    StorageError,
)
from context_compaction.domain.session import Session, session_aggregate_id

from ..database import Database, StorageBusy, is_transient, storage_cause, storage_errors, storage_failure
from ..transcoding import naming_session

from .application import SessionsApplication
from .internals import announce

log = logging.getLogger("context_compaction.eventstore")

T = TypeVar("T")

_aggregate_id = functools.lru_cache(maxsize=4096)(session_aggregate_id)


def evict(cache: Any, aggregate_id: UUID) -> None:
    """Drop the repository cache's copy of an aggregate, if it holds one."""
    try:
        cache.get(aggregate_id, evict=True)
    except KeyError:
        pass


def replay(aggregate: Any, events: Iterable[Any]) -> Any:
    """eventsourcing's ``project_aggregate`` without its per-event runtime Protocol
    assertion (~20 µs an event on Python 3.11): our events are our own classes."""
    for event in events:
        aggregate = event.mutate(aggregate)
    return aggregate


class SqlEventStore:
    """The application's EventStore port. Recently used sessions stay in the library's
    repository cache, fast-forwarded with the events stored since (other processes may
    have written), not decoded again from a snapshot per command. Callers that mutate
    hold the session's lock (``services.mutate``); a failed save evicts the entry, so a
    half-applied decision is never reused."""

    def __init__(self, app: SessionsApplication, db: Database) -> None:
        self.app = app
        self.db = db
        cache = app.repository.cache
        assert cache is not None and not app.repository.deepcopy_from_cache
        self.cache = cache

    def load(self, session_id: str, version: int | None = None, *, allow_stale: bool = False) -> Session:
        aggregate_id = _aggregate_id(session_id)
        if version is None:
            held = self._held(aggregate_id)
            if held is not None and allow_stale:
                return held  # no read: a stale copy makes the save conflict
        for attempt in range(5):
            try:
                with storage_errors():
                    session = self.app.repository.get(aggregate_id, version=version, projector_func=replay)
                break
            except AggregateNotFoundError:
                raise SessionNotFound(f"session {session_id!r} does not exist") from None
            except CorruptEvent as exc:
                evict(self.cache, aggregate_id)  # (a fastforward may have applied part of it)
                session = self._from_events(session_id, aggregate_id, version, exc)
                if version is None:
                    self.cache.put(aggregate_id, session)
                break
            except StorageBusy as exc:
                evict(self.cache, aggregate_id)
                if attempt == 4:
                    raise StorageError(
                        f"the database stayed busy while loading: {exc.details.get('cause')}",
                        details=exc.details,
                    ) from None
                self.db.recover()
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        assert isinstance(session, Session)
        return session

    def _held(self, aggregate_id: UUID) -> Session | None:
        try:
            session: Session = self.cache.get(aggregate_id)
        except KeyError:
            return None
        if session.pending_events:  # a decision that was never saved: not trustworthy
            evict(self.cache, aggregate_id)
            return None
        return session

    def _from_events(
        self, session_id: str, aggregate_id: UUID, version: int | None, damaged: CorruptEvent
    ) -> Session:
        """The session rebuilt from its events alone, when ``damaged`` may be its snapshot:
        a snapshot is a cache of the events, so a damaged one costs a full replay, not the
        session (ADR 0022). A damaged event is raised as such."""
        if self.app.snapshots is None:
            raise naming_session(damaged, session_id) from None
        session = self._replayed(session_id, aggregate_id, version)
        log.warning(
            "damaged snapshot skipped, the session was replayed from its events",
            extra={"session_id": session_id, "version": damaged.details.get("version"),
                   "problem": damaged.details.get("problem")},
        )
        return session

    def _replayed(self, session_id: str, aggregate_id: UUID, version: int | None = None) -> Session:
        """The session at ``version`` (None: the newest) replayed from its first event."""
        try:
            with storage_errors():
                session = replay(None, self.app.events.get(aggregate_id, lte=version))
        except CorruptEvent as exc:
            raise naming_session(exc, session_id) from None
        if session is None:
            raise SessionNotFound(f"session {session_id!r} does not exist")
        return session  # type: ignore[no-any-return]

    def load_complete(self, session_id: str) -> Session:
        """The session replayed from its first event, without its snapshot, which does
        not keep closed tool groups (ADR 0051); it becomes the held copy."""
        aggregate_id = _aggregate_id(session_id)
        evict(self.cache, aggregate_id)
        session = self._replayed(session_id, aggregate_id)
        self.cache.put(aggregate_id, session)
        return session

    def load_complete_at(self, session_id: str, version: int) -> Session:
        """The session at ``version`` replayed from its first event (a fork needs the
        closed tool groups a snapshot does not keep, issue 42); not the held copy."""
        return self._replayed(session_id, _aggregate_id(session_id), version)

    def is_current(self, session: Session) -> bool:
        """Has nothing been stored for this session after ``session.version``?"""
        try:
            with storage_errors():
                newer = self.app.recorder.select_events(session.id, gt=session.version, limit=1)
        except (StorageBusy, StorageError):
            return False
        return not newer

    def save(self, session: Session) -> None:
        try:
            self.app.save(session)
        except Exception as exc:
            evict(self.cache, session.id)
            failure = self._write_failure(exc)
            if failure is exc:
                raise
            raise failure from exc
        self.cache.put(session.id, session)

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
                recordings = []
                if saved:
                    written = self.app.write_kwargs((session,))
                    recordings = self.app.events.put(session.collect_events(), locked_writer=writer, **written)
        except CorruptEvent as exc:
            evict(self.cache, session.id)
            raise naming_session(exc, session_id) from None
        except ContextCompactionError as exc:
            if not isinstance(exc, StorageError) and not session.pending_events:
                raise  # decide's refusal: the copy it saw is current and unchanged
            evict(self.cache, session.id)
            if isinstance(exc, StorageBusy):
                raise self._write_failure(exc) from exc
            raise
        except Exception as exc:
            evict(self.cache, session.id)
            failure = self._write_failure(exc, exclusive=True)
            if failure is exc:
                raise
            raise failure from exc
        self.cache.put(session.id, session)
        try:  # (committed: a follower that fails reads them from the log later)
            announce(self.app, recordings)
        except Exception as exc:  # noqa: BLE001
            log.warning("a follower of the event feed failed", extra={"error_class": type(exc).__name__})
        return result, session, saved

    def _write_failure(self, exc: Exception, *, exclusive: bool = False) -> Exception:
        """What a failed write means to the command loop (``exc`` itself: a bug)."""
        if isinstance(exc, IntegrityError):
            # Optimistic: another writer appended this version first. Under the writer
            # lock no other writer can have: a constraint refused the rows (ADR 0021).
            return ConcurrencyConflict(storage_cause(exc) if exclusive else str(exc), under_lock=exclusive)
        if is_transient(exc):
            self.db.recover()
            return ConcurrencyConflict(storage_cause(exc), busy=True)
        return storage_failure(exc) or exc
