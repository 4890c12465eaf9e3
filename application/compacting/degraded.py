"""The degraded checkpoint (spec §11.2, §11.3 steps 4-5): the oldest whole turns
dropped without a summary, when a request must shrink and no summary could be had."""

from __future__ import annotations

from dataclasses import replace

from context_compaction.domain.budget import SUMMARY_OUTPUT_CAP
from context_compaction.domain.cutpoint import CutPlan, NothingToCompact, plan_cut
from context_compaction.domain.errors import OverflowRetryExhausted
from context_compaction.domain.overflow import describe_cut, degraded_summary
from context_compaction.domain.projection import summary_message
from context_compaction.domain.summary import smallest_window

from ..contracts import results as r
from .attemptlog import run_recorded
from .compaction import Candidate, commit_candidate
from .ledgers import verify_summary
from .prepare import candidate_checkpoint, draft_with, pinned_history_tokens, record_counts
from ..runtime.services import Services
from ..runtime.turncontext import TurnContext


#: The longest "what was cut" words (``describe_cut``): room for the breadcrumb is
#: reserved before the cut is known.
_LONGEST_CUT = (
    f"{10**6} oldest turns and the first {10**6} messages of the turn at seq {10**9} "
    f"(message seq {10**9}-{10**9})"
)


def degraded_checkpoint(
    svc: Services, turn: TurnContext, *, window_cap: int | None = None, must_fit: bool = False
) -> r.CompactOutcome:
    """Spec §11.3 step 4-5: drop the oldest whole turns, no summary, ``degraded=True``.

    ``window_cap`` (the size of a refused request, in our units): the request was over
    the provider's real window, so the trim must cut below it. Recorded in the
    session's attempt log (issue 16). ``must_fit`` (the turn's own fall-back, the window
    known): a trim still over the window is not committed, ``OverflowRetryExhausted``
    naming the smallest window instead: it would drop history and the request still fail.
    """
    return run_recorded(
        svc, turn, "overflow", lambda: _degraded_checkpoint(svc, turn, window_cap, must_fit), degraded=True
    )


def _degraded_checkpoint(svc: Services, turn: TurnContext, window_cap: int | None,
                         must_fit: bool = False) -> r.CompactOutcome:
    turn = turn.with_window_cap(svc, window_cap)
    ctx, budget, before = turn.ctx, turn.budget, turn.draft
    counts = record_counts(turn)
    previous = ctx.checkpoint.summary if ctx.checkpoint else None
    last_problem = "nothing older than the newest turn to drop"
    for keep_previous in ((True, False) if previous else (False,)):
        prior = previous if keep_previous else None
        reserve = svc.tokens.count_message(
            summary_message(degraded_summary(omitted=_LONGEST_CUT, previous_summary=prior)),
            before.encoding,
        )
        # (pinned messages planned as history stay whatever the cut: not room for the tail)
        room = max(budget.threshold - before.fixed - pinned_history_tokens(turn) - reserve, 0)
        plan = plan_cut(
            ctx.records,
            counts,
            keep_tokens=room,
            previous_first_retained=ctx.checkpoint.first_retained_seq if ctx.checkpoint else None,
            allow_turn_split=True,
        )
        if isinstance(plan, NothingToCompact):
            last_problem = plan.value
            continue
        candidate = _degraded_candidate(svc, turn, plan, prior)
        cp = candidate.checkpoint
        if cp.tokens_after <= budget.window or not keep_previous:
            if cp.tokens_after >= cp.tokens_before:
                last_problem = "trimming would not shrink the request"
                continue
            if must_fit and cp.tokens_after > budget.window:
                raise _no_trim_fits(svc, turn, cp.tokens_after)
            outcome = commit_candidate(svc, candidate)
            _, _, cut = describe_cut(plan.summarize, plan.split_turn)
            outcome.report = (
                f"Context trimmed after overflow: {outcome.tokens_before:,} -> "
                f"{outcome.tokens_after:,} tokens\n"
                f"Dropped {cut} without a summary; "
                f"kept {outcome.kept_turns} turn{'s' if outcome.kept_turns != 1 else ''} "
                f"from message seq {outcome.first_retained_seq}\n"
                "Raw history unchanged"
            )
            return outcome
    raise OverflowRetryExhausted(
        f"cannot shrink the context any further: {last_problem}",
        details={"session_id": turn.session_id},
    )


def _no_trim_fits(svc: Services, turn: TurnContext, after: int) -> OverflowRetryExhausted:
    """A window too small for what no trim drops (the newest turn, the fixed parts, issue 44)."""
    window, encoding = turn.budget.window, turn.draft.encoding
    smallest = smallest_window(lambda text: svc.tokens.count_text(text, encoding), SUMMARY_OUTPUT_CAP)
    return OverflowRetryExhausted(
        f"the {window:,}-token window is smaller than what no trim drops ({after:,} tokens: the newest "
        f"turn, the fixed parts and the trim's note); nothing was trimmed. The smallest window that can compact is "
        f"{smallest:,} tokens",
        details={"session_id": turn.session_id, "window": window, "tokens_after_trim": after,
                 "smallest_window": smallest},
    )


def _degraded_candidate(
    svc: Services, turn: TurnContext, plan: CutPlan, previous: str | None
) -> Candidate:
    whole, partial, cut = describe_cut(plan.summarize, plan.split_turn)
    text = degraded_summary(omitted=cut, previous_summary=previous)
    checkpoint = candidate_checkpoint(
        turn,
        summary=text,
        first_retained_seq=plan.first_retained_seq,
        reason="overflow",
        provider_kind="deterministic",
        model=turn.model,
        degraded=True,
        summary_source={
            "source_messages": len(plan.summarize),
            "omitted_messages": len(plan.summarize),
            "truncated_messages": 0,
            "omitted_turns": whole,
            "omitted_messages_of_split_turn": partial,
            "previous_summary_included": previous is not None,
            "split_turn": plan.split_turn,
            "strategy": "deterministic whole-turn trim (context overflow, no summary)",
        },
    )
    # The ledger goes on (cumulative): nothing was summarized, so every item the trim
    # text does not state is reported dropped rather than lost with the turns.
    verified = verify_summary(
        text,
        previous=turn.ctx.checkpoint.ledger if turn.ctx.checkpoint else None,
        covered=plan.summarize,
        last_seq=plan.summarize[-1]["seq"],
        budget_tokens=0,
        count=lambda t: svc.tokens.count_text(t, turn.draft.encoding),
        previous_summary=turn.ctx.checkpoint.summary if turn.ctx.checkpoint else None,
        # (the kept tail states what it states: not read, it over-reported, review of ADR 0109)
        retained=[m for m in turn.ctx.records if m["seq"] >= plan.first_retained_seq],
    )
    checkpoint = replace(checkpoint, ledger=verified.record)
    after = draft_with(svc, turn, checkpoint)
    return Candidate(
        turn.session_id, replace(checkpoint, tokens_after=after.total), plan.kept_turns
    )
