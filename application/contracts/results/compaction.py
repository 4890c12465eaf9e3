"""Results of compaction: its outcome and balance, the attempt log, resummarizing, the
Timeline."""

from __future__ import annotations

from typing import Any, Literal

from context_compaction.domain.checkpoint import Checkpoint

from .base import Result


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
    dropped_items[] {kind, value, seq} (what left in this compaction), dropped_before (the
    dropped an earlier checkpoint listed; ADR 0107); None when no summary was verified."""
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
    nothing_reason: str | None = None
    """``nothing_to_compact``: why, as a stable code (``no_old_turn``,
    ``boundary_would_not_advance``, ``empty``, ``waiting_call``, ``summary_not_smaller``)."""

    def named_cause(self) -> str:
        """``": <why>"`` when the report names a cause the host can act on (a waiting call,
        a summary block that cannot be smaller), else ``""``: for a warning's tail."""
        _, named, why = self.report.rpartition("Nothing to compact: ")
        return f": {why}" if named else ""

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
    checkpoint_id: str | None = None
    """The checkpoint a ``compacted`` or ``degraded`` attempt committed (None on older records)."""
    nothing_reason: str | None = None
    """A ``nothing_to_compact`` attempt's cause (``CompactOutcome.nothing_reason``)."""


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


class TimelineEntryResult(Result):
    key: str
    """``context_checkpoint:<checkpoint_id>``."""
    checkpoint_id: str
    content: str
    created_at: str


class TimelineResult(Result):
    session_id: str
    entries: list[TimelineEntryResult]
