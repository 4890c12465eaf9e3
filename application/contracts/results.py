"""Results of commands and queries (pydantic models; ``dispatch_json`` dumps them).

Every entry of a result list is a model too (``GetHistory(...).messages[0].seq``, ADR
0040); its JSON is what it was as a dict. Two kinds of value stay JSON-shaped dicts on
purpose: provider requests (``TurnRequest.messages``/``tools``,
``ProjectionResult.messages``), which go to ``litellm.completion`` as they are, and
open JSON objects whose keys are the provider's or an event's (``content`` parts,
``provider_state``, an event's ``payload``, ``summary_source``, ``ledger``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr

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


class PurgeSessionResult(Result):
    session_id: str
    version: int
    erased_events: int
    """Stored events whose content was replaced by the tombstone."""
    files_scrubbed: bool | None = None
    """SQLite: the file was vacuumed and its WAL emptied, so no old page keeps the
    content; False when another connection's open read kept the WAL (purge again once
    it is done). None on PostgreSQL: old row versions stay until ``VACUUM`` (ADR 0072)."""


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
    pinned_seqs: list[int] = Field(default_factory=list)
    """The seqs pinned as of that version (issue 41)."""
    cleared_seqs: list[int] = Field(default_factory=list)
    """Tool results whose content is replaced by a placeholder as of that version (issue 41)."""


class ReplayStateResult(Result):
    """``replay_state``: ``replay_session``'s fields but the projection (issue 41)."""

    session_id: str
    version: int
    context_generation: int
    active_checkpoint_id: str | None
    next_seq: int
    deleted: bool
    model: str
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
    """The ledger's coverage (items_total, in_summary, restored, dropped, dropped_items)."""
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
    parent_session_id: str | None = None
    """The session this one was forked from or spawned by (issue 42); null: a root."""


class SessionsResult(Result):
    sessions: list[SessionInfo]
    tree: list[SessionTreeNode] | None = None
    """With ``tree: true``: the page's root sessions, each with its children nested."""


class ChildUsage(Result):
    session_id: str
    kind: str
    """``fork`` or ``subagent``."""
    used_tokens: int
    children_tokens: int = 0


class SessionTreeNode(Result):
    session: SessionInfo
    children: list[SessionTreeNode] = Field(default_factory=list)


class ForkSessionResult(Result):
    session_id: str
    parent_session_id: str
    fork_version: int
    """The parent's version the child was born at."""
    fork_seq: int
    """The parent's last seq then: the child's seqs up to it are inherited."""
    version: int
    next_seq: int
    context_generation: int
    active_checkpoint_id: str | None


class CompleteSubagentResult(Result):
    session_id: str
    parent_session_id: str
    parent_tool_call_id: str
    seq: int | None
    """The parent's tool result's seq (null: the host had answered the call itself)."""
    already_answered: bool


class ToolResultsCleared(Result):
    """What stage 1 cleared: how many tool results, and the tokens that freed (our count)."""

    count: int
    tokens_freed: int


