"""Automatic compaction at a turn's start, as one pipeline (issue 38, ADR 0079).

``prepare_turn`` calls :func:`auto_compact` with one ``if`` (over the threshold at the
start of a turn, not a rebuilt request), and the steps below run top to bottom:

1. **decide** — a background summary of this session still running ends sooner than a
   new call: wait for it and continue from its checkpoint (ADR 0038); then, still over
   the threshold, claim the turn's one summary attempt (spec §11.3 step 3).
2. **plan** — stage 1 clears old tool results (issue 17, ADR 0034); enough freed, no
   summary is asked for. The breaker (a function of the attempt log) may pause
   summaries.
3. **compact** — the summary attempt: ``compact_context`` (cut, summary call,
   validation, commit with the generation check, attempt log).
4. **fall back** — still over the hard window with no summary: a degraded checkpoint
   (spec §11.2, §17).
5. **report** — :class:`AutoCompaction`: the context to build the request from, its
   usage, the outcome and the warnings.

A step that changes the session hands the next one the context after the change
(``_after``); the caller never reads the session again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from context_compaction.domain.errors import (InvalidCommand, OverflowRetryExhausted, StaleCandidate, StorageError,
                                              SummaryFailed)

from ..compacting.breaker import paused
from ..compacting.compaction import compact_context
from ..compacting.degraded import degraded_checkpoint
from ..compacting.staged import Cleared, clear_tool_results
from ..contracts import results as r
from ..runtime.services import Services
from ..runtime.turncontext import TurnContext, UsageDecision, decide_usage, prepare_context

log = logging.getLogger("context_compaction.turns")


@dataclass
class AutoCompaction:
    """What the pipeline hands back to ``prepare_turn``."""

    #: The context to build the request from: the one given, or the one after the
    #: checkpoint (or clearing) this pipeline committed.
    turn: TurnContext
    #: The used-token figure the request is budgeted on (THE figure, ``decide_usage``).
    usage: UsageDecision
    #: What was done: a compaction, a clearing, a degraded checkpoint, a background
    #: summary that landed; None when nothing was.
    outcome: r.CompactOutcome | None = None
    #: Why the request goes out larger than the threshold, for the host.
    warnings: list[str] = field(default_factory=list)


def auto_compact(svc: Services, turn: TurnContext, usage: UsageDecision, turn_key: int) -> AutoCompaction:
    """Run the pipeline for ``turn``, which is over the threshold at a turn's start."""
    # 1. decide
    turn, usage, settled = _settle_background(svc, turn, usage)
    if not turn.budget.should_compact(usage.used) or not svc.turns.claim_summary_attempt(
        turn.session_id, turn_key
    ):
        return AutoCompaction(turn, usage, settled)
    # 2. plan: stage 1, then the breaker
    cleared = _clear_tool_results(svc, turn)
    if cleared is not None:
        if cleared.enough:  # no summary call: the turn keeps its one summary attempt
            svc.turns.release_summary_attempt(turn.session_id, turn_key)
            return _report(svc, cleared.turn, usage, cleared.outcome, [])
        turn, usage = cleared.turn, cleared.usage
    pause = paused(svc, turn.session_id, turn.records)
    if pause is not None:  # no summary is asked for: the turn keeps its one attempt
        svc.turns.release_summary_attempt(turn.session_id, turn_key)
        notes = [f"auto compaction paused after {pause.failures_in_a_row} failed attempts in a row "
                 f"({pause.turns_left} more turns; /compact still works)"]
    else:
        # 3. compact
        done, notes, turn = _summarize(svc, turn, turn_key, cleared)
        if done is not None:
            return _report(svc, turn, usage, done, [])
    # 4. fall back
    budget = turn.budget
    if usage.used <= budget.window:
        still = "continuing with the previous context (still under the hard window)"
        return _report(svc, turn, usage, cleared.outcome if cleared else None, [*notes, still])
    # Already over the hard window before sending (smaller model, new limit): do not send a
    # request that must fail. When the provider's count put it over, the trim works in our
    # units scaled to that count.
    estimate = turn.draft.total
    cap = budget.window * estimate // usage.used if usage.used > estimate else None
    try:
        degraded = with_clearing(degraded_checkpoint(svc, turn, window_cap=cap, must_fit=True), cleared)
    except OverflowRetryExhausted as exc:  # (a trim that cannot fit: nothing dropped, the turn goes on)
        notes.append(f"over the hard window and no trim fits it: {exc.explained()}")
        return _report(svc, turn, usage, cleared.outcome if cleared else None, notes)
    notes.append("over the hard window: committed a degraded checkpoint before sending")
    return _report(svc, _after(svc, turn), usage, degraded, notes)


