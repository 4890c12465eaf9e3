"""Looking back at what happened: compaction attempts, resummarizing a past checkpoint,
costs, and the stored events (the feed and one session's)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StringConstraints

from .. import results as r
from .. import results_costs as rc
from .base import Command, ModelName, NonNegativeInt, NoNul, Seq, SessionId, handled_by


@handled_by("compacting.attemptlog", "list_compaction_attempts", reads=True)
class ListCompactionAttempts(Command[r.CompactionAttemptsResult]):
    """Every compaction attempt of a session, newest first (issue 16)."""

    type: Literal["list_compaction_attempts"] = "list_compaction_attempts"
    session_id: SessionId
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    #: An audit read of a deleted session (else ``session_deleted``: a ledger's dropped
    #: items quote its messages, ADR 0072).
    include_deleted: StrictBool = False


@handled_by("compacting.resummarize", "resummarize")
class Resummarize(Command[r.ResummarizeResult]):
    """Summarize a past checkpoint's exact source again; commits nothing (issue 16)."""

    type: Literal["resummarize"] = "resummarize"
    session_id: SessionId
    checkpoint_id: Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
    summarizer: Annotated[str, StringConstraints(min_length=1, max_length=64), NoNul] | None = None
    model: ModelName | None = None


@handled_by("history.costs", "get_session_cost")
class GetSessionCost(Command[rc.SessionCostResult]):
    """Recorded usages and summary calls priced, per model; compactions' balance (issue 43)."""

    type: Literal["get_session_cost"] = "get_session_cost"
    session_id: SessionId


@handled_by("history.feed", "read_events", reads=True)
class ReadEvents(Command[r.EventsResult]):
    """The event feed: stored events after a position, in order (issue 15)."""

    type: Literal["read_events"] = "read_events"
    after: NonNegativeInt = 0
    limit: Annotated[StrictInt, Field(ge=1, le=1000)] = 100
    #: The page's stored bytes (issue 36, ADR 0071): a page stops at ``limit`` events
    #: or this many bytes, whichever comes first, and holds at least one event.
    max_bytes: Annotated[StrictInt, Field(ge=1, le=256 * 1024 * 1024)] = 8 * 1024 * 1024


@handled_by("history.feed", "read_session_events")
class ReadSessionEvents(Command[r.SessionEventsResult]):
    """One session's own events in version order (issue 41): from ``from_version``
    (inclusive), at most ``limit``. Versions are contiguous from 1, so a reader pages by
    arithmetic; the compaction attempts are ``list_compaction_attempts``."""

    type: Literal["read_session_events"] = "read_session_events"
    session_id: SessionId
    from_version: Seq = 1
    limit: Annotated[StrictInt, Field(ge=1, le=1000)] = 100
