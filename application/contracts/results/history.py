"""Results of reading a session's history: messages, search, projection, replay,
checkpoints."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import CachedMessages, Result


class ToolCallFunction(Result):
    name: str
    arguments: str


class ResultToolCall(Result):
    """A tool call in OpenAI's nested form (every result shows them so)."""

    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class HistoryMessage(Result):
    """A raw-log message (CONTRACT.md "Message (input)" fields plus seq, created_at)."""

    seq: int
    role: str
    content: str | list[dict[str, Any]] | None
    """Text, or the OpenAI content parts as given (text, image_url, ...)."""
    reasoning: str | None
    tool_calls: list[ResultToolCall]
    tool_call_id: str | None
    name: str | None
    turn_id: str | None
    steering: bool
    provider_state: dict[str, Any] | None
    created_at: str
    invalidated: bool


class HistoryResult(Result):
    session_id: str
    messages: list[HistoryMessage]


class SearchHitResult(Result):
    """One message that matched: ``compacted`` when only the summary stands for it
    (expand it with ``get_history`` ``from_seq``/``to_seq``)."""

    seq: int
    role: str
    turn_id: str | None
    snippet: str
    score: float
    compacted: bool
    invalidated: bool
    truncated: bool = False
    """Only the head and tail of this long message are indexed (ADR 0071)."""


class SearchResult(Result):
    session_id: str
    query: str
    hits: list[SearchHitResult]
    shortened_to: str | None = None
    """The part of ``query`` that was searched when it had more than 32 words (its first
    32; None: the whole query was searched). ADR 0086."""


class ProjectionResult(CachedMessages):
    """The history part of a provider request and where it came from (spec §7.1)."""

    messages: list[dict[str, Any]]
    checkpoint_id: str | None
    context_generation: int
    first_raw_seq: int | None
    max_raw_seq: int
    version: int = 0
    diagnostics: list[str] = Field(default_factory=list)


class _ReplayedState(Result):
    # What ``replay_session`` and ``replay_state`` both answer first, in this order.
    session_id: str
    version: int
    context_generation: int
    active_checkpoint_id: str | None
    next_seq: int
    deleted: bool
    model: str


class ReplayResult(_ReplayedState):
    projection: ProjectionResult
    pinned_seqs: list[int] = Field(default_factory=list)
    """The seqs pinned as of that version (issue 41)."""
    cleared_seqs: list[int] = Field(default_factory=list)
    """Tool results whose content is replaced by a placeholder as of that version (issue 41)."""


class ReplayStateResult(_ReplayedState):
    """``replay_state``: ``replay_session``'s fields but the projection (issue 41)."""

    pinned_seqs: list[int]
    cleared_seqs: list[int]


class CheckpointInfo(Result):
    """A checkpoint as ``list_checkpoints`` lists it (spec §6.2 fields)."""

    checkpoint_id: str
    id: str
    """The same as ``checkpoint_id`` (spec §6.2's name)."""
    session_id: str
    generation: int
    parent_checkpoint_id: str | None
    summary: str
    first_retained_seq: int
    source_max_seq: int
    trigger_reason: str
    provider_kind: str
    model: str
    tokens_before: int
    tokens_after: int
    degraded: bool
    summary_source: dict[str, Any]
    created_at: str
    ledger: dict[str, Any] | None
    """The ledger's coverage (items_total, in_summary, restored, dropped, dropped_items:
    what left in this compaction, dropped_before: the dropped an earlier checkpoint listed,
    absent in records written before ADR 0107)."""
    native_state: dict[str, Any] | None = None
    """Who made the checkpoint's provider-native state ({provider, model, kind}; ADR
    0039), None without one; the opaque state itself stays in the event."""
    version: int
    active: bool
    reverted: bool


class CheckpointsResult(Result):
    session_id: str
    active_checkpoint_id: str | None
    checkpoints: list[CheckpointInfo]