# ------------------------------------------------------------------ the steps
def _settle_background(
    svc: Services, turn: TurnContext, usage: UsageDecision
) -> tuple[TurnContext, UsageDecision, r.CompactOutcome | None]:
    """Wait for the session's running background summary (if any); when it committed,
    continue from the context after it."""
    job = svc.turns.background.running(turn.session_id)
    if job is None:
        return turn, usage, None
    log.info("waiting for the background summary", extra={"session_id": turn.session_id})
    job.done.wait(svc.settings.summary_timeout_seconds)
    outcome = job.result if isinstance(job.result, r.CompactOutcome) else None
    if outcome is None or outcome.status != "compacted":
        return turn, usage, None
    after = _after(svc, turn)
    return after, decide_usage(svc, after), outcome


def _clear_tool_results(svc: Services, turn: TurnContext) -> Cleared | None:
    """Stage 1; a clearing that cannot be recorded leaves the summary to do the work, as
    without clearing."""
    try:
        return clear_tool_results(svc, turn)
    except (StorageError, InvalidCommand) as exc:
        log.warning(
            "tool-result clearing failed",
            extra={"session_id": turn.session_id, "error_class": exc.code, "reason": "auto"},
        )
        return None


def _summarize(
    svc: Services, turn: TurnContext, turn_key: int, cleared: Cleared | None
) -> tuple[r.CompactOutcome | None, list[str], TurnContext]:
    """The automatic summary attempt: its outcome when a checkpoint was committed (with
    the context after it), else None, the warnings and the context to continue with."""
    try:
        outcome = with_clearing(compact_context(svc, turn, reason="auto"), cleared)
    except (SummaryFailed, StaleCandidate, StorageError) as exc:
        log.warning(
            "auto compaction failed",
            extra={"session_id": turn.session_id, "error_class": exc.code, "reason": "auto"},
        )
        if isinstance(exc, StaleCandidate):
            turn = _after(svc, turn)
        return None, [f"auto compaction failed ({exc.code}): {exc.explained()}"], turn
    if outcome.status == "compacted":
        return outcome, [], _after(svc, turn)
    # No summary was asked for: the turn keeps its one attempt (spec §11.3 step 3).
    svc.turns.release_summary_attempt(turn.session_id, turn_key)
    # (a cause the host can clear, or one that keeps every turn over the threshold: named)
    return None, ["auto compaction found nothing to compact" + outcome.named_cause()], turn


def _after(svc: Services, turn: TurnContext) -> TurnContext:
    """The context after a step changed the session: read once, here, for the next step."""
    return prepare_context(svc, turn.session_id, turn.inputs, turn.model)


def _report(
    svc: Services, turn: TurnContext, usage: UsageDecision, outcome: r.CompactOutcome | None,
    warnings: list[str],
) -> AutoCompaction:
    """A committed checkpoint changes the figure the request is budgeted on."""
    if outcome is not None and outcome.status == "compacted":
        usage = decide_usage(svc, turn)
    return AutoCompaction(turn, usage, outcome, warnings)


def with_clearing(outcome: r.CompactOutcome, cleared: Cleared | None) -> r.CompactOutcome:
    """A summary's outcome that also reports the clearing done before it."""
    if cleared is None:
        return outcome
    return outcome.model_copy(
        update={
            "tool_results_cleared": cleared.outcome.tool_results_cleared,
            "tokens_before": cleared.outcome.tokens_before,
            "report": cleared.outcome.report + "\n" + outcome.report,
        }
    )
