"""Queries of a session's history (messages, search, projection, replay, checkpoints,
sessions) and the session tree's commands (fork, complete a sub-agent)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StringConstraints, model_validator

from .. import results as r
from .base import (Command, CommandId, ModelName, NonNegativeInt, NoNul,
                   PositiveInt, Seq, SessionId, handled_by)


@handled_by("history.queries", "get_history", reads=True)
class GetHistory(Command[r.HistoryResult]):
    """The raw log; ``from_seq``/``to_seq`` bound it (inclusive), pages ascend from
    ``from_seq`` and ``limit`` cuts the end (expand a compacted range, issue 16)."""

    type: Literal["get_history"] = "get_history"
    session_id: SessionId
    include_invalidated: StrictBool = False
    #: An audit read of a deleted session (else ``session_deleted``, ADR 0072).
    include_deleted: StrictBool = False
    from_seq: Seq | None = None
    to_seq: Seq | None = None
    limit: PositiveInt | None = None

    @model_validator(mode="after")
    def _range(self) -> GetHistory:
        if self.from_seq is not None and self.to_seq is not None and self.from_seq > self.to_seq:
            raise ValueError("from_seq must be <= to_seq")
        return self


@handled_by("history.queries", "search_history", reads=True)
class SearchHistory(Command[r.SearchResult]):
    """Full-text search over the session's raw history (issue 16): every term of
    ``query`` must occur; invalidated messages only with ``include_invalidated``."""

    type: Literal["search_history"] = "search_history"
    session_id: SessionId
    query: Annotated[str, StringConstraints(min_length=1, max_length=1_000), NoNul]
    limit: Annotated[StrictInt, Field(gt=0, le=1_000)] = 20
    include_invalidated: StrictBool = False


@handled_by("history.queries", "get_projection", reads=True)
class GetProjection(Command[r.ProjectionResult]):
    type: Literal["get_projection"] = "get_projection"
    session_id: SessionId
    model: ModelName | None = None


@handled_by("history.queries", "replay_session", reads=True)
class ReplaySession(Command[r.ReplayResult]):
    type: Literal["replay_session"] = "replay_session"
    session_id: SessionId
    at_version: PositiveInt | None = None
    #: An audit read of a deleted session (else ``session_deleted``, ADR 0072).
    include_deleted: StrictBool = False
    model: ModelName | None = None


@handled_by("history.queries", "replay_state")
class ReplayState(Command[r.ReplayStateResult]):
    """``replay_session`` without the projection (issue 41): the state as of a version
    (pins, cleared results, active checkpoint, next seq) reads no raw message, where the
    projection of a session never compacted is every message."""

    type: Literal["replay_state"] = "replay_state"
    session_id: SessionId
    at_version: PositiveInt | None = None
    #: An audit read of a deleted session (else ``session_deleted``, ADR 0072).
    include_deleted: StrictBool = False


@handled_by("history.queries", "list_checkpoints", reads=True)
class ListCheckpoints(Command[r.CheckpointsResult]):
    type: Literal["list_checkpoints"] = "list_checkpoints"
    session_id: SessionId
    #: An audit read of a deleted session (else ``session_deleted``: summaries are its
    #: content, ADR 0072).
    include_deleted: StrictBool = False


@handled_by("history.queries", "list_sessions", reads=True)
class ListSessions(Command[r.SessionsResult]):
    type: Literal["list_sessions"] = "list_sessions"
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] = 100
    offset: NonNegativeInt = 0
    tree: StrictBool = False
    """Also answer ``tree``: the root sessions of the page with their forks and
    sub-agents nested (issue 42)."""


@handled_by("history.forks", "fork_session")
class ForkSession(Command[r.ForkSessionResult]):
    """A new session born as ``session_id`` is at ``at_version`` (or right after
    ``at_seq`` was appended; default: now). Nothing is copied: the child's reads resolve
    the inherited history from the parent's events (issue 42, ADR 0081)."""

    type: Literal["fork_session"] = "fork_session"
    session_id: SessionId
    new_session_id: SessionId
    at_version: PositiveInt | None = None
    at_seq: Seq | None = None
    command_id: CommandId | None = None


@handled_by("agent.subagents", "complete_subagent")
class CompleteSubagent(Command[r.CompleteSubagentResult]):
    """A sub-agent's result becomes its parent's tool result for the call that spawned
    it (issue 42): one append on the parent, at most once."""

    type: Literal["complete_subagent"] = "complete_subagent"
    session_id: SessionId
    result: Annotated[str, StringConstraints(max_length=10_000_000)]
