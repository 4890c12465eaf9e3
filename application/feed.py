"""The event feed: the stored events of every session, in notification order (issue 15).

Audit and analytics services follow the log without touching our tables. A reader
keeps the last ``position`` it processed and asks for what comes ``after`` it: the
positions are the event store's notification ids, so a follower that stops and
resumes sees every event once, in order.
"""

from __future__ import annotations

from typing import Any, Protocol

from context_compaction.domain.errors import InvalidCommand

from .commands import ReadEvents, ReadSessionEvents
from .queries import session_row
from .results import EventsResult, FeedEvent, SessionEvent, SessionEventsResult
from .services import Services


class EventFeed(Protocol):
    def read(self, after: int, limit: int, max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` events with a position above ``after`` whose stored bytes
        stay within ``max_bytes`` (at least one), each as ``{position, session_id,
        version, type, at, payload}`` (JSON-ready); and whether it stopped at a bound."""
        ...

    def read_session(self, session_id: str, from_version: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` events of one session from ``from_version`` on, each as
        ``{version, type, at, payload}`` (JSON-ready)."""
        ...


def read_events(command: ReadEvents, services: Services) -> EventsResult:
    feed = services.feed
    if feed is None:
        raise InvalidCommand("this bus has no event feed")
    events, more = feed.read(command.after, command.limit, command.max_bytes)
    link = getattr(services.read_model, "link", None)  # (issue 42: each entry names its parent)
    if link is not None:
        for e in events:
            parent = link(e["session_id"]) if e.get("session_id") else None
            e["parent_session_id"] = parent.parent_session_id if parent is not None else None
    return EventsResult(events=[FeedEvent.model_validate(e) for e in events], more=more)


def read_session_events(command: ReadSessionEvents, services: Services) -> SessionEventsResult:
    row = session_row(services, command.session_id)
    feed = services.feed
    if feed is None:
        raise InvalidCommand("this bus has no event feed")
    events = feed.read_session(command.session_id, command.from_version, command.limit)
    return SessionEventsResult(
        session_id=command.session_id, version=row.version,
        events=[SessionEvent.model_validate(e) for e in events],
    )
