"""Stage 1 of automatic compaction: tool-result clearing (issue 17, ADR 0034).

Before a summary call, the old tool output outside the keep window is replaced by
placeholders (``domain/clearing.py``) and recorded as ``Session.ToolResultsCleared``.
That event does not move the context generation, so a summary candidate in flight
stays valid, and a summary made after it still reads the raw text. When clearing
alone frees enough and leaves room under the threshold, no summary call is made.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from context_compaction.domain.clearing import plan_clearing

from ..contracts import results as r
from ..runtime.services import Services, mutate
from ..runtime.turncontext import TurnContext, UsageDecision, decide_usage, prepare_context

log = logging.getLogger("context_compaction.compaction")

#: Clearing alone must leave the request this share of the threshold below it, so the
#: next turns do not trigger again at once (each clearing rewrites the prompt cache).
MARGIN_SHARE = 10


@dataclass(frozen=True)
class Cleared:
    """What stage 1 did: its outcome, the context after it, and whether that suffices."""

    outcome: r.CompactOutcome
    turn: TurnContext
    usage: UsageDecision
    enough: bool


def clear_tool_results(svc: Services, turn: TurnContext, reason: str = "auto") -> Cleared | None:
    """Clear old tool results of ``turn``'s session; None when clearing is off or finds
    nothing worth clearing (then nothing is recorded)."""
    cfg = svc.settings.context_compaction.tool_results
    if not cfg.clear:
        return None
    ctx, encoding = turn.ctx, turn.draft.encoding
    plan = plan_clearing(
        ctx.records,
        turn.tokens,
        keep_recent_tokens=cfg.keep_recent_tokens,
        protected_tools=frozenset(cfg.protected_tools),
        cleared={*ctx.cleared, *ctx.pinned_seqs},  # a pinned message is shown verbatim
        count=lambda text: svc.tokens.count_text(text, encoding),
    )
    if not plan:
        return None
    seqs = plan.seqs
    mutate(
        svc,
        turn.session_id,
        lambda s: s.clear_tool_results(
            seqs=seqs,
            placeholders=[plan.placeholders[seq] for seq in seqs],
            tokens_freed=plan.tokens_freed,
            created_at=svc.now(),
        ),
    )
    after = prepare_context(svc, turn.session_id, turn.inputs, turn.model)
    usage = decide_usage(svc, after)
    freed = max(turn.draft.total - after.draft.total, 0)
    threshold = turn.budget.threshold
    enough = (
        freed >= cfg.clear_at_least_tokens
        and usage.used <= threshold - threshold // MARGIN_SHARE
    )
    log.info(
        "tool results cleared",
        extra={
            "session_id": turn.session_id,
            "reason": reason,
            "count": len(seqs),
            "tokens_before": turn.draft.total,
            "tokens_after": after.draft.total,
            "summary_needed": not enough,
        },
    )
    return Cleared(_cleared_outcome(turn, after, len(seqs), freed, reason), after, usage, enough)


def _cleared_outcome(turn: TurnContext, after: TurnContext, count: int, freed: int,
                     reason: str) -> r.CompactOutcome:
    return r.CompactOutcome(
        status="compacted",
        stage="cleared",
        checkpoint_id=None,
        generation=after.ctx.session.context_generation,
        tokens_before=turn.draft.total,
        tokens_after=after.draft.total,
        first_retained_seq=None,
        kept_turns=0,
        degraded=False,
        trigger_reason=reason,
        report=(
            f"Tool results cleared: {turn.draft.total:,} -> {after.draft.total:,} tokens\n"
            f"Cleared {count} old tool results (recallable by seq)\n"
            "Raw history unchanged"
        ),
        tool_results_cleared=r.ToolResultsCleared(count=count, tokens_freed=freed),
    )

