"""The event feed: the stored events of every session, in notification order (issue 15).

Audit and analytics services follow the log without touching our tables. A reader
keeps the last ``position`` it processed and asks for what comes ``after`` it: the
positions are the event store's notification ids, so a follower that stops and
resumes sees every event once, in order.
"""

from __future__ import annotations

from context_compaction.domain.errors import InvalidCommand

from ..contracts.commands import ReadEvents, ReadSessionEvents
from .queries import session_row
from ..contracts.results import EventsResult, FeedEvent, SessionEvent, SessionEventsResult
from ..contracts.ports import EventFeed  # noqa: F401 (its home before issue 38)
from ..runtime.services import Services


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
