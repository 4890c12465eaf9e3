"""The compaction service (spec §7.3-7.4, §10-§12; DESIGN §4, §9-§10).

``compact_context`` is the only path that creates checkpoints: snapshot (version,
generation) → plan the cut → one summary call, outside any lock or transaction →
validate the candidate → commit under optimistic concurrency with the generation
check → re-read the projection from the stored state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from context_compaction.domain.budget import SUMMARY_OUTPUT_CAP, SummaryBudget, check_fixed_parts, resolve_window
from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.cutpoint import CutPlan, NothingToCompact, plan_cut
from context_compaction.domain.errors import SessionDeleted, SessionNotFound, StaleCandidate, SummaryFailed
from context_compaction.domain.partial import plan_partial_cut
from context_compaction.domain.summary import (
    SummarySource,
    prompt_overhead,
    smallest_window,
    storable_text,
)

from ..runtime import asyncbus
from ..contracts import commands as c
from ..contracts import results as r
from .attemptlog import run_recorded
from .attemptlog import summarizer_name as summarizer_label
from ..history.costs import summary_cost, summary_usage_record
from ..state.drafts import Draft
from .ledgers import ledger_budget, summary_input, verify_summary
from ..contracts.ports import SummaryRequest
from ..runtime.services import Services, mutate
from ..state.session_context import SessionContext
from ..runtime.telemetry import (
    GENAI_CONVERSATION_ID,
    GENAI_INPUT_TOKENS,
    GENAI_OPERATION_NAME,
    GENAI_OUTPUT_TOKENS,
    GENAI_REQUEST_MODEL,
    SUMMARY_DURATION,
    record_token_usage,
)
from ..runtime.turncontext import TurnContext, prepare_context
from ..runtime.turnlease import refuse_while_turn_runs

log = logging.getLogger("context_compaction.compaction")


@dataclass(frozen=True)
class Candidate:
    """A checkpoint that is not stored yet (spec §7.3 CompactionCandidate); its id and
    time are given when it is committed."""

    session_id: str
    checkpoint: Checkpoint
    kept_turns: int
    summary_usage: dict[str, Any] | None = None
    """The summary call's measured usage and model (issue 43)."""


def compaction_report(before: int, after: int, kept_turns: int, first_retained: int) -> str:
    turns = "turn" if kept_turns == 1 else "turns"
    return (
        f"Context compacted: {before:,} -> {after:,} tokens\n"
        f"Kept {kept_turns} recent {turns} from message seq {first_retained}\n"
        "Raw history unchanged"
    )


def nothing_to_compact(
    ctx: SessionContext, reason: str, tokens: int, why: NothingToCompact
) -> r.CompactOutcome:
    log.info(
        "nothing to compact",
        extra={"session_id": ctx.session.session_id, "reason": reason, "why": why.name},
    )
    return r.CompactOutcome(
        status="nothing_to_compact",
        checkpoint_id=None,
        generation=ctx.session.context_generation,
        tokens_before=tokens,
        tokens_after=tokens,
        first_retained_seq=None,
        kept_turns=0,
        degraded=False,
        trigger_reason=reason,
        # (the other reasons are the ordinary ones; a waiting call can hold a session
        # back indefinitely, so the host is told which cause to clear, issue 42)
        report=f"Nothing to compact: {why.value}" if why is NothingToCompact.WAITING_CALL else "Nothing to compact",
    )


def compact_context(
    svc: Services, turn: TurnContext, *, reason: str, allow_turn_split: bool = False
) -> r.CompactOutcome:
    """Summarize the old part of the session into a new checkpoint, or change nothing;
    the attempt is recorded in the session's attempt log either way (issue 16)."""
    return run_recorded(
        svc, turn, reason, lambda: _compact_context(svc, turn, reason, allow_turn_split)
    )


