"""``SqlEventFeed``: the application's notification log, decoded for other services.

Positions are eventsourcing's notification ids (ADR 0036). Each event is decoded by
our ``EventMapper`` (a row no event class of ours can be is ``corrupt_event``); its
``session_id`` comes from the first event of its aggregate — ``Session.Started`` and
``CompactionAttempts.Created`` both carry it — looked up once per aggregate, so a
page that starts after those events still names the session of every event.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from context_compaction.domain.session import session_aggregate_id

from ..database import storage_errors
from .application import SessionsApplication

#: Stored by eventsourcing beside every event; the feed gives them their own keys.
_ENVELOPE_FIELDS = frozenset({"originator_id", "originator_version", "timestamp"})


class SqlEventFeed:
    def __init__(self, app: SessionsApplication) -> None:
        self.app = app
        self._sessions: dict[UUID, str | None] = {}

    def read(self, after: int, limit: int) -> list[dict[str, Any]]:
        with storage_errors():
            notifications = self.app.recorder.select_notifications(
                start=after, limit=limit, inclusive_of_start=False
            )
            return [self._entry(n) for n in notifications]

    def read_session(self, session_id: str, from_version: int, limit: int) -> list[dict[str, Any]]:
        """One session's events by version: the aggregate's own rows, read by its id and
        version range (an index lookup however long the log is, issue 41)."""
        with storage_errors():
            stored = self.app.recorder.select_events(
                session_aggregate_id(session_id), gt=from_version - 1, limit=limit
            )
            out = []
            for item in stored:
                event = self.app.mapper.to_domain_event(item)
                state = vars(event)
                at = state.get("timestamp")
                out.append({
                    "version": item.originator_version,
                    "type": type(event).__name__,
                    "at": at.astimezone(UTC).isoformat() if isinstance(at, datetime) else None,
                    "payload": {k: v for k, v in state.items() if k not in _ENVELOPE_FIELDS},
                })
            return out

    def _entry(self, notification: Any) -> dict[str, Any]:
        event = self.app.mapper.to_domain_event(notification)
        state = vars(event)
        at = state.get("timestamp")
        payload = {k: v for k, v in state.items() if k not in _ENVELOPE_FIELDS}
        session_id = payload.get("session_id")
        if not isinstance(session_id, str):
            session_id = self._session_of(notification.originator_id)
        return {
            "position": notification.id,
            "session_id": session_id,
            "version": notification.originator_version,
            "type": type(event).__name__,
            "at": at.astimezone(UTC).isoformat() if isinstance(at, datetime) else None,
            "payload": payload,
        }

    def _session_of(self, originator_id: UUID) -> str | None:
        if originator_id not in self._sessions:
            first = self.app.recorder.select_events(originator_id, lte=1, limit=1)
            name = None
            if first:
                name = getattr(self.app.mapper.to_domain_event(first[0]), "session_id", None)
            self._sessions[originator_id] = name if isinstance(name, str) else None
        return self._sessions[originator_id]
