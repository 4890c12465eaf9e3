"""``build_memory_store``: the memory backend's event store, read model and storage.

``memory://`` is a new empty store per ``bootstrap``; ``memory://NAME`` is shared by
every bus of this process that names it while one of them is alive (a test's
"restart" and its second process are a new bus on the same name).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any
from uuid import UUID

from eventsourcing.persistence import EventStore

from ..database import Dialect
from ..eventstore import SessionsApplication, SqlEventStore
from .readmodel import MemoryReadModel
from .recorder import ProjectingMemoryRecorder
from .stores import MemoryTimelineStore, MemoryTokenCountCache, MemoryTurnLeases

PREFIX = "memory://"


class MemoryStorage:
    """What outlives one bus: the events (with their snapshots), the read-model tables,
    the token counts, the Timeline and the turn leases (a second bus on the store is
    another "process": it must see the running turn, ADR 0041)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.recorder = ProjectingMemoryRecorder()
        self.token_cache = MemoryTokenCountCache()
        self.timeline = MemoryTimelineStore()
        self.leases = MemoryTurnLeases()


_NAMED: weakref.WeakValueDictionary[str, MemoryStorage] = weakref.WeakValueDictionary()
_NAMED_GUARD = threading.Lock()


def memory_storage(url: str) -> MemoryStorage:
    name = url[len(PREFIX):]
    if not name:
        return MemoryStorage("")
    with _NAMED_GUARD:
        storage = _NAMED.get(name)
        if storage is None:
            storage = _NAMED[name] = MemoryStorage(name)
        return storage


class MemorySessionsApplication(SessionsApplication):
    """``SessionsApplication`` on eventsourcing's in-memory persistence, its recorder
    and snapshot recorder those of a ``MemoryStorage``."""

    def __init__(self, storage: MemoryStorage, *, snapshot_interval: int) -> None:
        self.storage = storage
        env = {"PERSISTENCE_MODULE": "eventsourcing.popo"}
        if snapshot_interval:
            env["IS_SNAPSHOTTING_ENABLED"] = "y"
        super().__init__(env, snapshot_interval=snapshot_interval, dialect=Dialect("memory"))

    def construct_recorder(self) -> Any:
        # (``projector`` is the one ``SessionsApplication`` hands the mapper to)
        self.projector = self.storage.recorder.projector  # type: ignore[assignment]
        return self.storage.recorder

    def construct_snapshot_store(self) -> EventStore[UUID]:
        return EventStore(mapper=self.mapper, recorder=self.storage.recorder.snapshot_recorder)


class _NoDatabase:
    """``SqlEventStore`` asks its database to recover after a transient driver error;
    memory has neither."""

    def recover(self) -> None:
        return None


def build_memory_store(
    url: str, *, snapshot_interval: int
) -> tuple[MemorySessionsApplication, SqlEventStore, MemoryReadModel, MemoryStorage]:
    storage = memory_storage(url)
    app = MemorySessionsApplication(storage, snapshot_interval=snapshot_interval)
    events = SqlEventStore(app, _NoDatabase())  # type: ignore[arg-type]
    return app, events, MemoryReadModel(storage.recorder, app.mapper), storage