def _compact_context(
    svc: Services, turn: TurnContext, reason: str, allow_turn_split: bool, part: Part | None = None,
    finish: Callable[[Candidate], r.CompactOutcome] | None = None,
) -> r.CompactOutcome:
    """``part`` limits the cut (issue 43); ``finish`` takes the candidate instead of
    committing it (a dry run)."""
    ctx = turn.ctx
    previous = ctx.checkpoint.first_retained_seq if ctx.checkpoint else None
    plan = plan_partial_cut(
        ctx.records, turn.record_counts(), up_to_seq=part.up_to_seq, fraction=part.fraction,
        previous_first_retained=previous,
    ) if part is not None and part.limited else plan_cut(
        ctx.records,
        turn.record_counts(),
        keep_tokens=turn.keep_beside_pins(),
        previous_first_retained=previous,
        allow_turn_split=allow_turn_split,
    )
    if isinstance(plan, NothingToCompact):
        return nothing_to_compact(ctx, reason, turn.draft.total, plan)
    candidate = summarize_candidate(svc, turn, plan, reason)
    return (finish or (lambda found: commit_candidate(svc, found)))(candidate)


@dataclass(frozen=True)
class Part:
    """What a manual ``compact`` asked for beyond the default cut (issue 43)."""

    up_to_seq: int | None = None
    fraction: float | None = None

    @property
    def limited(self) -> bool:
        return self.up_to_seq is not None or self.fraction is not None


