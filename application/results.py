"""Results of commands and queries (pydantic models; ``dispatch_json`` dumps them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from context_compaction.domain.checkpoint import Checkpoint


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class StartSessionResult(Result):
    session_id: str
    version: int


class ConfigureSessionResult(Result):
    session_id: str
    version: int
    model: str
    agent_token_limit: int | None


class AppendMessagesResult(Result):
    seqs: list[int]
    version: int
    duplicate: bool = False
    """True when the command_id had been applied before: nothing was appended."""


class InvalidateHistoryResult(Result):
    context_generation: int
    version: int
    excluded_seqs: list[list[int]] = Field(default_factory=list)
    """The seq ranges this command excluded (inclusive ``[lo, hi]`` pairs)."""


class PinsResult(Result):
    """Every pinned seq of the session after the command, ascending."""

    session_id: str
    pinned_seqs: list[int]
    version: int


class RevertResult(Result):
    session_id: str
    checkpoint_id: str
    """The checkpoint withdrawn."""
    context_generation: int
    active_checkpoint_id: str | None
    """The parent now active, or null: raw history."""
    version: int


class DeleteSessionResult(Result):
    session_id: str
    version: int


class HistoryResult(Result):
    session_id: str
    messages: list[dict[str, Any]]


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


class SearchResult(Result):
    session_id: str
    query: str
    hits: list[SearchHitResult]


class ProjectionResult(Result):
    """The history part of a provider request and where it came from (spec §7.1)."""

    messages: list[dict[str, Any]]
    checkpoint_id: str | None
    context_generation: int
    first_raw_seq: int | None
    max_raw_seq: int
    version: int = 0
    diagnostics: list[str] = Field(default_factory=list)


class ReplayResult(Result):
    session_id: str
    version: int
    context_generation: int
    active_checkpoint_id: str | None
    next_seq: int
    deleted: bool
    model: str
    projection: ProjectionResult


class CheckpointsResult(Result):
    session_id: str
    active_checkpoint_id: str | None
    checkpoints: list[dict[str, Any]]


class SessionInfo(Result):
    session_id: str
    model: str
    agent_token_limit: int | None
    version: int
    next_seq: int
    message_count: int
    invalidated_count: int
    checkpoint_count: int
    context_generation: int
    active_checkpoint_id: str | None
    deleted: bool
    created_at: str
    updated_at: str


class SessionsResult(Result):
    sessions: list[SessionInfo]


class CompactOutcome(Result):
    """What a compaction did (CONTRACT.md); ``report`` is the human text of spec §11.1."""

    status: Literal["compacted", "nothing_to_compact"]
    checkpoint_id: str | None = None
    generation: int
    tokens_before: int
    tokens_after: int
    first_retained_seq: int | None = None
    kept_turns: int = 0
    degraded: bool = False
    trigger_reason: str
    report: str
    summary_source: dict[str, Any] | None = None
    provider_kind: str | None = None
    ledger: dict[str, Any] | None = None
    """The ledger check (issue 16): items_total, in_summary, restored, dropped,
    dropped_items[] {kind, value, seq}; None when no summary was verified."""

    @classmethod
    def compacted(cls, checkpoint: Checkpoint, *, kept_turns: int, report: str) -> CompactOutcome:
        return cls(
            status="compacted",
            checkpoint_id=checkpoint.checkpoint_id,
            generation=checkpoint.generation,
            tokens_before=checkpoint.tokens_before,
            tokens_after=checkpoint.tokens_after,
            first_retained_seq=checkpoint.first_retained_seq,
            kept_turns=kept_turns,
            degraded=checkpoint.degraded,
            trigger_reason=checkpoint.trigger_reason,
            report=report,
            summary_source=dict(checkpoint.summary_source),
            provider_kind=checkpoint.provider_kind,
            ledger=checkpoint.ledger_report,
        )


class ContextUsage(Result):
    """Every field of spec §16, the per-part breakdown and the text form.

    ``breakdown`` attributes every token of the local estimate to one part: overhead
    (the request's priming), system, tools, knowledge, plan, summary, history.
    """

    session_id: str
    model: str
    configured_window_tokens: int
    effective_window_tokens: int
    window_source: str
    configured_reserve_tokens: int
    reserve_tokens: int
    configured_keep_recent_tokens: int
    effective_keep_recent_tokens: int
    compression_threshold_tokens: int
    used_tokens: int
    """What the trigger decides on: provider-measured + tail estimate when the
    calibration key matches (``usage_source``), else the local estimate."""
    estimated_tokens: int
    """The pure local estimate of the same request (the sum of ``breakdown``)."""
    remaining_tokens: int
    usage_source: Literal["estimated", "measured+estimated"]
    auto_compaction_enabled: bool
    would_compact: bool
    active_checkpoint_id: str | None
    checkpoint_generation: int
    checkpoint_tokens_before: int | None
    checkpoint_tokens_after: int | None
    checkpoint_degraded: bool
    breakdown: dict[str, int]
    text: str
    ledger: dict[str, int] | None = None
    """The active checkpoint's ledger coverage: items_total, in_summary, restored,
    dropped (None: no checkpoint, or one made without a ledger)."""


class TimelineResult(Result):
    session_id: str
    entries: list[dict[str, Any]]


class TurnRequest(Result):
    """A complete provider request (OpenAI/litellm chat format) and how it was made."""

    request_id: str
    session_id: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    usage: ContextUsage
    compaction: CompactOutcome | None = None
    warnings: list[str] = Field(default_factory=list)
    checkpoint_id: str | None = None
    context_generation: int
    phase: Literal["start", "continuation"]
    turn_start_index: int = 0
    """Index in ``messages`` of the current turn's first message: what a request-local
    trim must keep (spec §11.4)."""
    retry_of: str | None = None
    """Set on the one request rebuilt after an overflow (``recover_overflow``)."""


class RecordUsageResult(Result):
    request_id: str
    prompt_tokens: int
    estimated_tokens: int
    """Our local estimate for the same request, for comparing the two."""


class CompactionAttemptsResult(Result):
    """``list_compaction_attempts``: newest first."""

    session_id: str
    attempts: list[dict[str, Any]]


class ResummarizeResult(Result):
    """``resummarize``: a candidate summary of a past checkpoint's source; nothing stored."""

    session_id: str
    checkpoint_id: str
    summary: str
    ledger: dict[str, Any]
    tokens: int
    summarizer: str
    model: str
    committed_summary: str
