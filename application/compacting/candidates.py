"""Preview, approve, partial (issue 43, ADR 0076).

``compact {dry_run: true}`` makes the candidate as ``compact`` would (one summary call,
the same checks) and keeps it in the session's attempt stream under a ``candidate_id``
instead of committing it. ``commit_candidate`` commits that candidate through the same
generation check as any compaction: appends do not move the generation (the candidate's
tail then just holds the new messages), a clear, a rewind or another compaction does,
and the candidate is ``stale_candidate``. ``compact {up_to_seq}`` / ``{fraction}``
summarize only the oldest whole turns (domain/partial.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.errors import InvalidCommand, StorageError
from context_compaction.domain.cutpoint import group_turns
from context_compaction.domain.forecast import forecast
from context_compaction.domain.partial import check_up_to_seq

from ..contracts import commands as c
from ..contracts import results as r
from .attemptlog import run_recorded
from .compaction import Candidate, commit_candidate, compact_part, compaction_report
from .compaction import compact as compact_whole
from ..history.costs import net_result, summary_cost
from .forecasting import token_count, turn_growth
from .prepare import Part, draft_with, record_counts
from ..runtime.services import Services
from ..runtime.turncontext import TurnContext, prepare_context
from ..runtime.turnlease import refuse_while_turn_runs


def compact(cmd: c.Compact, svc: Services) -> r.CompactOutcome:
    if not (cmd.dry_run or cmd.up_to_seq is not None or cmd.fraction is not None):
        return compact_whole(cmd, svc)
    refuse_while_turn_runs(svc, cmd.session_id)
    turn = prepare_context(svc, cmd.session_id, model=cmd.model)
    if cmd.up_to_seq is not None:  # before the attempt: bad input is no attempt
        check_up_to_seq(turn.records, cmd.up_to_seq,
                        turn.ctx.checkpoint.first_retained_seq if turn.ctx.checkpoint else None)
    part = Part(up_to_seq=cmd.up_to_seq, fraction=cmd.fraction)
    return compact_part(svc, turn, part, (lambda found: prepared(svc, turn, found)) if cmd.dry_run else None)


def prepared(svc: Services, turn: TurnContext, candidate: Candidate) -> r.CompactOutcome:
    """Keep ``candidate`` for ``commit_candidate``; what it would do, with its cost."""
    keep = getattr(svc.attempts, "record_candidate", None)
    if keep is None:
        raise StorageError("this store keeps no compaction candidates")
    candidate_id = svc.ids.new_id("cand")
    cp = candidate.checkpoint
    keep(candidate.session_id, {
        "candidate_id": candidate_id, "checkpoint": cp.to_record(), "kept_turns": candidate.kept_turns,
    })
    # Forecast: one request per turn until the compacted context grows back to the trigger.
    ahead = forecast(turn_growth(turn.records, token_count(turn)), used=cp.tokens_after, threshold=turn.budget.threshold,
                     window=turn.budget.window)
    requests = ahead.turns_to_threshold or 0
    outcome = r.CompactOutcome(
        status="candidate",
        candidate_id=candidate_id,
        generation=turn.ctx.session.context_generation,
        tokens_before=cp.tokens_before,
        tokens_after=cp.tokens_after,
        first_retained_seq=cp.first_retained_seq,
        kept_turns=candidate.kept_turns,
        trigger_reason=cp.trigger_reason,
        report="Candidate (not committed): " + compaction_report(
            cp.tokens_before, cp.tokens_after, candidate.kept_turns, cp.first_retained_seq),
        summary_source=dict(cp.summary_source),
        provider_kind=cp.provider_kind,
        ledger=cp.ledger_report,
        summary=cp.summary,
        summary_usage=candidate.summary_usage,
        summary_cost_usd=summary_cost(svc, candidate.summary_usage),
        net=net_result(svc, turn.model, cp.tokens_before, cp.tokens_after, requests,
                       summary_usage=candidate.summary_usage, measured=False),
    )
    return outcome


def commit_prepared(cmd: c.CommitCandidate, svc: Services) -> r.CompactOutcome:
    refuse_while_turn_runs(svc, cmd.session_id)
    turn = prepare_context(svc, cmd.session_id)
    lookup = getattr(svc.attempts, "candidate", None)
    found: dict[str, Any] | None = lookup(cmd.session_id, cmd.candidate_id) if lookup else None
    if found is None:
        raise InvalidCommand(
            f"no candidate {cmd.candidate_id!r} for session {cmd.session_id!r} (make one with "
            "compact {dry_run: true})"
        )
    # Its summary call was recorded (and priced) with the dry run's attempt. Its figures
    # are the context's now, as any compaction's: messages appended since the dry run
    # are in both (a generation that moved fails the commit before they matter).
    checkpoint = Checkpoint.from_record(found["checkpoint"])
    checkpoint = replace(checkpoint, tokens_before=turn.draft.total,
                         tokens_after=draft_with(svc, turn, checkpoint).total)
    records, boundary = turn.records, checkpoint.first_retained_seq
    kept = sum(1 for t in group_turns(records, record_counts(turn)) if records[t.start]["seq"] >= boundary)
    candidate = Candidate(cmd.session_id, checkpoint, kept)
    return run_recorded(svc, turn, "manual", lambda: _committed(svc, candidate, cmd.candidate_id))


def _committed(svc: Services, candidate: Candidate, candidate_id: str) -> r.CompactOutcome:
    outcome = commit_candidate(svc, candidate)
    # Its attempt names the candidate: the balance is netted with the dry run's summary call.
    outcome.candidate_id = candidate_id
    return outcome
