"""Results of the cost and simulation queries (issue 43); beside the results
package (results.py was at its size then, ADR 0055). Names and fields are a promise: add, never rename."""

from __future__ import annotations

from typing import Any

from .results import CompactionNet, Result


class CostFigures(Result):
    """Tokens and their price in USD, per part (``cached``/``cache_creation`` are parts
    of ``prompt``; the plain input is the rest)."""

    calls: int
    prompt_tokens: int
    cached_tokens: int
    cache_creation_tokens: int
    completion_tokens: int
    input_usd: float
    cached_usd: float
    cache_creation_usd: float
    completion_usd: float
    total_usd: float
    priced: bool
    """False when some call's model has no known price (its tokens count 0 USD)."""


class ModelCost(Result):
    model: str
    prices_source: str
    """``litellm`` (the offline cost map), ``settings`` (``models.<name>``) or ``unknown``."""
    requests: CostFigures
    summaries: CostFigures


class CompactionCost(Result):
    attempt_id: str
    at: str
    reason: str
    tokens_before: int
    tokens_after: int
    net: CompactionNet


class SessionCostResult(Result):
    """``get_session_cost``: the session's recorded usages and summary calls, priced."""

    session_id: str
    total: CostFigures
    requests: CostFigures
    """The agent's requests (``record_usage``)."""
    summaries: CostFigures
    """The compaction summary calls (their own reported usage)."""
    per_model: list[ModelCost]
    compactions: list[CompactionCost]
    """Committed compactions, oldest first, each with its balance."""


class PolicyRow(Result):
    """One policy of ``simulate``: replayed over the session's appends."""

    policy: str
    source: str
    """Where the policy comes from: a settings file, ours as recorded, or a peer's
    documentation (cited)."""
    compactions: int
    compactions_by_reason: dict[str, int]
    """Committed compactions by trigger: ``auto``, ``overflow``."""
    summary_calls: int
    recorded_summaries: int
    """Of the summaries, the recorded ones reused (the cut matched the recording's)."""
    tokens_sent: int
    cacheable_share: float
    """Of ``tokens_sent``, the share a prefix cache could serve (each request's prefix
    unchanged since the previous request)."""
    cost_usd: float
    priced: bool
    facts_kept: int | None
    """Ledger items still in the context at the end (None: no compaction)."""
    facts_total: int | None
    settings: dict[str, Any]


class SimulationResult(Result):
    session_id: str
    model: str
    turns: int
    recorded_compactions: int
    """Committed compactions in the recorded session's attempt log."""
    recorded_by_reason: dict[str, int]
    rows: list[PolicyRow]
    text: str
