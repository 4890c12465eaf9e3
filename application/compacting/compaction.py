"""The compaction service (spec §7.3-7.4, §10-§12; DESIGN §4, §9-§10).

``compact_context`` is the only path that creates checkpoints: snapshot (version,
generation) → plan the cut and prepare the attempt once (``prepare.py``: one
``Preparation``, ADR 0087) → one summary call, outside any lock or transaction →
validate the candidate → commit under optimistic concurrency with the generation
check → re-read the projection from the stored state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from context_compaction.domain.budget import check_fixed_parts
from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.costs import Usage
from context_compaction.domain.cutpoint import CutPlan, NothingToCompact
from context_compaction.domain.errors import SessionDeleted, SessionNotFound, StaleCandidate, SummaryFailed
from context_compaction.domain.summary import storable_text

from ..runtime import asyncbus
from ..contracts import commands as c
from ..contracts import results as r
from .attemptlog import run_recorded
from ..history.costs import summary_cost
from ..state.drafts import Draft
from .ledgers import verify_summary
from .prepare import (Part, Preparation, candidate_checkpoint, draft_with, fits_a_summary, no_summary_fits,
                      prepare_compaction, prepare_summary)
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


#: The reasons a host is told: a cause it can clear, or one that a bare "nothing" would hide
#: behind a threshold that keeps being crossed.
_CLEARABLE = frozenset({NothingToCompact.WAITING_CALL, NothingToCompact.SUMMARY_NOT_SMALLER})


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
        report=f"Nothing to compact: {why.value}" if why in _CLEARABLE else "Nothing to compact",
        nothing_reason=why.name.lower(),
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
    prepared = prepare_compaction(svc, turn, reason, allow_turn_split=allow_turn_split, part=part)
    if isinstance(prepared, NothingToCompact):
        return nothing_to_compact(turn.ctx, reason, turn.draft.total, prepared)
    candidate = summarize_prepared(svc, prepared)
    return (finish or (lambda found: commit_candidate(svc, found)))(candidate)


def summarize_candidate(svc: Services, turn: TurnContext, plan: CutPlan, reason: str) -> Candidate:
    """One summary call for a cut planned by the caller (the background summary plans
    the one ``compact_context`` plans, ``prepare_compaction``: this is for any other)."""
    prepared = prepare_summary(svc, turn, plan, reason)
    if not fits_a_summary(prepared):  # (no call that must fail: say why, as ``compact`` does, ADR 0111)
        raise no_summary_fits(prepared)
    return summarize_prepared(svc, prepared)


def summarize_prepared(svc: Services, prepared: Preparation) -> Candidate:
    """One summary call and the §10.4 validation, all read from ``prepared``; raises
    ``SummaryFailed``."""
    turn, plan, count, limits, built = prepared.turn, prepared.plan, prepared.count, prepared.budget, prepared.input
    previous = prepared.previous
    request = SummaryRequest(
        session_id=turn.session_id,
        model=prepared.model,
        prompt=built.prompt,
        source=built.source,
        max_output_tokens=prepared.max_output_tokens,
        previous_provider_state=previous.provider_state if previous else None,
        checklist=built.checklist, count_tokens=count, output_factor=output_factor(svc, turn.draft.encoding),
    )
    result = _summarize(svc, request, prepared.reason, prepared.summarizer)
    summary = storable_text(result.text).strip()
    if not summary:
        raise SummaryFailed("the summarizer returned an empty summary")
    summary_tokens = count(summary)
    if summary_tokens > limits.output_reserve:
        raise SummaryFailed(
            f"the summary has {summary_tokens:,} tokens, over its {limits.output_reserve:,} limit",
            details={"summary_tokens": summary_tokens, "limit": limits.output_reserve},
        )
    verified = verify_summary(
        summary,
        previous=previous.ledger if previous else None,
        covered=plan.summarize,
        last_seq=plan.summarize[-1]["seq"],
        budget_tokens=built.ledger_tokens,
        count=count,
        retained=prepared.retained,
        previous_summary=previous.summary if previous else None,
        tail=prepared.tail,  # (extracted once, by ``prepare_summary``)
    )
    checkpoint = candidate_checkpoint(
        turn,
        summary=verified.text,
        ledger=verified.record,
        first_retained_seq=plan.first_retained_seq,
        reason=prepared.reason,
        provider_kind=result.provider_kind,
        model=result.model,
        degraded=False,
        summary_source=built.source.metadata(),
        provider_state=getattr(result, "provider_state", None),
    )
    after = draft_with(svc, turn, checkpoint)
    _check_shrinks(turn, after, plan.waiting_call)
    usage = getattr(result, "usage", None)
    return Candidate(
        turn.session_id, replace(checkpoint, tokens_after=after.total), plan.kept_turns,
        summary_usage=None if usage is None else {"model": result.model, **Usage.from_record(usage).to_record()},
    )


def _summarize(svc: Services, request: SummaryRequest, reason: str, summarizer: str) -> Any:
    """The summary call in a ``ctxc.summary`` span, its latency in ``ctxc.summary.duration``."""
    attributes = {"ctxc.session_id": request.session_id, "ctxc.summarizer": summarizer,
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


def output_factor(svc: Services, encoding: str) -> float:
    """The safety factor ``encoding`` counts with (``SummaryRequest.output_factor``); 1.0
    for a counter that names none."""
    factor = getattr(svc.tokens, "safety_factor", None)
    return float(factor(encoding)) if factor is not None else 1.0


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
