"""``SqlEventFeed``: the application's notification log, decoded for other services.

Positions are eventsourcing's notification ids (ADR 0036). An event's ``session_id``
comes from the first event of its aggregate (``Session.Started`` and
``CompactionAttempts.Created`` carry it), looked up once per aggregate.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from context_compaction.domain.session import session_aggregate_id

from ..database import storage_errors
from .application import SessionsApplication

#: Notifications fetched at once: the first chunk (its sizes are unknown), and at most.
#: A later chunk is sized from the bytes left and the average event's so far, at most
#: twice the one before, so large events after small ones overshoot by a few.
_FIRST_CHUNK = 1
_MAX_CHUNK = 256

#: Stored by eventsourcing beside every event; the feed gives them their own keys.
_ENVELOPE_FIELDS = frozenset({"originator_id", "originator_version", "timestamp"})


class SqlEventFeed:
    def __init__(self, app: SessionsApplication) -> None:
        self.app = app
        self._sessions: dict[UUID, str | None] = {}

    def read(self, after: int, limit: int, max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
        """Reads the notifications in chunks sized from the bytes seen so far, so that a
        page of large events never holds many more than ``max_bytes`` (issue 36: 61
        events of 3.9 MB made a 223 MB page, a full one would have been ~3.7 GB)."""
        page: list[dict[str, Any]] = []
        used = 0
        chunk = min(limit, _FIRST_CHUNK)
        with storage_errors():
            while len(page) < limit:
                notifications = self.app.recorder.select_notifications(
                    start=after, limit=chunk, inclusive_of_start=False
                )
                for n in notifications:
                    size = len(n.state)
                    if page and used + size > max_bytes:
                        return page, True
                    page.append(self._entry(n))
                    used += size
                    after = n.id
                if len(notifications) < chunk:
                    return page, False
                average = max(1, used // len(page))
                chunk = max(1, min(limit - len(page), (max_bytes - used) // average, 2 * chunk, _MAX_CHUNK))
        return page, True

    def read_session(self, session_id: str, from_version: int, limit: int) -> list[dict[str, Any]]:
        """One session's events by version: the aggregate's own rows, read by its id and
        version range (an index lookup however long the log is, issue 41)."""
        with storage_errors():
            stored = self.app.recorder.select_events(
                session_aggregate_id(session_id), gt=from_version - 1, limit=limit
            )
            return [self._described(item) for item in stored]

    def _described(self, stored: Any) -> dict[str, Any]:
        event = self.app.mapper.to_domain_event(stored)
        state = vars(event)
        at = state.get("timestamp")
        return {
            "version": stored.originator_version,
            "type": type(event).__name__,
            "at": at.astimezone(UTC).isoformat() if isinstance(at, datetime) else None,
            "payload": {k: v for k, v in state.items() if k not in _ENVELOPE_FIELDS},
        }

    def _entry(self, notification: Any) -> dict[str, Any]:
        entry = self._described(notification)
        session_id = entry["payload"].get("session_id")
        if not isinstance(session_id, str):
            session_id = self._session_of(notification.originator_id)
        return {"position": notification.id, "session_id": session_id, **entry}

    def _session_of(self, originator_id: UUID) -> str | None:
        if originator_id not in self._sessions:
            first = self.app.recorder.select_events(originator_id, lte=1, limit=1)
            name = None
            if first:
                name = getattr(self.app.mapper.to_domain_event(first[0]), "session_id", None)
            self._sessions[originator_id] = name if isinstance(name, str) else None
        return self._sessions[originator_id]