def summary_budget_for(window: int, count: Callable[[str], int]) -> SummaryBudget:
    """The summary call's limits in this window; ``SummaryFailed`` when it has none."""
    output_cap = min(SUMMARY_OUTPUT_CAP, window // 4)
    summary_budget = SummaryBudget.compute(window, prompt_overhead(count, output_cap))
    if not summary_budget.feasible:
        smallest = smallest_window(count, SUMMARY_OUTPUT_CAP)
        raise SummaryFailed(
            f"the {window:,}-token window leaves no room for a summary request; the smallest "
            f"window that can compact is {smallest:,} tokens",
            details={"window": window, "smallest_window": smallest},
        )
    return summary_budget


#: Slack for the summary's own count against its count inside the request (token
#: boundaries at the joins).
_SUMMARY_MARGIN_TOKENS = 8
#: Below this the room beside the tail is no summary at all: ask for the usual size and
#: let the shrink check say why it cannot fit.
_SMALLEST_SUMMARY = 64


def summary_window(svc: Services, model: str, session_window: int) -> int:
    """The window a summary request must fit: the session's, and the summary model's
    own (configured or catalog) when ``summary_model`` names another model."""
    config = svc.settings.model_config_for(model)
    if config.token_limit is None and svc.catalog.max_input_tokens(model) is None:
        return session_window  # nothing known of it: not the 128k default either
    own = resolve_window(configured_limit=config.token_limit, catalog_limit=svc.catalog.max_input_tokens(model))
    return min(session_window, own.hard_window)


def summarize_candidate(svc: Services, turn: TurnContext, plan: CutPlan, reason: str) -> Candidate:
    """One summary call and the §10.4 validation; raises ``SummaryFailed``."""
    ctx, budget, before = turn.ctx, turn.budget, turn.draft
    encoding = before.encoding

    def count(text: str) -> int:
        return svc.tokens.count_text(text, encoding)

    model = svc.settings.summary_model_for(turn.model)
    summary_budget = summary_budget_for(summary_window(svc, model, budget.window), count)
    previous = ctx.checkpoint.summary if ctx.checkpoint else None
    built = summary_input(previous, ctx.checkpoint.ledger if ctx.checkpoint else None, plan.summarize,
                          source_budget=summary_budget.source_budget,
                          output_reserve=summary_budget.output_reserve, count=count)  # issue 44
    source: SummarySource = built.source
    # The tail the cut really keeps: at least the newest whole turn, which can be more than
    # the keep budget (ADR 0083 shrinks that budget for the checklist's room). The summary
    # is asked to fit beside it under the threshold, so that a summarizer that fills its
    # output (the extractive one does) is not refused afterwards for a size it was allowed.
    pins = set(ctx.pinned_seqs)
    kept = sum(turn.tokens[m["seq"]] for m in ctx.records
               if m["seq"] >= plan.first_retained_seq and m["seq"] not in pins)
    # (measured, not guessed: the request with a one-character summary is the rest of it)
    empty = turn.draft_with(svc, turn.candidate(
        summary=".", first_retained_seq=plan.first_retained_seq, reason=reason, provider_kind="",
        model=model, degraded=False, summary_source={}))
    beside = budget.threshold - empty.total - _SUMMARY_MARGIN_TOKENS
    max_output = min(summary_budget.output_reserve, beside) if beside >= _SMALLEST_SUMMARY else summary_budget.output_reserve
    request = SummaryRequest(
        session_id=ctx.session.session_id,
        model=model,
        prompt=built.prompt,
        source=source,
        max_output_tokens=max_output,
        previous_provider_state=ctx.checkpoint.provider_state if ctx.checkpoint else None,
        checklist=built.checklist, count_tokens=count,
    )
    result = _summarize(svc, request, reason)
    summary = storable_text(result.text).strip()
    if not summary:
        raise SummaryFailed("the summarizer returned an empty summary")
    summary_tokens = count(summary)
    if summary_tokens > summary_budget.output_reserve:
        raise SummaryFailed(
            f"the summary has {summary_tokens:,} tokens, over its {summary_budget.output_reserve:,} limit",
            details={"summary_tokens": summary_tokens, "limit": summary_budget.output_reserve},
        )
    room = (budget.threshold - max(turn.keep_beside_pins(), kept) - before.fixed - turn.pinned_history_tokens()
            - summary_budget.output_reserve)
    verified = verify_summary(
        summary,
        previous=ctx.checkpoint.ledger if ctx.checkpoint else None,
        covered=plan.summarize,
        last_seq=plan.summarize[-1]["seq"],
        budget_tokens=ledger_budget(summary_budget.output_reserve, room),
        count=count,
        retained=[m for m in ctx.records if m["seq"] >= plan.first_retained_seq],
        previous_summary=previous,
    )
    checkpoint = turn.candidate(
        summary=verified.text,
        ledger=verified.record(),
        first_retained_seq=plan.first_retained_seq,
        reason=reason,
        provider_kind=result.provider_kind,
        model=result.model,
        degraded=False,
        summary_source=source.metadata(),
        provider_state=getattr(result, "provider_state", None),
    )
    after = turn.draft_with(svc, checkpoint)
    _check_shrinks(turn, after, plan.waiting_call)
    return Candidate(
        ctx.session.session_id, replace(checkpoint, tokens_after=after.total), plan.kept_turns,
        summary_usage=summary_usage_record(result.model, getattr(result, "usage", None)),
    )


def _summarize(svc: Services, request: SummaryRequest, reason: str) -> Any:
    """The summary call in a ``ctxc.summary`` span, its latency in ``ctxc.summary.duration``."""
    attributes = {"ctxc.session_id": request.session_id, "ctxc.summarizer": summarizer_label(svc),
                  "ctxc.reason": reason, GENAI_CONVERSATION_ID: request.session_id,
                  GENAI_OPERATION_NAME: "chat", GENAI_REQUEST_MODEL: request.model}
    started = time.perf_counter()
    outcome = "failed"
    try:
        with svc.telemetry.span("ctxc.summary", attributes) as span:
            result = asyncbus.summarize(svc.summarizer, request, timeout=summary_wait(svc))
            usage = getattr(result, "usage", None)
            if usage:
                span.set(GENAI_INPUT_TOKENS, int(usage.get("prompt_tokens") or 0))
                span.set(GENAI_OUTPUT_TOKENS, int(usage.get("completion_tokens") or 0))
                record_token_usage(svc.telemetry, request.model, "chat", usage)
        outcome = "ok"
        return result
    finally:
        svc.telemetry.record(SUMMARY_DURATION, (time.perf_counter() - started) * 1000,
                             {"ctxc.summarizer": attributes["ctxc.summarizer"], "outcome": outcome})


def summary_wait(svc: Services) -> float:
    """How long a command thread waits for a summary awaited on the summary loop (ADR
    0042): the summarizer's own timeout ends the call first; this bounds a stalled loop."""
    return svc.settings.summary_timeout_seconds + 30.0


def _check_shrinks(turn: TurnContext, after: Draft, waiting_call: tuple[str, int] | None = None) -> None:
    """Spec §10.4: no orphan tool result, smaller than before, under the threshold."""
    before, threshold = turn.draft, turn.budget.threshold
    orphans = [n for n in after.projection.diagnostics if n.startswith("dropped tool result")]
    if orphans:
        raise SummaryFailed(f"the candidate boundary leaves orphan tool results: {orphans[0]}")
    check_fixed_parts(after.breakdown, threshold)  # e.g. pinned messages alone (issue 16)
    if after.total >= before.total:
        why, details = "", {"tokens_before": before.total, "tokens_after": after.total}
        if waiting_call is not None:  # the cause the host can clear (issue 42)
            why = (f": tool call {waiting_call[0]!r} at seq {waiting_call[1]} is still waiting for its "
                   "result, and the boundary cannot pass it")
            details.update(waiting_tool_call_id=waiting_call[0], waiting_seq=waiting_call[1])
        raise SummaryFailed(
            f"compaction would not shrink the context ({before.total:,} -> {after.total:,} tokens){why}",
            details=details,
        )
    if after.total > threshold:
        raise SummaryFailed(
            f"after compaction the context would still need {after.total:,} tokens, over the "
            f"{threshold:,}-token threshold",
            details={"tokens_after": after.total, "threshold": threshold},
        )


def commit_candidate(svc: Services, candidate: Candidate) -> r.CompactOutcome:
    """Spec §12.1 / DESIGN §4: generation check + append, retried on version conflicts."""
    checkpoint_id = svc.ids.new_id("cp")
    try:
        with svc.telemetry.span("ctxc.commit", {"ctxc.session_id": candidate.session_id}):
            generation, _, _ = mutate(
                svc,
                candidate.session_id,
                lambda s: s.commit_checkpoint(candidate.checkpoint.committed(checkpoint_id, svc.now())),
            )
    except StaleCandidate:
        log.warning(
            "stale compaction candidate discarded",
            extra={
                "session_id": candidate.session_id,
                "reason": candidate.checkpoint.trigger_reason,
                "generation": candidate.checkpoint.generation - 1,
            },
        )
        raise
    checkpoint = replace(candidate.checkpoint, checkpoint_id=checkpoint_id, generation=generation)
    log.info(
        "checkpoint committed",
        extra={
            "session_id": candidate.session_id,
            "checkpoint_id": checkpoint_id,
            "generation": generation,
            "reason": checkpoint.trigger_reason,
            "tokens_before": checkpoint.tokens_before,
            "tokens_after": checkpoint.tokens_after,
            "first_retained_seq": checkpoint.first_retained_seq,
            "degraded": checkpoint.degraded,
        },
    )
    svc.checkpoint_committed()
    report = compaction_report(
        checkpoint.tokens_before,
        checkpoint.tokens_after,
        candidate.kept_turns,
        checkpoint.first_retained_seq,
    )
    outcome = r.CompactOutcome.compacted(checkpoint, kept_turns=candidate.kept_turns, report=report)
    if candidate.summary_usage is not None:
        outcome.summary_usage = candidate.summary_usage
        outcome.summary_cost_usd = summary_cost(svc, candidate.summary_usage)
    return outcome


# ------------------------------------------------------------------ handlers
def compact(cmd: c.Compact, svc: Services) -> r.CompactOutcome:
    refuse_while_turn_runs(svc, cmd.session_id)
    return compact_context(svc, prepare_context(svc, cmd.session_id, model=cmd.model), reason="manual")


def compact_part(
    svc: Services, turn: TurnContext, part: Part, finish: Callable[[Candidate], r.CompactOutcome] | None
) -> r.CompactOutcome:
    """A manual compaction of only ``part``, or a dry run (issue 43), recorded as any."""
    return run_recorded(svc, turn, "manual", lambda: _compact_context(svc, turn, "manual", False, part, finish))


def recall_timeline(cmd: c.RecallTimeline, svc: Services) -> r.TimelineResult:
    row = svc.read_model.session(cmd.session_id) or _missing(cmd.session_id)
    if row.deleted:  # (its entries are summaries: content, no ordinary read; ADR 0072)
        raise SessionDeleted(f"session {cmd.session_id!r} is deleted")
    svc.checkpoint_committed()  # bring the Timeline up to date first (best effort)
    entries = svc.timeline.entries(cmd.session_id, cmd.query, cmd.limit)
    return r.TimelineResult(
        session_id=cmd.session_id,
        entries=[
            r.TimelineEntryResult(
                key=e.key, checkpoint_id=e.checkpoint_id, content=e.content, created_at=e.created_at
            )
            for e in entries
        ],
    )


def _missing(session_id: str) -> NoReturn:
    raise SessionNotFound(f"session {session_id!r} does not exist")
