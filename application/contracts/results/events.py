"""Results of reading stored events: the feed and one session's events."""

from __future__ import annotations

from typing import Any

from .base import Result


class EventsResult(Result):
    """``read_events``: ``events[]`` {position, session_id, version, type, at, payload}."""

    events: list[FeedEvent]
    more: bool = False
    """The page stopped at ``limit`` or ``max_bytes``: ask again from its last position
    without waiting (False: the feed was read to its end)."""


class FeedEvent(Result):
    """One stored event of the feed (``read_events``, ADR 0036)."""

    position: int
    """The event store's notification id: ascending, never reused."""
    session_id: str
    version: int
    type: str
    """The event class name (``MessageAppended``, ``CheckpointCommitted``, ...)."""
    at: str
    """ISO-8601 UTC."""
    payload: dict[str, Any]
    """The event's own fields."""
    parent_session_id: str | None = None
    """The session's parent in the tree (issue 42); null: a root."""


class SessionEvent(Result):
    """One stored event of a session (``read_session_events``, issue 41)."""

    version: int
    type: str
    """The event class name (``MessageAppended``, ``CheckpointCommitted``, ...)."""
    at: str | None
    """ISO-8601 UTC."""
    payload: dict[str, Any]
    """The event's own fields."""


class SessionEventsResult(Result):
    """``read_session_events``: the session's events in version order."""

    session_id: str
    version: int
    """The session's version now (its last event's)."""
    events: list[SessionEvent]