class CompactOutcome(Result):
    """What a compaction did (CONTRACT.md); ``report`` is the human text of spec §11.1."""

    status: Literal["compacted", "nothing_to_compact", "candidate"]
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
    stage: Literal["cleared", "summarized", "degraded"] | None = None
    """Which stage produced the outcome (issue 17); None when nothing was compacted.
    ``cleared``: only tool results were cleared, no checkpoint (``checkpoint_id`` null)."""
    tool_results_cleared: ToolResultsCleared | None = None
    """Set when stage 1 cleared tool results in this compaction (also before a summary)."""
    ledger: dict[str, Any] | None = None
    """The ledger check (issue 16): items_total, in_summary, restored, dropped,
    dropped_items[] {kind, value, seq}; None when no summary was verified."""
    candidate_id: str | None = None
    """``compact {dry_run: true}`` (status ``candidate``): what ``commit_candidate``
    commits while the session's generation is unchanged (issue 43); on
    ``commit_candidate``'s answer, the candidate it committed."""
    summary: str | None = None
    """The candidate's summary text (dry runs only)."""
    summary_usage: dict[str, Any] | None = None
    """The summary call's measured usage and ``model`` (issue 43), when reported."""
    summary_cost_usd: float | None = None
    net: CompactionNet | None = None
    """Dry runs: the forecast balance of committing this candidate (issue 43)."""

    @classmethod
    def compacted(cls, checkpoint: Checkpoint, *, kept_turns: int, report: str) -> CompactOutcome:
        return cls(
            status="compacted",
            stage="degraded" if checkpoint.degraded else "summarized",
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


class CompactionNet(Result):
    """One compaction's balance in USD (issue 43, ADR 0076): ``saved_usd`` = tokens
    shed × requests until the next compaction × the read price; ``spent_usd`` = the
    summary call + the invalidated prompt cache (``tokens_after`` written afresh)."""

    tokens_shed: int
    requests: int
    measured: bool
    """True: ``requests`` counted from the log (up to the next compaction, or so far
    when ``open``); False: forecast from the session's growth."""
    open: bool = False
    """No later compaction yet: the count is still growing."""
    priced: bool = True
    """False when the session's or the summary's model has no known price: the figures
    that need it are None (unknown, never 0 USD)."""
    saved_usd: float | None
    summary_usd: float | None
    invalidated_cache_usd: float | None
    spent_usd: float | None
    net_usd: float | None


class ContextForecast(Result):
    """/info: when the trigger and the hard window will be reached (issue 43)."""

    method: str
    """How: ``median tokens added per turn over the last N turns`` (N named)."""
    turns_observed: int
    tokens_per_turn: int | None
    tokens_to_threshold: int
    turns_to_threshold: int | None
    """None when the growth is unknown (no complete turn observed) or zero."""
    tokens_to_window: int
    turns_to_window: int | None


class PromptCacheUsage(Result):
    """The provider's prompt cache over the session's recent requests (``record_usage``,
    in this process's memory, issue 17)."""

    requests: int
    """Recent requests with a recorded usage (at most ``RECENT_USAGES``)."""
    prompt_tokens: int
    cached_tokens: int
    cache_creation_tokens: int
    cached_share: float
    """``cached_tokens / prompt_tokens`` over those requests (0 when none)."""


class CompactionBreaker(Result):
    """The circuit breaker of automatic compaction (issue 17)."""

    open: bool
    failures_in_a_row: int
    """Failed automatic summary attempts since the last committed compaction."""
    turns_left: int
    """Turns the pause still lasts (0 when closed)."""


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
    prompt_cache: PromptCacheUsage | None = None
    """None until ``record_usage`` reported a request of the session in this process."""
    compaction_breaker: CompactionBreaker | None = None
    """Set by /info (``get_context_usage``): read from the attempt log."""
    reported_window_tokens: int | None = None
    """The window the provider reported for this model in an overflow error, in its own
    units (None: none learned); ``effective_window_tokens`` is it in our estimate units."""
    ledger: dict[str, int] | None = None
    """The active checkpoint's ledger coverage: items_total, in_summary, restored,
    dropped (None: no checkpoint, or one made without a ledger)."""
    forecast: ContextForecast | None = None
    """Set by /info: turns and tokens until the threshold and the window (issue 43)."""
    cost_usd: float | None = None
    """Set by /info: what the session's recorded usages and summary calls cost so far
    (``get_session_cost`` has the parts; issue 43); None while a model among them has
    no known price (unknown, not free)."""
    children: list[ChildUsage] = Field(default_factory=list)
    """The session's forks and sub-agents (issue 42), each with its own roll-up."""
    children_tokens: int = 0
    """``used_tokens`` of every descendant, summed (the tree's roll-up; not in
    ``used_tokens``, which is this session's next request only)."""
    waiting_tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """Calls still waiting for their result ({tool_call_id, seq}, oldest first): the
    compaction boundary never passes the oldest (issue 42), so a call never answered
    stops compaction; /info says which one."""



class TimelineEntryResult(Result):
    key: str
    """``context_checkpoint:<checkpoint_id>``."""
    checkpoint_id: str
    content: str
    created_at: str


class TimelineResult(Result):
    session_id: str
    entries: list[TimelineEntryResult]


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
    api_base: str | None = None
    """The model's ``api_base`` from ``Settings.models`` (null: litellm's default)."""
    _api_key: SecretStr | None = PrivateAttr(default=None)
    # The model's api_key from Settings.models: a private attribute, so that no
    # JSON answer, repr or log line carries it; ``completion_kwargs`` hands it out.

    def completion_kwargs(self) -> dict[str, Any]:
        """``litellm.completion(**request.completion_kwargs())``: ``model``, ``messages``,
        ``tools`` (when there are any) and the model's ``api_base`` / ``api_key`` from
        ``Settings.models`` (when configured), so the host repeats none of them.

        The key is in this dict only: never in ``dispatch_json``/HTTP answers, a repr
        or our logs (ADR 0040). Do not log the dict.
        """
        kwargs: dict[str, Any] = {"model": self.model, "messages": self.messages}
        if self.tools:
            kwargs["tools"] = self.tools
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key.get_secret_value()
        return kwargs

    def with_api_key(self, api_key: SecretStr | None) -> TurnRequest:
        """This request carrying ``api_key`` for ``completion_kwargs`` (set by the handler)."""
        self._api_key = api_key
        return self


class RecordUsageResult(Result):
    request_id: str
    prompt_tokens: int
    estimated_tokens: int
    """Our local estimate for the same request, for comparing the two."""
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    completion_tokens: int | None = None


class CompactionAttemptsResult(Result):
    """``list_compaction_attempts``: newest first."""

    session_id: str
    attempts: list[AttemptInfo]


class AttemptInfo(Result):
    """One compaction attempt, whatever its outcome (ADR 0032)."""

    attempt_id: str
    at: str
    reason: str
    outcome: str
    stage: str | None
    summarizer: str
    model: str
    prompt_version: str | None
    duration_ms: int
    tokens_before: int
    tokens_after: int
    ledger: dict[str, Any] | None
    error_code: str | None
    summary_usage: dict[str, Any] | None = None
    """The summary call's measured usage and ``model`` (issue 43); None when not reported."""
    summary_cost_usd: float | None = None
    """``summary_usage`` priced (None: no usage, or the model's prices are unknown)."""
    net: CompactionNet | None = None
    """Committed compactions: the balance (issue 43)."""
    candidate_id: str | None = None
    """The dry run's candidate this attempt made (``candidate``) or committed (issue 43)."""


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
