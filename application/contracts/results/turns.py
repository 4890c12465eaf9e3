"""Results of a turn: the provider request, recorded usage and /info's context usage."""

from __future__ import annotations

from typing import Any, Literal

from context_compaction.domain.forecast import Forecast
from pydantic import Field, PrivateAttr, SecretStr

from .base import CachedMessages, Result
from .compaction import CompactOutcome
from .tree import ChildUsage


class ContextForecast(Result, Forecast):
    """/info: when the trigger and the hard window will be reached (issue 43)."""

    # The fields are the domain's ``Forecast`` (one declaration, the JSON names as they
    # were); the handler builds this from the one ``domain/forecast.py`` computes.


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
    dropped, dropped_before (of the dropped, those an earlier checkpoint listed: ADR 0107;
    None: no checkpoint, or one made without a ledger)."""
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


class TurnRequest(CachedMessages):
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
