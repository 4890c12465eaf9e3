"""Every compaction attempt on record (issue 16, ADR 0032).

``run_recorded`` wraps one attempt — manual, auto or overflow, summarized or degraded —
and appends what it did to the session's attempt log: its outcome, reason,
summarizer, model, prompt version, duration, token figures, ledger report and error
code. A failed attempt is recorded and its error raised as before; a log that cannot
be written is logged and never turns the attempt's result into a failure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import NamedTuple

from context_compaction.domain.attempts import Attempt
from context_compaction.domain.errors import (
    ContextCompactionError,
    StaleCandidate,
    SummaryFailed,
)
from context_compaction.domain.summary import PROMPT_VERSION

from ..contracts import commands as c
from ..history import costs
from ..contracts import results as r
from ..history.queries import readable_row
from ..runtime.services import Services
from ..runtime.telemetry import COMPACTIONS, TOKENS_AFTER, TOKENS_BEFORE
from ..runtime.turncontext import TurnContext
from .prepare import summarizer_name

log = logging.getLogger("context_compaction.attempts")


class _Ended(NamedTuple):
    """How one compaction attempt ended: what the log and the metrics record."""

    reason: str
    started: float
    result: r.CompactOutcome | None
    error: ContextCompactionError | None
    degraded: bool


def _outcome(result: r.CompactOutcome | None, error: ContextCompactionError | None, degraded: bool) -> str:
    if isinstance(error, StaleCandidate):
        return "stale_candidate"
    if error is not None:
        # A summary that failed, or a trim / commit that could not be made: the attempt
        # failed; ``error_code`` says how.
        return "summary_failed" if isinstance(error, SummaryFailed) or not degraded else "nothing_to_compact"
    if result is not None and result.status == "candidate":
        return "candidate"
    if result is None or result.status != "compacted":
        return "nothing_to_compact"
    return "degraded" if result.degraded else "compacted"


def _log_attempt(svc: Services, turn: TurnContext, ended: _Ended) -> None:
    reason, started, result, error, degraded = ended
    attempts = svc.attempts
    if attempts is None:
        return
    try:
        outcome = _outcome(result, error, degraded)
        stage = getattr(result, "stage", None) or (
            "degraded" if degraded else None if outcome == "nothing_to_compact" else "summarized"
        )
        before = turn.draft.total
        attempt = Attempt(
            attempt_id=svc.ids.new_id("att"),
            at=svc.now(),
            reason=reason,
            outcome=outcome,
            stage=stage,
            summarizer="deterministic" if degraded else summarizer_name(svc),
            model=turn.model if degraded else svc.settings.summary_model_for(turn.model),
            prompt_version=None if degraded else PROMPT_VERSION,
            duration_ms=int((time.perf_counter() - started) * 1000),
            tokens_before=result.tokens_before if result else before,
            tokens_after=result.tokens_after if result else before,
            ledger=result.ledger if result else None,
            error_code=error.code if error else None,
            at_seq=turn.ctx.session.next_seq - 1,
            summary_usage=getattr(result, "summary_usage", None),
            candidate_id=getattr(result, "candidate_id", None),
            nothing_reason=getattr(result, "nothing_reason", None),
            checkpoint_id=result.checkpoint_id if result and outcome in ("compacted", "degraded") else None,
        )
        attempts.record(turn.session_id, attempt)
    except Exception as exc:  # noqa: BLE001 - the log must never fail the attempt
        log.warning(
            "compaction attempt not recorded",
            extra={"session_id": turn.session_id, "reason": reason, "error_class": type(exc).__name__},
        )


def run_recorded(
    svc: Services, turn: TurnContext, reason: str, attempt: Callable[[], r.CompactOutcome], *, degraded: bool = False
) -> r.CompactOutcome:
    """``attempt()``, recorded in the session's attempt log whatever it ends in."""
    started = time.perf_counter()
    try:
        outcome = attempt()
    except ContextCompactionError as exc:
        _ended(svc, turn, _Ended(reason, started, None, exc, degraded))
        raise
    _ended(svc, turn, _Ended(reason, started, outcome, None, degraded))
    return outcome


def _ended(svc: Services, turn: TurnContext, ended: _Ended) -> None:
    _log_attempt(svc, turn, ended)
    _measure(svc, turn, ended)


def _measure(svc: Services, turn: TurnContext, ended: _Ended) -> None:
    """The compaction metrics and a log line with the attempt's duration (issue 15)."""
    reason, started, result, error, degraded = ended
    outcome = _outcome(result, error, degraded)
    stage = getattr(result, "stage", None) or ("degraded" if degraded else "none")
    before = result.tokens_before if result else turn.draft.total
    after = result.tokens_after if result else before
    attributes = {"reason": reason, "outcome": outcome, "stage": str(stage)}
    svc.telemetry.add(COMPACTIONS, 1, attributes)
    if outcome in ("compacted", "degraded"):
        svc.telemetry.record(TOKENS_BEFORE, before, attributes)
        svc.telemetry.record(TOKENS_AFTER, after, attributes)
    log.info("compaction attempt finished", extra={
        "session_id": turn.session_id, **attributes, "tokens_before": before, "tokens_after": after,
        "error_code": error.code if error else None,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    })


# ------------------------------------------------------------------ query
def list_compaction_attempts(cmd: c.ListCompactionAttempts, svc: Services) -> r.CompactionAttemptsResult:
    row = readable_row(svc, cmd.session_id, cmd.include_deleted)
    found = svc.attempts.attempts(cmd.session_id, cmd.limit) if svc.attempts else []
    nets = costs.compaction_nets(svc, row.model, costs.entries(svc, cmd.session_id)) if found else {}
    return r.CompactionAttemptsResult(
        session_id=cmd.session_id, attempts=[_listed(svc, a, nets.get(a.attempt_id)) for a in found]
    )


def _listed(svc: Services, attempt: Attempt, net: r.CompactionNet | None) -> r.AttemptInfo:
    """CONTRACT.md's fields (and the prompt version); not ``at_seq``, the breaker's."""
    record = attempt.to_record()
    record.pop("at_seq", None)
    record["summary_cost_usd"] = costs.summary_cost(svc, attempt.summary_usage)
    record["net"] = net
    return r.AttemptInfo.model_validate(record)
