"""Background compaction (issue 17, ADR 0038): summarize before the threshold is crossed.

With ``context_compaction.background_ratio`` set, the ``TurnRunner`` starts the summary
on a background thread once a prepared request uses that share of the compaction
threshold. The attempt is an ordinary automatic one: the same cut, summary call and
validation as ``compact_context``, committed through the generation check (messages
appended meanwhile come after its first retained seq and stay; a clear, rewind or
delete moved the generation and makes it ``stale_candidate``), recorded in the attempt
log with reason ``auto`` (so a failure counts for the circuit breaker).

The turn that crosses the threshold then finds a fresh checkpoint and makes no summary
call. If the background summary is still running at that moment, ``prepare_turn``
waits for it (bounded by ``summary_timeout_seconds``) rather than starting a second
one: it started earlier, so it ends sooner than a new call would; if it did not
commit, the turn's own synchronous attempt runs as without background compaction.
"""

from __future__ import annotations

import logging

from context_compaction.domain.cutpoint import NothingToCompact
from context_compaction.domain.errors import ContextCompactionError

from ..contracts import commands as c
from ..contracts import results as r
from .attemptlog import run_recorded
from ..state.background import BackgroundJob, Cancelled
from .breaker import paused
from .compaction import commit_candidate, nothing_to_compact, summarize_prepared
from .prepare import prepare_compaction
from ..runtime.services import Services
from ..runtime.turncontext import TurnContext, decide_usage, prepare_context
from ..state.drafts import inputs_of

log = logging.getLogger("context_compaction.compaction")


def wants_background(svc: Services, request: r.TurnRequest) -> bool:
    """Whether ``request`` (just prepared) is far enough towards the threshold to start a
    background summary: the setting is on, auto compaction is on, no automatic attempt
    ran for this request, and it uses ``background_ratio`` of the threshold or more."""
    ratio = svc.settings.context_compaction.background_ratio
    usage = request.usage
    return (
        ratio is not None
        and usage.auto_compaction_enabled
        and request.retry_of is None
        and request.compaction is None
        and usage.used_tokens >= ratio * usage.compression_threshold_tokens
    )


def start_background_compaction(svc: Services, prepare: c.PrepareTurn, owner: object | None = None) -> bool:
    """Start the background attempt for ``prepare``'s session and inputs; False when
    one is already running for the session in this process (or shutdown began)."""
    job = svc.turns.background.start(
        prepare.session_id, lambda job: _attempt(svc, job, prepare), owner
    )
    return job is not None


def _attempt(svc: Services, job: BackgroundJob, prepare: c.PrepareTurn) -> r.CompactOutcome | None:
    turn = prepare_context(svc, prepare.session_id, inputs_of(prepare), prepare.model)
    ratio = svc.settings.context_compaction.background_ratio or 1.0
    used = decide_usage(svc, turn).used
    if used < ratio * turn.budget.threshold or not turn.budget.enabled:
        return None  # the session moved (a checkpoint, a clear) since the runner looked
    if paused(svc, turn.session_id, turn.records) is not None:
        return None  # the breaker is open: no automatic summary, in the background either
    try:
        outcome = run_recorded(svc, turn, "auto", lambda: _summarize_and_commit(svc, job, turn))
    except ContextCompactionError as exc:
        log.warning(
            "background compaction failed",
            extra={"session_id": turn.session_id, "error_class": exc.code, "reason": "auto"},
        )
        return None
    log.info("background compaction finished",
             extra={"session_id": turn.session_id, "outcome": outcome.status})
    return outcome


def _summarize_and_commit(svc: Services, job: BackgroundJob, turn: TurnContext) -> r.CompactOutcome:
    """``compact_context``'s steps, with the cancellation checked before the commit."""
    # (its cut too: the keep window beside the pins and the checklist's room, or a pinned
    # session fails here for a cut the foreground would not make, feeding the breaker)
    try:
        prepared = prepare_compaction(svc, turn, "auto")
        if isinstance(prepared, NothingToCompact):
            return nothing_to_compact(turn.ctx, "auto", turn.draft.total, prepared)
        candidate = summarize_prepared(svc, prepared)
    except ContextCompactionError:
        if job.cancelled:  # the call was cut short by shutdown: nothing to record
            raise Cancelled from None
        raise
    return job.commit_unless_cancelled(lambda: commit_candidate(svc, candidate))  # type: ignore[no-any-return]
