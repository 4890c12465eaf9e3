"""The token-count cache and the Timeline of the memory backend (their SQL twins:
``readmodel/tokencache.py`` and ``timeline.py``)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from eventsourcing.persistence import Mapper

from context_compaction.application.contracts.ports import TimelineStore
from context_compaction.application.contracts.views import TimelineEntry
from context_compaction.domain.errors import CorruptEvent
from context_compaction.domain.session import Session
from context_compaction.domain.summary import storable_text

from ..timeline import CHECKPOINT_TOPIC, timeline_key
from .recorder import ProjectingMemoryRecorder

log = logging.getLogger("context_compaction.timeline")


class MemoryTokenCountCache:
    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], dict[int, int]] = {}
        self._lock = threading.Lock()

    def token_counts(self, session_id: str, key: str, from_seq: int) -> dict[int, int]:
        with self._lock:
            counts = self._counts.get((session_id, key), {})
            return {seq: n for seq, n in counts.items() if seq >= from_seq}

    def store_token_counts(self, session_id: str, key: str, counts: dict[int, int]) -> None:
        with self._lock:
            held = self._counts.setdefault((session_id, key), {})
            for seq, n in counts.items():
                held.setdefault(seq, n)  # (the first count stays, as ON CONFLICT DO NOTHING)


class MemoryTimelineStore:
    def __init__(self) -> None:
        self._entries: dict[str, TimelineEntry] = {}
        self._lock = threading.Lock()

    def put(self, entry: TimelineEntry) -> None:
        with self._lock:
            self._entries.setdefault(entry.key, entry)

    def entries(self, session_id: str, query: str | None = None, limit: int = 20) -> list[TimelineEntry]:
        needle = query.lower() if query else None
        with self._lock:
            found = [e for e in self._entries.values()
                     if e.session_id == session_id and (needle is None or needle in e.content.lower())]
        found.sort(key=lambda e: e.key)
        found.sort(key=lambda e: e.created_at, reverse=True)
        return found[:limit]


class MemoryTimelineFollower:
    """Writes Timeline entries for committed checkpoints it has not seen yet, reading
    the notification log (``TimelineFollower``'s job, without a database)."""

    def __init__(self, recorder: ProjectingMemoryRecorder, mapper: Mapper[Any], store: TimelineStore) -> None:
        self.recorder = recorder
        self.mapper = mapper
        self.store = store
        self.position = 0

    def catch_up(self) -> int:
        written = 0
        while True:
            notifications = self.recorder.select_notifications(
                start=self.position, limit=100, topics=[CHECKPOINT_TOPIC], inclusive_of_start=False
            )
            if not notifications:
                return written
            for notification in notifications:
                try:
                    event = self.mapper.to_domain_event(notification)
                except CorruptEvent as exc:
                    log.warning("timeline skipped a damaged event", extra=dict(exc.details))
                    event = None
                if isinstance(event, Session.CheckpointCommitted) and not event.degraded:
                    hexed = notification.originator_id.hex
                    session_id = self.recorder.projector.session_of(hexed) or hexed
                    self.store.put(TimelineEntry(
                        key=timeline_key(event.checkpoint_id),
                        session_id=session_id,
                        checkpoint_id=event.checkpoint_id,
                        content=storable_text(event.summary),
                        created_at=event.created_at,
                    ))
                    written += 1
                self.position = notification.id


class MemoryTurnLeases:
    """The turn lease (ADR 0041) of the memory backend: one process owns the store, so a
    dict under a lock is the whole database; expiry on the monotonic clock."""

    def __init__(self) -> None:
        self._leases: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, session_id: str, owner: str, seconds: float) -> bool:
        with self._lock:
            held = self._leases.get(session_id)
            if held is not None and held[0] != owner and held[1] > time.monotonic():
                return False
            self._leases[session_id] = (owner, time.monotonic() + seconds)
            return True

    def renew(self, session_id: str, owner: str, seconds: float) -> bool:
        with self._lock:
            held = self._leases.get(session_id)
            if held is None or held[0] != owner:
                return False
            self._leases[session_id] = (owner, time.monotonic() + seconds)
            return True

    def release(self, session_id: str, owner: str) -> None:
        with self._lock:
            held = self._leases.get(session_id)
            if held is not None and held[0] == owner:
                del self._leases[session_id]

    def holder(self, session_id: str) -> str | None:
        with self._lock:
            held = self._leases.get(session_id)
            return held[0] if held is not None and held[1] > time.monotonic() else None
