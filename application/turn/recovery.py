"""``recover_overflow`` (spec §11.3): a provider overflow becomes one rebuilt request
per turn. The window the provider reported becomes history (``WindowLearned``), then
one summary attempt for the turn, else a deterministic whole-turn trim (a degraded
checkpoint). Mid-turn overflows are the host's request-local trim (spec §11.4)."""

from __future__ import annotations

import logging

from context_compaction.domain.errors import (
    OverflowNotRecoverable,
    OverflowRetryExhausted,
    StaleCandidate,
    SummaryFailed,
)
from context_compaction.domain.overflow import parse_overflow

from ..contracts import commands as c
from ..contracts import results as r
from ..compacting.compaction import compact_context
from ..compacting.degraded import degraded_checkpoint
from ..runtime.services import Services, mutate
from ..runtime.turncontext import TurnContext, prepare_context
from .turns import turn_request
from ..state.turnstate import IssuedRequest

log = logging.getLogger("context_compaction.turns")


def recover_overflow(cmd: c.RecoverOverflow, svc: Services) -> r.TurnRequest:
    """Spec §11.3: one recovery per turn, from durable history, before any tool ran."""
    memory = svc.turns
    request = memory.request(cmd.session_id, cmd.request_id)
    if cmd.tool_progress or request.phase == "continuation":
        # Spec §11.4: no formal checkpoint mid-turn, whatever the host says.
        raise OverflowNotRecoverable(
            "tools already ran in this turn: the turn cannot restart from durable history; "
            "trim the request locally and retry the same step once (spec §11.4)",
            details={"request_id": cmd.request_id, "phase": request.phase},
        )
    if not memory.claim_overflow_recovery(request):
        raise OverflowRetryExhausted(
            "this turn already had its one overflow recovery; the request overflowed again",
            details={"request_id": cmd.request_id, "retry_of": request.retry_of},
        )
    warnings = _learn_window(svc, cmd, request)
    # The learned window is in the session now: the context is read after it.
    turn = prepare_context(svc, cmd.session_id, request.inputs, request.model)
    compaction, turn = _summarize_once(svc, turn, request, warnings)
    if compaction is None:
        # Whatever window was read (or none), the refused request was over the real
        # one: the trim cuts below its size (spec §11.3 steps 1, 4).
        compaction = degraded_checkpoint(svc, turn, window_cap=request.estimate or None)
    # A checkpoint was committed: the rebuilt request is read from the stored state.
    turn = prepare_context(svc, cmd.session_id, request.inputs, request.model)
    return turn_request(
        svc, turn, retry_of=request.request_id, compaction=compaction, warnings=warnings
    )


def _learn_window(svc: Services, cmd: c.RecoverOverflow, request: IssuedRequest) -> list[str]:
    """Record the window the provider reported (``WindowLearned``); the warnings."""
    info = parse_overflow(cmd.error_message)
    log.warning(
        "context overflow",
        extra={
            "session_id": cmd.session_id,
            "request_id": cmd.request_id,
            "reported_window": info.window,
            "reported_prompt_tokens": info.prompt_tokens,
            "estimated_tokens": request.estimate,
        },
    )
    if info.window is None:
        return ["the provider's window could not be read from the error; "
                "using the configured window"]
    window = info.window
    provider = svc.catalog.provider_of(request.model)
    mutate(svc, cmd.session_id, lambda s: s.learn_window(
        provider=provider,
        model=request.model,
        window=window,
        prompt_tokens=info.prompt_tokens,
        estimated_tokens=request.estimate or None,
        created_at=svc.now(),
    ))
    return [f"provider reported a {window:,}-token window"]


def _summarize_once(
    svc: Services, turn: TurnContext, request: IssuedRequest, warnings: list[str]
) -> tuple[r.CompactOutcome | None, TurnContext]:
    """The turn's one summary attempt, if it has not been used; None when it was used
    or made nothing. Returns the context to go on with (read again when it went stale)."""
    memory = svc.turns
    if not memory.claim_summary_attempt(turn.session_id, request.turn_key):
        warnings.append("this turn already used its one summary attempt")
        return None, turn
    try:
        compaction = compact_context(svc, turn, reason="overflow", allow_turn_split=True)
    except (SummaryFailed, StaleCandidate) as exc:
        warnings.append(f"overflow summary failed ({exc.code}): {exc.explained()}")
        if isinstance(exc, StaleCandidate):
            turn = prepare_context(svc, turn.session_id, turn.inputs, turn.model)
        return None, turn
    if compaction.status != "compacted":
        memory.release_summary_attempt(turn.session_id, request.turn_key)
        warnings.append("overflow summary found nothing to compact" + compaction.named_cause())
        return None, turn
    return compaction, turn
